import { availableParallelism } from "node:os";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DacdError } from "../../errors.js";
import type { ShardSummary } from "./file-messages.js";
import { openKitDir, placeKit } from "./kit-dir.js";
import { SHARD_DIGITS } from "./layout.js";
import { WriterLane } from "./writer-lane.js";

export type { ShardSummary } from "./file-messages.js";

/**
 * Writes a format-1 kit into a temporary directory beside `out` and renames it into place at the
 * end, the manifest written last (kit-dir.ts).
 *
 * The proofs are created by threads of their own (writer-lane.ts, file-worker.ts), each owning
 * the shards whose number is its own modulo their count, so that the main thread walks the tree
 * and encodes while the files are made, and a thread waiting on the disk does not stop the others.
 */

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

  /** Refuses an `out` that exists and is not an empty directory, or is a symbolic link (kit-dir.ts). */
  static async open(out: string): Promise<KitWriter> {
    return new KitWriter(out, await openKitDir(out));
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
    await placeKit(this.tmp, this.out);
  }

  async abort(): Promise<void> {
    await this.stopLanes();
    await rm(this.tmp, { recursive: true, force: true });
  }

  private async stopLanes(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.stop()));
  }
}
