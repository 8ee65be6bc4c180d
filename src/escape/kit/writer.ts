import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { DacdError } from "../../errors.js";
import type { ShardSummary, WorkerReply, WriterRequest } from "./file-messages.js";

export type { ShardSummary } from "./file-messages.js";

/**
 * Writes a kit into a temporary directory beside `out` and renames it into place at the end, the
 * manifest written last: a kit cut short (a SIGKILL, a full disk) leaves no `out` and no
 * manifest, only a temporary directory, which the next kit into the same place removes once its
 * writer is gone. Nothing is synced file by file: a kit is made again from the store, and the
 * rename is what tells a kit from a kit's remains.
 *
 * The proofs are created by a thread of their own (file-worker.ts), so that the main thread walks
 * the tree and encodes while the files are made. They go to it in batches of about a megabyte,
 * a few batches in flight, so memory holds only those.
 */

const BATCH_BYTES = 1 << 20;
const BATCHES_IN_FLIGHT = 6;
const TMP_MARK = ".kit-tmp-";

export class KitWriter {
  private readonly worker: Worker;
  /** Batch buffers back from the worker, for the next batches. */
  private readonly spare: Buffer[] = [];
  private batch: { tree: string; buf: Buffer; used: number; ids: string[]; ends: number[] } | undefined;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private failure: Error | undefined;
  private summaryWait: ((s: { files: number; shards: Record<string, ShardSummary> }) => void) | undefined;
  files = 0;

  private constructor(
    readonly out: string,
    readonly tmp: string,
  ) {
    const script = workerScript();
    if (!script)
      throw new DacdError("STORE", "the kit writer's worker script is missing (run npm run build)");
    this.worker = new Worker(script, { workerData: { root: tmp }, stdout: false, stderr: false });
    this.worker.on("message", (reply: WorkerReply) => this.onReply(reply));
    this.worker.on("error", (err) => this.fail(err));
    this.worker.on("exit", (code) =>
      this.fail(new Error(`the kit writer's thread stopped (exit code ${code})`)),
    );
  }

  /** Refuses an `out` that exists and is not an empty directory; clears temporary directories left by dead writers. */
  static async open(out: string): Promise<KitWriter> {
    const entries = await readdir(out).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return [];
      if (err.code === "ENOTDIR") throw new DacdError("BAD_INPUT", `${out} is a file, not a directory`);
      throw err;
    });
    if (entries.length > 0) throw new DacdError("BAD_INPUT", `the output directory ${out} is not empty`);
    const parent = dirname(out);
    await mkdir(parent, { recursive: true });
    const prefix = `.${basename(out)}${TMP_MARK}`;
    for (const name of await readdir(parent)) {
      if (!name.startsWith(prefix)) continue;
      const pid = Number(name.slice(prefix.length));
      if (Number.isInteger(pid) && pid > 0 && !alive(pid))
        await rm(join(parent, name), { recursive: true, force: true });
    }
    const tmp = join(parent, `${prefix}${process.pid}`);
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    return new KitWriter(out, tmp);
  }

  /**
   * Adds one proof; when it returns a promise, the next proof waits for it (batches in flight).
   * Proofs must come in ascending id order.
   */
  add(tree: string, id: bigint, text: string): Promise<void> | undefined {
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
    b.ids.push(id.toString());
    b.ends.push(b.used);
    this.files++;
    if (this.inFlight < BATCHES_IN_FLIGHT) return undefined;
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => {
      if (this.failure) throw this.failure;
    });
  }

  /** A file of the kit other than a proof (the page and its assets). */
  async addFile(name: string, content: string | Uint8Array): Promise<void> {
    await writeFile(join(this.tmp, name), content);
  }

  /** Waits for every proof to be written: the count and the shards, by `tree/shard`, in order. */
  async written(): Promise<{ files: number; shards: Record<string, ShardSummary> }> {
    if (this.failure) throw this.failure;
    if (this.batch) this.post();
    // The thread answers in order: after the last batch.
    const summary = await new Promise<{ files: number; shards: Record<string, ShardSummary> }>((resolve) => {
      this.summaryWait = resolve;
      this.send({ kind: "summary" });
    });
    if (this.failure) throw this.failure;
    if (summary.files !== this.files)
      throw new DacdError("STORE", `the kit writer wrote ${summary.files} proofs of ${this.files}`);
    return summary;
  }

  /** Writes the manifest (last, after written()) and moves the kit into place. */
  async finish(manifest: object): Promise<void> {
    if (this.failure) throw this.failure;
    await this.stopWorker();
    await writeFile(join(this.tmp, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
    // rename(2) replaces an empty directory: `out` may exist, empty.
    await rename(this.tmp, this.out);
  }

  async abort(): Promise<void> {
    await this.stopWorker();
    await rm(this.tmp, { recursive: true, force: true });
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

  private async stopWorker(): Promise<void> {
    this.worker.removeAllListeners("exit");
    this.worker.removeAllListeners("error");
    await this.worker.terminate();
  }
}

/**
 * The thread's compiled script beside this module. Run from the TypeScript sources (the tests),
 * the thread is the build of the same sources under dist/, which `npm test` makes first.
 */
function workerScript(): string | undefined {
  const candidates = [new URL("./file-worker.js", import.meta.url)];
  if (import.meta.url.endsWith(".ts"))
    candidates.push(new URL("../../../dist/src/escape/kit/file-worker.js", import.meta.url));
  return candidates.map((u) => fileURLToPath(u)).find((path) => existsSync(path));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
