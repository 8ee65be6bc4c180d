import type { NodeWrites } from "./records/node-writes.js";
import { TreeKind } from "./keys.js";
import type { Db } from "./level-db.js";
import { batchPuts, putSorted, type BatchPuts } from "./sorted-puts.js";

/**
 * One atomic write being assembled in a chained batch (which copies each key and value when it is
 * put). A verification puts each tree's records as soon as that tree is done, while the others
 * still hash: the put loop then mostly runs while the main thread would wait anyway. Records are
 * put in runs, each run in key order, a slice per turn of the event loop (sorted-puts.ts), one run
 * after the other. Nothing reaches the store before the commit (batch-commits.ts) writes the
 * batch, once every run is put (`allPut`); `abandon` drops it.
 */
export class PendingCommit {
  private readonly puts: BatchPuts;
  /** How many records of the lists were handed to the runs so far. */
  private nodesPut = 0;
  private leavesPut = 0;
  private done = false;
  /** The runs handed over so far, one after the other. */
  private runs: Promise<void> = Promise.resolve();

  /** `gen`: the id of the batch whose records these are (their keys lead with it). */
  constructor(
    readonly batch: ReturnType<Db["batch"]>,
    private readonly gen: number,
    private readonly onDone: () => void = () => undefined,
  ) {
    this.puts = batchPuts(batch);
  }

  /** Puts the records added to the lists since the last call (in the background: see allPut). */
  putNew(nodes: NodeWrites, leaves: NodeWrites): void {
    if (this.done) throw new Error("this commit was written or abandoned");
    const [nodesFrom, nodesTo] = [this.nodesPut, nodes.length];
    const [leavesFrom, leavesTo] = [this.leavesPut, leaves.length];
    this.nodesPut = nodesTo;
    this.leavesPut = leavesTo;
    const stopped = () => this.done;
    this.runs = this.runs.then(async () => {
      await putSorted(this.puts, this.gen, TreeKind.node, nodes, nodesFrom, nodesTo, stopped);
      await putSorted(this.puts, this.gen, TreeKind.leaf, leaves, leavesFrom, leavesTo, stopped);
    });
    // Observed by allPut; a commit abandoned meanwhile never asks.
    this.runs.catch(() => undefined);
  }

  /** Resolves once every record handed over is in the batch. */
  allPut(): Promise<void> {
    return this.runs;
  }

  /** Drops the batch unless it is written (nothing of it reaches the store); safe to call again. */
  abandon(): void {
    if (this.done) return;
    this.done = true;
    this.onDone();
    // Idempotent in abstract-level, and a no-op once the batch is written.
    void this.batch.close().catch(() => undefined);
  }
}
