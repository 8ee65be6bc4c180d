import { mkdir, open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { ClassicLevel } from "classic-level";
import type { NodeWrite } from "./records/node-source.js";
import { copy32 } from "../util/bytes.js";
import { exactKeyOrder, setTreeKeyHead, TREE_KEY_LENGTH, TreeKind } from "./keys.js";
import type { PackedRecords } from "./records/node-source.js";
import { batchPuts, putInOrder } from "./sorted-puts.js";

type Db = ClassicLevel<Uint8Array, Uint8Array>;

export interface BulkWriterOptions {
  /** Records per LevelDB write at most (default 65536). */
  readonly batchOps?: number;
  /** Key and value bytes per LevelDB write at most, besides `batchOps` (default 1 MiB). */
  readonly batchBytes?: number;
  /** Bytes of spilled records buffered per partition before they go to its file (default 256 KiB). */
  readonly spillBuffer?: number;
}

/** The spill directory's name inside a store's directory (LevelDB ignores what it did not write). */
export const BULK_SPILL_DIR = ".bulk-load";

/**
 * The memtable size (LevelDB's `writeBufferSize`) to open a store with for a load. Written in key
 * order, each table LevelDB flushes stays as it is (compaction only moves it), so its size is the
 * memtable's plus one write, ~3 MiB here, near the 2 MiB tables compaction writes. A later dump
 * memory-maps the tables it keeps open, so their size bounds its RSS; much smaller tables would
 * bound it further but make the dump slower (bench/dump-rss.ts measures both).
 */
export const BULK_LOAD_WRITE_BUFFER = 2 << 20;

/** Partitions per kind of record, by the top bits of the hash: bounds the memory of one sort. */
const PARTITION_BITS = 5;
const PARTITIONS = 1 << PARTITION_BITS;
/**
 * The bits above Pedersen's outputs: every key hash is a field element, below 2^251 but for a
 * sliver, so the hash's top 5 bits are zero and partitions by them would put nearly every record
 * into one file. The partition is taken from the 5 bits below them.
 */
const FIELD_HEADROOM_BITS = 5;

/**
 * The spill partition of a record keyed by `hash`: rising with the key (so that writing the
 * partitions in turn, each sorted, writes in key order), and even over field elements. Keys at
 * 2^251 and above (none but the sliver of the field above it) share the last partition.
 */
export function spillPartition(hash: Uint8Array): number {
  const top16 = (hash[0]! << 8) | hash[1]!;
  return Math.min(PARTITIONS - 1, top16 >> (16 - FIELD_HEADROOM_BITS - PARTITION_BITS));
}

/** The largest read one call makes (Node's fs reads take at most 2 GiB - 1). */
const MAX_READ_BYTES = 1 << 30;

/** One spill file: records of one kind whose hashes share the bits spillPartition takes. */
class Partition {
  private file: FileHandle | undefined;
  private buf: Uint8Array;
  private used = 0;
  count = 0;

  constructor(
    readonly path: string,
    size: number,
  ) {
    this.buf = new Uint8Array(size);
  }

  /** Whether a record of `length` bytes fits the buffer (else drain first). */
  fits(length: number): boolean {
    return this.used + 36 + length <= this.buf.length;
  }

  /** Appends hash ‖ u32 length ‖ record. */
  add(hash: Uint8Array, record: Uint8Array): void {
    const need = 36 + record.length;
    if (this.used + need > this.buf.length) {
      if (this.used > 0) throw new Error("a spill buffer must be drained before it overflows");
      this.buf = new Uint8Array(need);
    }
    this.buf.set(hash, this.used);
    // Big-endian, as indexSpill reads it back.
    this.buf[this.used + 32] = record.length >>> 24;
    this.buf[this.used + 33] = (record.length >>> 16) & 0xff;
    this.buf[this.used + 34] = (record.length >>> 8) & 0xff;
    this.buf[this.used + 35] = record.length & 0xff;
    this.buf.set(record, this.used + 36);
    this.used += need;
    this.count++;
  }

  async drain(): Promise<void> {
    if (this.used === 0) return;
    this.file ??= await open(this.path, "a");
    await this.file.write(this.buf, 0, this.used);
    this.used = 0;
  }

  async close(): Promise<void> {
    await this.drain();
    await this.file?.close();
    this.file = undefined;
  }
}

/**
 * Writes the millions of records of a bulk load (escape load, the bench's initial states) in
 * LevelDB's key order. Records are keyed by their hash, so a tree hands them over in random key
 * order, and LevelDB, fed random keys, flushes tables that overlap one another and then merges
 * them again and again (a large share of a load's CPU, and a backlog that the first batches after
 * the load pay for; docs/performance.md). Here records are
 * first spilled to files, one per kind of record and top bits of the hash; `finish` sorts each file
 * in turn and writes it in order, so every table LevelDB flushes follows the one before, and
 * compaction only moves tables down. Memory: one partition (a 32nd of a kind's records) at a
 * time. Writes are not synced one by one: the loader's final record goes with `sync`, which makes
 * everything before it durable too, and a store whose load did not finish has no such record.
 */
export class BulkWriter {
  private readonly partitions = new Map<number, Partition[]>();
  private readonly batchOps: number;
  private readonly batchBytes: number;
  private readonly spillBuffer: number;
  private dirMade = false;
  private readBuf = new Uint8Array(0);
  /** Records taken so far. */
  taken = 0;

  /** `spillDir` is made afresh at the first put and removed by finish or abandon. */
  constructor(
    private readonly db: Db,
    private readonly spillDir: string,
    opts: BulkWriterOptions = {},
  ) {
    this.batchOps = opts.batchOps ?? 65536;
    this.batchBytes = opts.batchBytes ?? 1 << 20;
    this.spillBuffer = opts.spillBuffer ?? 256 << 10;
  }

  /** Takes tree node records (stored under the load's gen and their hashes, keys.ts). */
  putNodes(writes: readonly NodeWrite[]): Promise<void> {
    return this.put(TreeKind.node, writes);
  }

  /** Takes leaf records (stored under the load's gen and their leaf hashes, keys.ts). */
  putLeaves(writes: readonly NodeWrite[]): Promise<void> {
    return this.put(TreeKind.leaf, writes);
  }

  /** Takes records of a kind (TreeKind) to be stored under their hashes. */
  async put(kind: number, writes: readonly NodeWrite[]): Promise<void> {
    if (!this.dirMade) {
      // Files of an earlier writer that neither finished nor abandoned would otherwise be appended
      // to (a killed load's are already gone: opening the store removes them, LevelStore.open).
      await rm(this.spillDir, { recursive: true, force: true });
      await mkdir(this.spillDir, { recursive: true });
      this.dirMade = true;
    }
    let parts = this.partitions.get(kind);
    if (!parts) {
      parts = Array.from(
        { length: PARTITIONS },
        (_, p) => new Partition(join(this.spillDir, `${kind}-${p}`), this.spillBuffer),
      );
      this.partitions.set(kind, parts);
    }
    for (const { hash, record } of writes) {
      if (hash.length !== 32) throw new RangeError(`a record's hash has ${hash.length} bytes`);
      const part = parts[spillPartition(hash)]!;
      if (!part.fits(record.length)) await part.drain();
      part.add(hash, record);
    }
    this.taken += writes.length;
  }

  /**
   * Writes every record taken to LevelDB under `gen` (the id of the batch the load stands for,
   * known to a reference import only once its archive is read), in key order, and removes the spill
   * files. `onWritten` hears how many records have been handed to LevelDB so far, after each write
   * batch.
   */
  async finish(gen: number, onWritten?: (written: number) => void): Promise<void> {
    const key = new Uint8Array(TREE_KEY_LENGTH);
    let inFlight: Promise<void> | undefined;
    let written = 0;
    try {
      for (const kind of [...this.partitions.keys()].sort((a, b) => a - b)) {
        setTreeKeyHead(key, gen, kind);
        for (const part of this.partitions.get(kind)!) {
          await part.close();
          if (part.count === 0) continue;
          // The batch copies keys and values at put, so the read buffer is free again for the
          // next file while this one's last write is in flight.
          const spill = await this.readSpill(part.path);
          await rm(part.path);
          const packed = indexSpill(spill, part.count);
          const order = exactKeyOrder(packed.hashes);
          for (let k = 0; k < order.length;) {
            const batch = this.db.batch();
            const first = k;
            k = putInOrder(
              batchPuts(batch),
              key,
              packed,
              order,
              k,
              Math.min(order.length, k + this.batchOps),
              this.batchBytes,
            );
            // One write in flight while the next batch is filled.
            await inFlight;
            inFlight = batch.write();
            inFlight.catch(() => undefined); // observed at the next await
            written += k - first;
            onWritten?.(written);
          }
        }
      }
      await inFlight;
    } finally {
      await inFlight?.catch(() => undefined);
      await this.abandon();
    }
  }

  /**
   * A spill file's bytes, in a buffer reused from one file to the next: a fresh one per file would
   * leave hundreds of MiB of dead buffers between garbage collections.
   */
  private async readSpill(path: string): Promise<Uint8Array> {
    const file = await open(path, "r");
    try {
      const { size } = await file.stat();
      if (this.readBuf.length < size) this.readBuf = new Uint8Array(Math.max(size, 2 * this.readBuf.length));
      for (let at = 0; at < size;) {
        const { bytesRead } = await file.read(this.readBuf, at, Math.min(MAX_READ_BYTES, size - at), at);
        if (bytesRead === 0) throw new Error(`a bulk-load spill file was cut short: ${at} of ${size} bytes`);
        at += bytesRead;
      }
      return this.readBuf.subarray(0, size);
    } finally {
      await file.close();
    }
  }

  /** Drops the records not yet written and removes the spill files. */
  async abandon(): Promise<void> {
    for (const parts of this.partitions.values())
      for (const p of parts) await p.close().catch(() => undefined);
    this.partitions.clear();
    if (this.dirMade) await rm(this.spillDir, { recursive: true, force: true });
    this.dirMade = false;
  }
}

/** A spill file's records: their hashes packed, and where each record's bytes are in the file. */
function indexSpill(spill: Uint8Array, count: number): PackedRecords {
  const hashes = new Uint8Array(count * 32);
  const from = new Uint32Array(count);
  const to = new Uint32Array(count);
  let off = 0;
  for (let i = 0; i < count; i++) {
    copy32(hashes, i * 32, spill, off);
    const length =
      spill[off + 32]! * 2 ** 24 + ((spill[off + 33]! << 16) | (spill[off + 34]! << 8) | spill[off + 35]!);
    from[i] = off + 36;
    to[i] = off + 36 + length;
    off = to[i]!;
  }
  if (off !== spill.length)
    throw new Error(`a bulk-load spill file holds ${spill.length - off} bytes too many`);
  return { hashes, records: spill, from, to };
}
