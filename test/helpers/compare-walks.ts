import { expect } from "vitest";
import { bigintToBytes32 } from "../../src/util/bytes.js";
import type { NodeWrites } from "../../src/storage/records/node-writes.js";
import { chooseTreeWalk, type TreeWalk } from "../../src/verifier/trees/update/tree-walk.js";
import { hex, RecordingStore } from "./recording-store.js";

export type Walk = "js" | "native";

/**
 * One update's outcome in a comparable form: root and its record's gen, records written and
 * `remember` calls, sorted.
 */
export interface WalkStep {
  root: string;
  rootBytes: Uint8Array;
  rootGen: number;
  out: NodeWrites;
  written: string[];
  remembered: string[];
}

/**
 * A tree update of leaf ids to values (0 deletes) from `root` (its record written by batch
 * `rootGen`), its new records written by batch `batchGen`, with the given walk.
 */
export type TreeUpdate = (
  store: RecordingStore,
  root: Uint8Array,
  rootGen: number,
  batchGen: number,
  leaves: Map<bigint, Uint8Array>,
  walk: TreeWalk,
) => Promise<{ root: Uint8Array; rootGen: number; newNodes: NodeWrites }>;

/** The walk a test names: the native one (an error without the addon) or the JavaScript one. */
export const walkOf = (walk: Walk): TreeWalk => (walk === "native" ? chooseTreeWalk("native") : null);

/** Runs `update` with the given walk and records what it wrote and remembered. */
export async function updateWith(
  walk: Walk,
  update: TreeUpdate,
  store: RecordingStore,
  root: Uint8Array,
  rootGen: number,
  batchGen: number,
  changes: Map<bigint, bigint>,
): Promise<WalkStep> {
  store.remembered = [];
  const leaves = new Map([...changes].map(([id, v]) => [id, bigintToBytes32(v)]));
  const r = await update(store, root, rootGen, batchGen, leaves, walkOf(walk));
  return {
    root: hex(r.root),
    rootBytes: r.root,
    rootGen: r.rootGen,
    out: r.newNodes,
    written: [...r.newNodes].map((w) => `${hex(w.hash)} ${hex(w.record)}`).sort(),
    remembered: [...store.remembered].sort(),
  };
}

/**
 * Runs the same batches through both walks, each on a store of its own, and checks that they write
 * and remember the same records and reach the same roots, with the same gens (batch i + 1 writes
 * step i's records). Returns the leaves' final state and root (for a check against a naive
 * recomputation). `nextBatch` draws a batch from the state so far.
 */
export async function compareWalks(
  update: TreeUpdate,
  emptyRoot: Uint8Array,
  steps: number,
  nextBatch: (step: number, state: ReadonlyMap<bigint, bigint>) => Map<bigint, bigint>,
): Promise<{ state: Map<bigint, bigint>; root: Uint8Array }> {
  const stores = { js: new RecordingStore(), native: new RecordingStore() };
  const roots = { js: emptyRoot, native: emptyRoot };
  const gens = { js: 0, native: 0 };
  const state = new Map<bigint, bigint>();
  for (let step = 0; step < steps; step++) {
    const changes = nextBatch(step, state);
    for (const [id, v] of changes) state.set(id, v);
    const batchGen = step + 1;
    const a = await updateWith("js", update, stores.js, roots.js, gens.js, batchGen, changes);
    const b = await updateWith("native", update, stores.native, roots.native, gens.native, batchGen, changes);
    expect(b.root, `step ${step}`).toBe(a.root);
    expect(b.rootGen, `step ${step}: root gen`).toBe(a.rootGen);
    expect(b.written, `step ${step}: new records`).toEqual(a.written);
    expect(b.remembered, `step ${step}: remembered nodes`).toEqual(a.remembered);
    stores.js.memory.putNodes(a.out);
    stores.native.memory.putNodes(b.out);
    roots.js = a.rootBytes;
    roots.native = b.rootBytes;
    gens.js = a.rootGen;
    gens.native = b.rootGen;
  }
  return { state, root: roots.native };
}

/**
 * Random batches: the first of 4n changes, then 1..n, new ids from `randomId` and existing leaves
 * overwritten or deleted (set to 0).
 */
export function randomBatches(rand: () => number, n: number, randomId: () => bigint) {
  return (step: number, state: ReadonlyMap<bigint, bigint>): Map<bigint, bigint> => {
    const changes = new Map<bigint, bigint>();
    const existing = [...state.keys()];
    const size = step === 0 ? n * 4 : 1 + Math.floor(rand() * n);
    while (changes.size < size) {
      const id =
        rand() < 0.35 && existing.length > 0 ? existing[Math.floor(rand() * existing.length)]! : randomId();
      changes.set(id, rand() < 0.3 && step > 0 ? 0n : BigInt(1 + Math.floor(rand() * 1e9)));
    }
    return changes;
  };
}
