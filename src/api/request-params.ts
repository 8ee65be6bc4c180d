/** A request's parameters, checked: the query, the batch it reads, the tree and the leaf id. */
import { isPruned } from "../storage/prune-info.js";
import { storeProfile } from "../inspect/inspect.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { TreeSpec } from "../model/profile.js";
import { ApiError } from "./api-error.js";

const TREE_NAMES = ["vault", "order", "position", "rollup_vault"] as const;
/** The longest decimal id of any tree (2^251 has 76 digits). */
const MAX_ID_DIGITS = 80;

/** The query: `batch` where the route takes it, nothing else. */
export function parseQuery(qs: string, takesBatch: boolean): { batch?: string } {
  const out: { batch?: string } = {};
  if (qs === "") return out;
  for (const [k, v] of new URLSearchParams(qs)) {
    if (k !== "batch" || !takesBatch)
      throw new ApiError(400, `unknown query parameter ${JSON.stringify(k.slice(0, 40))}`, k.slice(0, 40));
    if (out.batch !== undefined) throw new ApiError(400, "batch is given twice", "batch");
    out.batch = v;
  }
  return out;
}

/**
 * The batch an answer reads: `batch` (signed, stored, not pruned), else the batch the exchange
 * froze at, else the latest signed.
 */
export async function signedBatch(view: LevelStore, batchText: string | undefined): Promise<BatchRecord> {
  const signed = (await view.getCursor())?.last_accepted_batch_id;
  if (signed === undefined || signed < 0) throw new ApiError(404, "no batch is signed yet");
  let id = (await view.onchain.frozenBatchId()) ?? signed;
  if (batchText !== undefined) {
    if (!/^(0|[1-9][0-9]{0,15})$/.test(batchText) || !Number.isSafeInteger(Number(batchText)))
      throw new ApiError(
        400,
        `batch ${JSON.stringify(batchText.slice(0, 40))} is not a non-negative decimal integer`,
        "batch",
      );
    id = Number(batchText);
    if (id > signed)
      throw new ApiError(404, `batch ${id} is not signed (the latest signed batch is ${signed})`, "batch");
  }
  const record = await view.getBatch(id);
  if (!record) throw new ApiError(404, `batch ${id} is not in this member's store`, "batch");
  const prune = await view.batches.pruneInfo();
  if (isPruned(prune, id))
    throw new ApiError(
      404,
      `batch ${id} was pruned (its trees are no longer kept; kept: ${prune!.kept.join(", ")})`,
      "batch",
    );
  return record;
}

/** The store's tree named `name`. */
export async function treeOf(view: LevelStore, name: string): Promise<TreeSpec> {
  const { trees } = await storeProfile(view);
  const spec = (TREE_NAMES as readonly string[]).includes(name)
    ? trees.find((t) => t.name === name)
    : undefined;
  if (!spec)
    throw new ApiError(
      404,
      `no tree ${JSON.stringify(name.slice(0, 40))} (trees: ${trees.map((t) => t.name).join(", ")})`,
      "tree",
    );
  return spec;
}

/** A leaf id of the tree: decimal, below 2^height. */
export function leafId(text: string, spec: TreeSpec): string {
  if (text.length > MAX_ID_DIGITS || !/^(0|[1-9][0-9]*)$/.test(text))
    throw new ApiError(
      400,
      `id ${JSON.stringify(text.slice(0, 40))} is not a non-negative decimal integer`,
      "id",
    );
  if (BigInt(text) >= 1n << BigInt(spec.height))
    throw new ApiError(
      400,
      `id ${text} is out of range: the ${spec.name} tree's ids are below 2^${spec.height}`,
      "id",
    );
  return text;
}
