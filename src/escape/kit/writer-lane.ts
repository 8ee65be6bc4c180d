import { Worker } from "node:worker_threads";
import { workerScript } from "../../util/worker-script.js";
import { DacdError } from "../../errors.js";
import type { ShardSummary, WorkerReply, WriterRequest } from "./file-messages.js";

/**
 * One of the kit writer's threads (file-worker.ts) and what is on its way to it: the batch being
 * filled, the batches in flight, the buffers that came back. A lane owns its shards, so that it
 * sees each shard's files in id order for the shard's list.
 */

const BATCH_BYTES = 1 << 20;
const BATCHES_IN_FLIGHT = 4;

export interface LaneSummary {
  readonly files: number;
  readonly shards: Record<string, ShardSummary>;
}

export class WriterLane {
  private readonly worker: Worker;
  private readonly spare: Buffer[] = [];
  private batch: { tree: string; buf: Buffer; used: number; ids: string[]; ends: number[] } | undefined;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private summaryWait: ((s: LaneSummary) => void) | undefined;
  failure: Error | undefined;

  constructor(root: string) {
    const script = workerScript(import.meta.url, "file-worker.js");
    if (!script)
      throw new DacdError("STORE", "the kit writer's worker script is missing (run npm run build)");
    this.worker = new Worker(script, { workerData: { root }, stdout: false, stderr: false });
    this.worker.on("message", (reply: WorkerReply) => this.onReply(reply));
    this.worker.on("error", (err) => this.fail(err));
    this.worker.on("exit", (code) =>
      this.fail(new Error(`a kit writer's thread stopped (exit code ${code})`)),
    );
  }

  /** Adds a file; a promise when the lane is full, to be awaited before the next. */
  add(tree: string, id: string, text: string): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    const size = Buffer.byteLength(text);
    let b = this.batch;
    if (b && (b.tree !== tree || b.used + size > b.buf.length)) {
      this.post();
      b = undefined;
    }
    if (!b) {
      const buf =
        size <= BATCH_BYTES
          ? (this.spare.pop() ?? Buffer.allocUnsafeSlow(BATCH_BYTES))
          : Buffer.allocUnsafeSlow(size);
      b = this.batch = { tree, buf, used: 0, ids: [], ends: [] };
    }
    b.used += b.buf.write(text, b.used);
    b.ids.push(id);
    b.ends.push(b.used);
    if (this.inFlight < BATCHES_IN_FLIGHT) return undefined;
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => {
      if (this.failure) throw this.failure;
    });
  }

  /** Sends what is left and waits until the thread has written everything it was sent. */
  async written(): Promise<LaneSummary> {
    if (this.failure) throw this.failure;
    if (this.batch) this.post();
    // The thread answers in order: after the last batch.
    const summary = await new Promise<LaneSummary>((resolve) => {
      this.summaryWait = resolve;
      this.send({ kind: "summary" });
    });
    if (this.failure) throw this.failure;
    return summary;
  }

  async stop(): Promise<void> {
    this.worker.removeAllListeners("exit");
    this.worker.removeAllListeners("error");
    await this.worker.terminate();
  }

  private post(): void {
    const b = this.batch!;
    this.batch = undefined;
    const bytes = b.buf.buffer as ArrayBuffer;
    this.inFlight++;
    this.send({ kind: "files", tree: b.tree, ids: b.ids, ends: b.ends, bytes }, [bytes]);
  }

  private send(req: WriterRequest, transfer: ArrayBuffer[] = []): void {
    if (this.failure) return;
    this.worker.postMessage(req, transfer);
  }

  private onReply(reply: WorkerReply): void {
    if (reply.kind === "written") {
      this.inFlight--;
      if (reply.bytes.byteLength === BATCH_BYTES) this.spare.push(Buffer.from(reply.bytes));
      this.waiting.shift()?.();
    } else if (reply.kind === "failed") {
      this.fail(Object.assign(new Error(reply.message), { code: reply.code }));
    } else {
      this.summaryWait?.(reply);
      this.summaryWait = undefined;
    }
  }

  /** Everything waiting wakes to the failure. */
  private fail(err: Error): void {
    this.failure ??= err;
    for (const wake of this.waiting.splice(0)) wake();
    this.summaryWait?.({ files: -1, shards: {} });
    this.summaryWait = undefined;
  }
}
