import { Worker } from "node:worker_threads";
import { workerScript } from "../../util/worker-script.js";
import type { BatchParseReply, BatchParseRequest } from "./batch-answer.js";
import { ownBuffer, WORKER_HEAP_MB } from "./bounded-json.js";

/**
 * Reads get_batch_data answers (batch-answer.ts) in worker threads, so that neither the JSON of a
 * large batch nor its leaves take the main thread, which verifies the batch before it meanwhile,
 * and so that the garbage they make is not the main thread's to collect. A worker reads one
 * answer at a time and is kept for the next: the member reads up to its prefetch depth + 1 at
 * once. A worker has a heap limit, so a body that would need more is refused and kills only that
 * worker; an abort (shutdown, deadline) terminates it at once.
 */
export class BatchParser {
  private readonly idle: Worker[] = [];
  private closed = false;

  private constructor(
    private readonly script: string,
    private readonly maxIdle: number,
  ) {}

  /**
   * A parser that keeps up to `maxIdle` workers between answers (the answers read at once), or
   * null where the compiled worker is not there (then the caller reads on its own thread).
   */
  static create(maxIdle: number): BatchParser | null {
    const script = workerScript(import.meta.url, "batch-parse-worker.js");
    return script ? new BatchParser(script, maxIdle) : null;
  }

  /** Reads one answer. The body's ArrayBuffer may move to the worker: the caller must not use it afterwards. */
  parse(req: BatchParseRequest, signal?: AbortSignal): Promise<BatchParseReply> {
    signal?.throwIfAborted();
    const worker = this.idle.pop() ?? this.spawn();
    worker.ref();
    const bytes = ownBuffer(req.bytes);
    return new Promise((resolve, reject) => {
      const settle = (keep: boolean, fn: () => void): void => {
        worker.off("message", onMessage).off("error", onError).off("exit", onExit);
        signal?.removeEventListener("abort", onAbort);
        if (keep) this.release(worker);
        else void worker.terminate();
        fn();
      };
      const refused = (reason: string): BatchParseReply => ({
        kind: "bad-response",
        reason: `answer refused: ${reason}`,
        jsonParseMs: 0,
        parseMs: 0,
      });
      const onMessage = (reply: BatchParseReply) => settle(true, () => resolve(reply));
      const onError = (err: Error & { code?: string }) =>
        settle(false, () =>
          err.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? resolve(refused(`parsing it needs more than ${WORKER_HEAP_MB} MiB`))
            : reject(err),
        );
      const onExit = (code: number) =>
        settle(false, () => resolve(refused(`the parsing worker stopped (exit code ${code})`)));
      const onAbort = () => settle(false, () => reject(signal!.reason));
      worker.on("message", onMessage).on("error", onError).on("exit", onExit);
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.postMessage({ ...req, bytes }, [bytes.buffer as ArrayBuffer]);
    });
  }

  /** Stops the idle workers, and each of the others once its answer is read (none is kept after). */
  close(): void {
    this.closed = true;
    for (const worker of this.idle.splice(0)) void worker.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(this.script, {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32 },
      stdout: false,
      stderr: false,
    });
    // A worker that ends while idle is never handed an answer it would not read.
    worker.once("exit", () => {
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
    });
    return worker;
  }

  /** An idle worker waits for the next answer without keeping the process alive. */
  private release(worker: Worker): void {
    worker.unref();
    if (!this.closed && this.idle.length < this.maxIdle) this.idle.push(worker);
    else void worker.terminate();
  }
}
