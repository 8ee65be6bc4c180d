/**
 * The node cache's positioned nodes in a file, so that a restart loads them rather than walking
 * the trees from the store (warm-cache.ts decides which).
 *
 * Safe to use stale: the cache answers only by (hash, gen) and by position with a matching hash, so
 * an entry that no longer fits is a miss, never a wrong answer; a damaged file fails its checksum.
 *
 * Layout: MAGIC ‖ header length (4, little-endian) ‖ header (JSON, SnapshotHeader) ‖ frames ‖
 * SHA-256 of everything before it. A frame is a tree's number in the header's list (2) ‖ its
 * length (4) ‖ that tree's entries (node-cache.ts, SNAPSHOT_ENTRY_HEAD); a frame of tree END ends them.
 */
import { createHash } from "node:crypto";
import { mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";
import { NODE_FORMAT } from "../../../storage/records/node-record.js";
import { syncDir } from "../../../util/sync-dir.js";
import { SNAPSHOT_ENTRY_HEAD, type TopNodeCache } from "./node-cache.js";

const MAGIC = Buffer.from("dacd node cache\n", "latin1");
/** This layout's number; a file of another is refused. */
export const SNAPSHOT_FORMAT = 1;
/** Where the snapshot lives in the data dir: a folder of its own, which LevelDB and the store's size leave alone. */
export const SNAPSHOT_FOLDER = "node-cache";
const SNAPSHOT_FILE = "top-nodes.snapshot";
const FRAME_HEAD = 6;
const END = 0xffff;
const DIGEST = 32;
/** The bytes the export hands over at a time: each call into the cache stays short. */
export const SNAPSHOT_CHUNK_BYTES = 4 * 2 ** 20;
/** Larger than any frame or header this module writes: a length beyond it is a damaged file. */
const MAX_FRAME = 64 * 2 ** 20;

/** What the entries reflect, checked against the store and the configuration before they are used. */
export interface SnapshotHeader {
  readonly format: number;
  readonly node_format: number;
  readonly levels: number;
  /** The kept trees, in the frames' numbering, and where each one's cached levels start (setTop). */
  readonly trees: readonly {
    readonly name: string;
    readonly top_depth: number;
    readonly top_index: string;
  }[];
  /** The newest stored batch when the write began: entries of a later gen are not loaded. */
  readonly batch_id: number;
  readonly roots: Readonly<Record<string, string>>;
}

/** Why a snapshot is not used: one line for the log. */
export class SnapshotRefused extends Error {}

/** The snapshot file of the store in `dataDir`. */
export function snapshotPath(dataDir: string): string {
  return join(dataDir, SNAPSHOT_FOLDER, SNAPSHOT_FILE);
}

/** The file a write goes to before it is renamed into place. */
export function partialPath(file: string): string {
  return join(dirname(file), `.${SNAPSHOT_FILE}.partial`);
}

/**
 * Writes the positioned nodes of `trees` to `file`: to a partial file first, fsynced, then renamed
 * over the old one and the folder fsynced, so that a crash leaves the old snapshot or the new one.
 * Streams chunk by chunk, each written before the next is exported (the event loop runs between
 * them). Aborted by `signal` (or failed), the partial file is removed and the old snapshot kept.
 */
export async function writeCacheSnapshot(
  cache: TopNodeCache,
  file: string,
  state: {
    readonly batchId: number;
    readonly roots: Readonly<Record<string, string>>;
    readonly trees: readonly string[];
  },
  opts: { readonly signal?: AbortSignal; readonly chunkBytes?: number } = {},
): Promise<{ bytes: number; nodes: number }> {
  if (!cache.canSnapshot)
    throw new SnapshotRefused("this node cache cannot be saved (an older native addon)");
  const header: SnapshotHeader = {
    format: SNAPSHOT_FORMAT,
    node_format: NODE_FORMAT,
    levels: cache.levels,
    trees: state.trees.map((name) => {
      const top = cache.topOf(name);
      return { name, top_depth: top.depth, top_index: top.index.toString() };
    }),
    batch_id: state.batchId,
    roots: state.roots,
  };
  const partial = partialPath(file);
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const fh = await open(partial, "w", 0o600);
  const digest = createHash("sha256");
  let bytes = 0;
  let nodes = 0;
  const put = async (chunk: Uint8Array): Promise<void> => {
    digest.update(chunk);
    await fh.write(chunk);
    bytes += chunk.length;
  };
  try {
    const json = Buffer.from(JSON.stringify(header));
    await put(Buffer.concat([MAGIC, le32(json.length), json]));
    for (const [number, name] of state.trees.entries()) {
      for (const chunk of cache.snapshotChunks(name, opts.chunkBytes ?? SNAPSHOT_CHUNK_BYTES)) {
        opts.signal?.throwIfAborted();
        await put(frameHead(number, chunk.length));
        await put(chunk);
        nodes += countEntries(chunk);
      }
    }
    await put(frameHead(END, 0));
    await fh.write(digest.digest());
    await fh.sync();
    await fh.close();
    opts.signal?.throwIfAborted();
    await rename(partial, file);
  } catch (err) {
    await fh.close().catch(() => undefined);
    await rm(partial, { force: true });
    throw err;
  }
  await syncDir(dirname(file));
  return { bytes: bytes + DIGEST, nodes };
}

function countEntries(chunk: Uint8Array): number {
  let n = 0;
  for (let at = 0; at < chunk.length; n++) at += SNAPSHOT_ENTRY_HEAD + chunk[at + SNAPSHOT_ENTRY_HEAD - 1]!;
  return n;
}

/** A snapshot whose checksum held: its header, and the open file to read its entries from. */
export interface CheckedSnapshot {
  readonly header: SnapshotHeader;
  /** Loads the entries of the trees `use` accepts into `cache`, but those of a gen above the header's batch. */
  load(cache: TopNodeCache, use: (tree: string) => boolean): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens `file` and checks it whole (its SHA-256, then its magic, format and header) before any
 * entry is used. Throws SnapshotRefused naming what is wrong (a missing file too).
 */
export async function openCacheSnapshot(file: string): Promise<CheckedSnapshot> {
  let fh: FileHandle;
  try {
    fh = await open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new SnapshotRefused("no snapshot");
    throw new SnapshotRefused(`cannot open ${file}: ${(err as Error).message}`);
  }
  try {
    const { size } = await fh.stat();
    const bodyEnd = size - DIGEST;
    if (bodyEnd < MAGIC.length + 4 + FRAME_HEAD) throw new SnapshotRefused("the snapshot is cut short");
    await checkDigest(fh, bodyEnd);
    const head = await readAt(fh, 0, MAGIC.length + 4);
    if (!head.subarray(0, MAGIC.length).equals(MAGIC)) throw new SnapshotRefused("not a node cache snapshot");
    const headerLength = head.readUInt32LE(MAGIC.length);
    if (headerLength > MAX_FRAME || MAGIC.length + 4 + headerLength > bodyEnd)
      throw new SnapshotRefused("the snapshot's header is cut short");
    const header = parseHeader(await readAt(fh, MAGIC.length + 4, headerLength));
    const entriesAt = MAGIC.length + 4 + headerLength;
    return {
      header,
      load: (cache, use) => loadFrames(fh, entriesAt, bodyEnd, header, cache, use),
      close: () => fh.close(),
    };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

async function checkDigest(fh: FileHandle, bodyEnd: number): Promise<void> {
  const digest = createHash("sha256");
  const buffer = Buffer.allocUnsafe(SNAPSHOT_CHUNK_BYTES);
  for (let at = 0; at < bodyEnd;) {
    const { bytesRead } = await fh.read(buffer, 0, Math.min(buffer.length, bodyEnd - at), at);
    if (bytesRead === 0) throw new SnapshotRefused("the snapshot is cut short");
    digest.update(buffer.subarray(0, bytesRead));
    at += bytesRead;
  }
  const stored = await readAt(fh, bodyEnd, DIGEST);
  if (!digest.digest().equals(stored))
    throw new SnapshotRefused("the snapshot is damaged (its checksum does not match)");
}

function parseHeader(bytes: Buffer): SnapshotHeader {
  let header: SnapshotHeader;
  try {
    header = JSON.parse(bytes.toString("utf8")) as SnapshotHeader;
  } catch {
    throw new SnapshotRefused("the snapshot's header is not JSON");
  }
  if (header.format !== SNAPSHOT_FORMAT)
    throw new SnapshotRefused(
      `the snapshot is in format ${header.format}, this dacd reads ${SNAPSHOT_FORMAT}`,
    );
  if (header.node_format !== NODE_FORMAT)
    throw new SnapshotRefused(
      `the snapshot holds node format ${header.node_format}, this dacd's is ${NODE_FORMAT}`,
    );
  if (!Array.isArray(header.trees) || !Number.isInteger(header.batch_id) || typeof header.roots !== "object")
    throw new SnapshotRefused("the snapshot's header is incomplete");
  return header;
}

async function loadFrames(
  fh: FileHandle,
  from: number,
  bodyEnd: number,
  header: SnapshotHeader,
  cache: TopNodeCache,
  use: (tree: string) => boolean,
): Promise<void> {
  for (let at = from; ;) {
    if (at + FRAME_HEAD > bodyEnd) throw new SnapshotRefused("the snapshot's entries are cut short");
    const head = await readAt(fh, at, FRAME_HEAD);
    const number = head.readUInt16LE(0);
    const length = head.readUInt32LE(2);
    at += FRAME_HEAD;
    if (number === END) return;
    const tree = header.trees[number]?.name;
    if (tree === undefined || length > MAX_FRAME || at + length > bodyEnd)
      throw new SnapshotRefused("the snapshot's entries are malformed");
    if (use(tree)) cache.importEntries(tree, await readAt(fh, at, length), header.batch_id);
    at += length;
  }
}

async function readAt(fh: FileHandle, at: number, length: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(length);
  for (let done = 0; done < length;) {
    const { bytesRead } = await fh.read(out, done, length - done, at + done);
    if (bytesRead === 0) throw new SnapshotRefused("the snapshot is cut short");
    done += bytesRead;
  }
  return out;
}

function le32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function frameHead(tree: number, length: number): Buffer {
  const b = Buffer.alloc(FRAME_HEAD);
  b.writeUInt16LE(tree, 0);
  b.writeUInt32LE(length, 2);
  return b;
}
