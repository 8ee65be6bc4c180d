import { availableParallelism } from "node:os";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DacdError } from "../../errors.js";
import type { ShardSummary } from "./file-messages.js";
import { SHARD_DIGITS } from "./layout.js";
import { WriterLane } from "./writer-lane.js";

export type { ShardSummary } from "./file-messages.js";

/**
 * Writes a kit into a temporary directory beside `out` and renames it into place at the end, the
 * manifest written last: a kit cut short (a SIGKILL, a full disk) leaves no `out` and no
 * manifest, only a temporary directory, which the next kit into the same place removes once its
 * writer is gone. Nothing is synced file by file: a kit is made again from the store, and the
 * rename is what tells a kit from a kit's remains.
 *
 * The proofs are created by threads of their own (writer-lane.ts, file-worker.ts), each owning
 * the shards whose number is its own modulo their count, so that the main thread walks the tree
 * and encodes while the files are made, and a thread waiting on the disk does not stop the others.
 */

const TMP_MARK = ".kit-tmp-";
/** Writer threads: one per core, at least two (one may wait on the disk while another writes). */
const LANES = Math.min(4, Math.max(2, availableParallelism()));
const SHARD_MOD = 10n ** BigInt(SHARD_DIGITS);

export class KitWriter {
  private readonly lanes: WriterLane[];
  files = 0;

  private constructor(
    readonly out: string,
    readonly tmp: string,
  ) {
    this.lanes = Array.from({ length: LANES }, () => new WriterLane(tmp));
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
    const lane = this.lanes[Number(id % SHARD_MOD) % this.lanes.length]!;
    const room = lane.add(tree, id.toString(), text);
    this.files++;
    return room;
  }

  /** A file of the kit other than a proof (the page and its assets). */
  async addFile(name: string, content: string | Uint8Array): Promise<void> {
    await writeFile(join(this.tmp, name), content);
  }

  /** Waits for every proof to be written: the count and the shards, by `tree/shard`, in order. */
  async written(): Promise<{ files: number; shards: Record<string, ShardSummary> }> {
    const done = await Promise.all(this.lanes.map((lane) => lane.written()));
    const files = done.reduce((n, d) => n + d.files, 0);
    if (files !== this.files)
      throw new DacdError("STORE", `the kit writer wrote ${files} proofs of ${this.files}`);
    const all = Object.assign({}, ...done.map((d) => d.shards)) as Record<string, ShardSummary>;
    const shards = Object.fromEntries(
      Object.keys(all)
        .sort()
        .map((k) => [k, all[k]!]),
    );
    return { files, shards };
  }

  /** Writes the manifest (last, after written()) and moves the kit into place. */
  async finish(manifest: object): Promise<void> {
    const failed = this.lanes.find((lane) => lane.failure);
    if (failed) throw failed.failure;
    await this.stopLanes();
    await writeFile(join(this.tmp, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
    // rename(2) replaces an empty directory: `out` may exist, empty.
    await rename(this.tmp, this.out);
  }

  async abort(): Promise<void> {
    await this.stopLanes();
    await rm(this.tmp, { recursive: true, force: true });
  }

  private async stopLanes(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.stop()));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
