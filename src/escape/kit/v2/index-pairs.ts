import { writeBigint32 } from "../../../util/bytes.js";
import { INDEX_ENTRY_BYTES } from "./key-index.js";

/** Pairs a chunk (2.5 MiB): a pair's chunk is its number's bits above these. */
const CHUNK_BITS = 16;
const IN_CHUNK = (1 << CHUNK_BITS) - 1;

/**
 * The (stark key, leaf id) pairs of a kit as the walk finds them, each in the index files' layout
 * (key-index.ts), held in chunks of equal size: a kit of ten million leaves holds 400 MB of pairs,
 * which one buffer grown by doubling would hold up to twice over, and both while it is copied.
 */
export class IndexPairs {
  private readonly chunks: Uint8Array[] = [];
  private readonly views: DataView[] = [];
  count = 0;

  add(key: bigint, id: bigint): void {
    const c = this.count >>> CHUNK_BITS;
    if (c === this.chunks.length) {
      const chunk = new Uint8Array((IN_CHUNK + 1) * INDEX_ENTRY_BYTES);
      this.chunks.push(chunk);
      this.views.push(new DataView(chunk.buffer));
    }
    const at = (this.count & IN_CHUNK) * INDEX_ENTRY_BYTES;
    writeBigint32(key, this.chunks[c]!, at);
    this.views[c]!.setBigUint64(at + 32, id);
    this.count++;
  }

  /** Byte `k` of pair `i` (0–31: its key's, 32–39: its id's). */
  byte(i: number, k: number): number {
    return this.chunks[i >>> CHUNK_BITS]![(i & IN_CHUNK) * INDEX_ENTRY_BYTES + k]!;
  }

  /** Pair `i`, a view into its chunk. */
  entry(i: number): Uint8Array {
    const at = (i & IN_CHUNK) * INDEX_ENTRY_BYTES;
    return this.chunks[i >>> CHUNK_BITS]!.subarray(at, at + INDEX_ENTRY_BYTES);
  }

  /** Pairs `a` and `b` compared as the index files order them: by key, then id (their bytes). */
  compare(a: number, b: number): number {
    const x = this.chunks[a >>> CHUNK_BITS]!;
    const y = this.chunks[b >>> CHUNK_BITS]!;
    let i = (a & IN_CHUNK) * INDEX_ENTRY_BYTES;
    let j = (b & IN_CHUNK) * INDEX_ENTRY_BYTES;
    for (const end = i + INDEX_ENTRY_BYTES; i < end; i++, j++) {
      const d = x[i]! - y[j]!;
      if (d !== 0) return d;
    }
    return 0;
  }
}
