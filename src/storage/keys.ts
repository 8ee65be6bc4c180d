/**
 * LevelDB key layout: one prefix byte per kind of record, then a binary suffix. Keys are raw bytes
 * (the store opens LevelDB with the `view` key encoding): under the default utf8 encoding, binary
 * hashes would be mangled and could collide.
 */
export const Prefix = {
  node: 0x01, // ‖ 32-byte hash → node record
  leaf: 0x02, // ‖ 32-byte leaf hash → leaf record
  batch: 0x03, // ‖ u64 batch id → batch record (JSON)
  meta: 0x04, // ‖ utf8 name → JSON
} as const;

export function prefixed(prefix: number, suffix: Uint8Array): Uint8Array {
  const key = new Uint8Array(1 + suffix.length);
  key[0] = prefix;
  key.set(suffix, 1);
  return key;
}

export function batchKey(batchId: number): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = Prefix.batch;
  new DataView(key.buffer).setBigUint64(1, BigInt(batchId));
  return key;
}

export function batchIdFromKey(key: Uint8Array): number {
  return Number(new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(1));
}

export function metaKey(name: string): Uint8Array {
  return prefixed(Prefix.meta, new TextEncoder().encode(name));
}

/**
 * The order of these hashes by their first 24 bits (ties in the given order): the order of their
 * keys in LevelDB, near enough. LevelDB's memtable is a skip list, and inserting or looking up random
 * keys one after another misses the CPU caches at almost every step; in key order, each step starts
 * next to the one before (bench/: see docs/performance-history.md). `hashes` is a list of 32-byte hashes, or
 * one buffer of them packed end to end.
 */
export function keyOrder(hashes: readonly Uint8Array[] | Uint8Array): Uint32Array {
  const packed = hashes instanceof Uint8Array;
  const n = packed ? hashes.length / 32 : hashes.length;
  if (n >= 2 ** 29) throw new RangeError(`keyOrder takes fewer than 2^29 hashes, not ${n}`);
  // 24 bits of hash and 29 of index in one exact double: a typed-array sort, no comparator calls.
  const keys = new Float64Array(n);
  const prefix = (h: Uint8Array, at: number): number => h[at]! * 65536 + h[at + 1]! * 256 + h[at + 2]!;
  if (packed) for (let i = 0; i < n; i++) keys[i] = prefix(hashes, i * 32) * 2 ** 29 + i;
  else for (let i = 0; i < n; i++) keys[i] = prefix(hashes[i]!, 0) * 2 ** 29 + i;
  keys.sort();
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = keys[k]! % 2 ** 29;
  return order;
}

/**
 * The exact order of packed 32-byte hashes (ties between equal hashes in the given order): keyOrder,
 * then each run of equal 24-bit prefixes (a few hashes at most, for random hashes) put in order by
 * the bytes after them. A bulk load writes LevelDB's keys in this order, so that no table it flushes
 * overlaps another (bulk-writer.ts).
 */
export function exactKeyOrder(packed: Uint8Array): Uint32Array {
  const order = keyOrder(packed);
  const n = order.length;
  const samePrefix = (i: number, j: number): boolean =>
    packed[i * 32] === packed[j * 32] &&
    packed[i * 32 + 1] === packed[j * 32 + 1] &&
    packed[i * 32 + 2] === packed[j * 32 + 2];
  // Bytes 3.. of hash i against hash j: negative, zero or positive.
  const compareRest = (i: number, j: number): number => {
    for (let b = 3; b < 32; b++) {
      const d = packed[i * 32 + b]! - packed[j * 32 + b]!;
      if (d !== 0) return d;
    }
    return i - j;
  };
  for (let start = 0; start < n;) {
    let end = start + 1;
    while (end < n && samePrefix(order[start]!, order[end]!)) end++;
    // Insertion sort of the run [start, end).
    for (let k = start + 1; k < end; k++) {
      const v = order[k]!;
      let m = k - 1;
      while (m >= start && compareRest(order[m]!, v) > 0) {
        order[m + 1] = order[m]!;
        m--;
      }
      order[m + 1] = v;
    }
    start = end;
  }
  return order;
}
