import { createHash, type Hash } from "node:crypto";
import { mkdirSync, writeFile as writeFileCallback } from "node:fs";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DacdError } from "../../errors.js";
import { kitPath, shardOf } from "./layout.js";

/**
 * Writes a kit into a temporary directory beside `out` and renames it into place at the end, the
 * manifest written last: a kit cut short (a SIGKILL, a full disk) leaves no `out` and no
 * manifest, only a temporary directory, which the next kit into the same place removes once its
 * writer is gone. Files are written a few dozen at a time, so the disk works while proofs are
 * encoded and memory holds only those in flight.
 */

/** Files being written at once. */
const IN_FLIGHT = 32;
const TMP_MARK = ".kit-tmp-";

export interface ShardSummary {
  readonly files: number;
  /** SHA-256 of the shard's list: `<sha256 of the file>  <id>.json` lines in ascending id order. */
  readonly sha256: string;
}

export class KitWriter {
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;
  private readonly shards = new Map<string, { files: number; list: Hash }>();
  private readonly dirs = new Set<string>();
  files = 0;

  private constructor(
    readonly out: string,
    readonly tmp: string,
  ) {}

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

  /** Adds one proof; resolves when another may be added. Proofs must come in ascending id order. */
  async add(tree: string, id: bigint, text: string): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const shard = shardOf(id);
    const dir = join(this.tmp, tree, shard);
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      this.dirs.add(dir);
    }
    const bytes = Buffer.from(text, "utf8");
    const key = `${tree}/${shard}`;
    let s = this.shards.get(key);
    if (!s) this.shards.set(key, (s = { files: 0, list: createHash("sha256") }));
    s.files++;
    s.list.update(`${createHash("sha256").update(bytes).digest("hex")}  ${id}.json\n`);
    this.files++;
    // The callback form: fs/promises' writeFile goes through a FileHandle, dearer per small file.
    const p = new Promise<void>((resolve) =>
      writeFileCallback(join(this.tmp, kitPath(tree, id)), bytes, (err) => {
        this.inFlight.delete(p);
        if (err) this.failure ??= err;
        resolve();
      }),
    );
    this.inFlight.add(p);
    if (this.inFlight.size >= IN_FLIGHT) await Promise.race(this.inFlight);
  }

  /** A file of the kit other than a proof (the page and its assets). */
  async addFile(name: string, content: string | Uint8Array): Promise<void> {
    await writeFile(join(this.tmp, name), content);
  }

  /** The shards so far, by `tree/shard`, in order. */
  shardSummaries(): Record<string, ShardSummary> {
    const out: Record<string, ShardSummary> = {};
    for (const key of [...this.shards.keys()].sort())
      out[key] = {
        files: this.shards.get(key)!.files,
        sha256: this.shards.get(key)!.list.copy().digest("hex"),
      };
    return out;
  }

  /** Waits for the proofs, writes the manifest (last) and moves the kit into place. */
  async finish(manifest: object): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure !== undefined) throw this.failure;
    await writeFile(join(this.tmp, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
    // rename(2) replaces an empty directory: `out` may exist, empty.
    await rename(this.tmp, this.out);
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.inFlight);
    await rm(this.tmp, { recursive: true, force: true });
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
