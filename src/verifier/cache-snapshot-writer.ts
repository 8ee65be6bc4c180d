import type { Logger } from "../logging.js";
import type { LevelStore } from "../storage/level-store.js";
import type { TopNodeCache } from "./trees/cache/node-cache.js";
import { writeCacheSnapshot } from "./trees/cache/cache-snapshot.js";

/**
 * When the daemon saves its node cache (cache-snapshot.ts): once after the background warm-up
 * walked the trees, so that a crash later still leaves a snapshot, and at a clean stop. Only a warm
 * cache is saved. Writes run beside the batches, a chunk at a time, never awaited by one.
 */
export class CacheSnapshotWriter {
  private warm = false;
  private stopped = false;
  private running: { readonly done: Promise<void>; readonly abort: AbortController } | undefined;

  constructor(
    private readonly cache: TopNodeCache,
    private readonly store: Pick<LevelStore, "getBatch" | "lastBatchId">,
    private readonly trees: readonly string[],
    readonly file: string,
    private readonly log: Pick<Logger, "info" | "warn">,
  ) {}

  /** The cache holds the trees' top levels (its warm-up finished): from now on it is worth saving. */
  markWarm(): void {
    this.warm = true;
  }

  /** Starts a write unless one runs or the cache is not warm; its failure is logged. */
  writeInBackground(): void {
    if (this.stopped || !this.warm || this.running || !this.cache.canSnapshot) return;
    const abort = new AbortController();
    const done = this.write(abort.signal)
      .catch((err: unknown) => {
        if (!abort.signal.aborted) this.log.warn({ err }, "node cache snapshot not written");
      })
      .finally(() => (this.running = undefined));
    this.running = { done, abort };
  }

  /** The write running in the background, if any (settles, never rejects). */
  get pending(): Promise<void> | undefined {
    return this.running?.done;
  }

  /**
   * At a clean stop, once no batch runs and before the store closes: a background write still
   * running is abandoned (its partial file removed), then a warm cache is saved, awaited.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.running) {
      this.running.abort.abort();
      await this.running.done;
    }
    if (!this.warm || !this.cache.canSnapshot) return;
    await this.write(undefined).catch((err: unknown) =>
      this.log.warn({ err }, "node cache snapshot not written"),
    );
  }

  private async write(signal: AbortSignal | undefined): Promise<void> {
    const started = performance.now();
    const batchId = await this.store.lastBatchId();
    const record = batchId === undefined ? undefined : await this.store.getBatch(batchId);
    if (!record) return;
    const { bytes, nodes } = await writeCacheSnapshot(
      this.cache,
      this.file,
      { batchId: record.batch_id, roots: record.roots, trees: this.trees },
      { signal },
    );
    this.log.info(
      { batch_id: record.batch_id, nodes, bytes, ms: Math.round(performance.now() - started) },
      "node cache snapshot written",
    );
  }
}
