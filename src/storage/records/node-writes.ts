import { copy32 } from "../../util/bytes.js";
import type { NodeWrite, PackedRecords } from "./node-source.js";

/** What one tree's update gives: the new root, the gen of its record, and the records it made. */
export interface TreeUpdate {
  readonly root: Uint8Array;
  /** The gen of the new root's record: `batchGen` unless the root is unchanged (or empty: 0). */
  readonly rootGen: number;
  /** The list the update added its new records to (other trees' may be there too). */
  readonly newNodes: NodeWrites;
}

/**
 * Records to be stored under their hashes, packed in the order they were added: hash i is 32 bytes
 * of `hashBuf` from 32i, record i is `recordBuf[ends[i], ends[i + 1])`.
 *
 * A batch makes a record per changed node and keeps them all until its commit. As `{hash, record}`
 * objects, each with two views, they would be several small objects per record living through the
 * whole batch, which every young-generation collection copies and then promotes; packed, they are
 * three growing buffers, and the commit puts straight from them.
 */
export class NodeWrites implements Iterable<NodeWrite> {
  private hashBuf: Uint8Array;
  private recordBuf: Uint8Array;
  private ends: Uint32Array;
  private count = 0;

  /**
   * Room for `records` records of `recordBytes` in all to start with (it grows past them). A batch
   * sized like the last one (computeRoots passes its sizes) then allocates each buffer once rather
   * than doubling up to it, sparing the copies and fresh pages of every doubling.
   */
  constructor(records = 16, recordBytes = records * 64) {
    this.hashBuf = new Uint8Array(records * 32);
    this.recordBuf = new Uint8Array(recordBytes);
    this.ends = new Uint32Array(records + 1);
  }

  get length(): number {
    return this.count;
  }

  /** Bytes of all records together. */
  get recordBytes(): number {
    return this.ends[this.count]!;
  }

  /** Adds the record `record[recordOff, recordOff + recordLength)` under the hash at `hash[hashOff]`. */
  add(hash: Uint8Array, hashOff: number, record: Uint8Array, recordOff: number, recordLength: number): void {
    if (hashOff + 32 > hash.length) throw new RangeError("a record's hash must have 32 bytes");
    const n = this.count;
    const at = this.ends[n]!;
    this.reserve(n + 1, at + recordLength);
    copy32(this.hashBuf, n * 32, hash, hashOff);
    const rb = this.recordBuf;
    for (let i = 0; i < recordLength; i++) rb[at + i] = record[recordOff + i]!;
    this.ends[n + 1] = at + recordLength;
    this.count = n + 1;
  }

  /**
   * Adds records packed the same way: hash i is 32 bytes of `hashes` from 32i, the records are back
   * to back in `records`, record i `lengths[i]` bytes long. Copied in two calls, not per record.
   */
  addAll(hashes: Uint8Array, records: Uint8Array, lengths: Uint32Array): void {
    const k = lengths.length;
    let total = 0;
    for (let i = 0; i < k; i++) total += lengths[i]!;
    if (hashes.length !== k * 32 || records.length !== total)
      throw new RangeError("addAll needs 32 bytes of hash per record and the records' lengths to add up");
    const n = this.count;
    const at = this.ends[n]!;
    this.reserve(n + k, at + total);
    this.hashBuf.set(hashes, n * 32);
    this.recordBuf.set(records, at);
    for (let i = 0, end = at; i < k; i++) this.ends[n + 1 + i] = end += lengths[i]!;
    this.count = n + k;
  }

  /** Hash i, as a view (valid for as long as the list is). */
  hash(i: number): Uint8Array {
    return this.hashBuf.subarray(i * 32, i * 32 + 32);
  }

  /** Record i, as a view. */
  record(i: number): Uint8Array {
    return this.recordBuf.subarray(this.ends[i]!, this.ends[i + 1]!);
  }

  *[Symbol.iterator](): Iterator<NodeWrite> {
    for (let i = 0; i < this.count; i++) yield { hash: this.hash(i), record: this.record(i) };
  }

  /** The flat layout the store's put loop reads (sorted-puts.ts): views, no copy. */
  packed(): PackedRecords {
    const n = this.count;
    return {
      hashes: this.hashBuf.subarray(0, n * 32),
      records: this.recordBuf.subarray(0, this.ends[n]!),
      from: this.ends.subarray(0, n),
      to: this.ends.subarray(1, n + 1),
    };
  }

  /**
   * Room for `count` records of `recordBytes` in all, growing each buffer to twice what it needs.
   * Views handed out earlier keep the old buffers, which are never written again.
   */
  private reserve(count: number, recordBytes: number): void {
    if (count * 32 > this.hashBuf.length) this.hashBuf = grown(this.hashBuf, count * 64);
    if (recordBytes > this.recordBuf.length) this.recordBuf = grown(this.recordBuf, recordBytes * 2);
    if (count + 1 > this.ends.length) {
      const ends = new Uint32Array(count * 2 + 1);
      ends.set(this.ends);
      this.ends = ends;
    }
  }
}

function grown(buf: Uint8Array, size: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  out.set(buf);
  return out;
}
