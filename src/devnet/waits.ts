/** Waiting for the devnet's chain: a batch to exist, a batch to reach its quorum. */
import type { Approvals, QuorumState } from "./approvals.js";
import type { Batcher } from "./batcher.js";
import type { BatchView, ChainView } from "./chain.js";

const DEFAULT_TIMEOUT_MS = 30_000;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

/** Batch `id`, once it exists; a replayed chain (no batcher) has all the batches it will have. */
export function waitForBatch(
  chain: ChainView,
  batcher: Batcher<unknown> | undefined,
  id: number,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<BatchView> {
  const existing = chain.batch(id);
  if (existing) return Promise.resolve(existing);
  if (!batcher) return Promise.reject(new Error(`batch ${id} is not in the replayed chain`));
  const p = new Promise<BatchView>((resolve) => {
    const on = (batch: BatchView): void => {
      if (batch.batchId >= id) {
        batcher.off("batch", on);
        resolve(chain.batch(id)!);
      }
    };
    batcher.on("batch", on);
  });
  return withTimeout(p, timeoutMs, `batch ${id}`);
}

/** The quorum state of batch `id`, once the batch exists and has its quorum, within one time-out. */
export async function waitForQuorum(
  chain: ChainView,
  batcher: Batcher<unknown> | undefined,
  approvals: Approvals,
  id: number,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<QuorumState> {
  const start = Date.now();
  await waitForBatch(chain, batcher, id, timeoutMs);
  await withTimeout(
    approvals.wait(id),
    Math.max(1, timeoutMs - (Date.now() - start)),
    `quorum on batch ${id}`,
  );
  return approvals.state(id);
}
