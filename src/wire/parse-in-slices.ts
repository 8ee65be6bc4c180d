import { setImmediate as nextTurn } from "node:timers/promises";
import type { Profile, TreeSpec } from "../model/profile.js";
import type { StateUpdate } from "../model/state-update.js";
import { isPlainObject } from "./fields.js";
import { parseStateUpdate, updateTrees } from "./parse-update.js";

/** Leaves read per turn of the event loop (a few milliseconds of BigInt parsing). */
const SLICE_LEAVES = 1000;

/**
 * parseStateUpdate, a slice of leaves per turn of the event loop: tens of thousands of leaves
 * would hold it for as long as they take. Every leaf is read on its own (its id is its key, its
 * checks concern it alone), so the update is read first without its large leaf maps, then each map
 * slice by slice through the same function, and the slices' leaves are put together.
 */
export async function parseInSlices(
  raw: Record<string, unknown>,
  profile: Profile,
  batchId: number,
  validateRollup: boolean | undefined,
): Promise<StateUpdate> {
  const skeleton: Record<string, unknown> = { ...raw };
  const sliced: [string, TreeSpec, Record<string, unknown>][] = [];
  for (const { spec, leavesKey: key } of updateTrees(profile, { validateRollup })) {
    const leaves = raw[key];
    if (!isPlainObject(leaves)) continue; // refused by the parse of the skeleton, as it is
    skeleton[key] = {};
    sliced.push([key, spec, leaves]);
  }
  const update = parseStateUpdate(skeleton, profile, batchId, { validateRollup });
  for (const [key, spec, leaves] of sliced) {
    const into = update.changes[spec.name]!;
    const ids = Object.keys(leaves);
    for (let i = 0; i < ids.length; i += SLICE_LEAVES) {
      if (i > 0 || ids.length > SLICE_LEAVES) await nextTurn();
      const part: Record<string, unknown> = {};
      for (const id of ids.slice(i, i + SLICE_LEAVES)) part[id] = leaves[id];
      const slice = parseStateUpdate({ ...skeleton, [key]: part }, profile, batchId, { validateRollup });
      for (const [id, leaf] of slice.changes[spec.name]!) into.set(id, leaf);
    }
  }
  return update;
}
