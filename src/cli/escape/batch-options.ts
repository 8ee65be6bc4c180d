import { parseBatchId } from "../store-options.js";

/** What the escape commands' --batch defaults to (escape/common.ts, resolveBatch). */
export const DEFAULT_BATCH_HELP =
  "batch id (default: the frozen batch once the exchange is frozen, else the newest verified: accepted, or verified in shadow mode)";

/** An optional --batch. */
export function batchId(v: string | undefined): number | undefined {
  return v === undefined ? undefined : parseBatchId(v);
}

/** An optional comma-separated list of batch ids. */
export function batchList(v: string | undefined): number[] | undefined {
  return v === undefined ? undefined : v.split(",").map((s) => parseBatchId(s.trim()));
}
