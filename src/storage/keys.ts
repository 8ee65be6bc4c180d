/**
 * LevelDB key layout: one prefix byte per kind of record, then a binary suffix. Keys are raw bytes
 * (the store opens LevelDB with the `view` key encoding): under the default utf8 encoding, binary
 * hashes would be mangled and could collide. Only src/storage builds keys; the rest of dacd reads
 * and writes through LevelStore and its repositories.
 *
 * Key kinds (key → value):
 * - tree:  0x00 ‖ u32 gen ‖ kind ‖ 32-byte hash, where gen is the id of the batch that wrote the
 *          record (big-endian, so a batch's records sort above every older batch's) and kind
 *          TreeKind's:
 *          - node → the node's record (storage/records/node-record.ts: binary, Patricia edge or Merkle
 *            edge, told apart by length), content-addressed: a record names each child by its
 *            hash and gen;
 *          - leaf → the leaf's record (verifier/trees/format/leaves.ts: the vault, order or position fields the
 *            hash was computed from);
 *          - retire (no hash) → never holds a value: deleted after the batch's write to retire
 *            LevelDB's memtable (level-store.ts);
 * - batch: 0x03 ‖ u64 batch id, big-endian (so keys sort by id) → the batch record, JSON
 *          (batch-record.ts);
 * - meta:  0x04 ‖ utf8 name → JSON; the names are Meta's, and 0x04 ‖ "onchain_batch/" ‖ u64 batch
 *          id, big-endian → OnchainBatch (onchain-record.ts), what the base chain holds for a batch.
 *
 * Tree records lead with their batch because LevelDB merges a flushed table with every older
 * table whose key range it overlaps: hash-led keys would spread each batch's records over the
 * whole range and have compaction rewrite the store's records again and again; led by the batch,
 * a flushed table overlaps none (docs/performance.md). The retire key sits in the batch's range
 * for the same reason.
 */
import { readGen, writeGen } from "./records/node-record.js";

export const Prefix = {
  tree: 0x00,
  batch: 0x03,
  meta: 0x04,
} as const;

/** The kind byte of a tree key, after the gen. */
export const TreeKind = {
  node: 0x01,
  leaf: 0x02,
  retire: 0xff,
} as const;

/** A tree record's key: prefix, gen, kind, hash. */
export const TREE_KEY_LENGTH = 38;
/** Where the hash starts in a tree record's key. */
export const TREE_KEY_HASH_AT = 6;

/** Writes `0x00 ‖ gen ‖ kind` at the start of `key` (TREE_KEY_LENGTH bytes); the hash is the caller's. */
export function setTreeKeyHead(key: Uint8Array, gen: number, kind: number): void {
  key[0] = Prefix.tree;
  writeGen(key, 1, gen);
  key[5] = kind;
}

/** The key of a tree record: the 32 bytes at `hashAt` of `hash`, written by batch `gen`. */
export function treeKey(gen: number, kind: number, hash: Uint8Array, hashAt = 0): Uint8Array {
  const key = new Uint8Array(TREE_KEY_LENGTH);
  setTreeKeyHead(key, gen, kind);
  key.set(hash.subarray(hashAt, hashAt + 32), TREE_KEY_HASH_AT);
  return key;
}

/** The key a batch's memtable retire deletes: in the batch's range (see above). */
export function retireKey(gen: number): Uint8Array {
  const key = new Uint8Array(6);
  setTreeKeyHead(key, gen, TreeKind.retire);
  return key;
}

/** A tree record's key read back: its gen, kind and hash (a view of the key). */
export function treeKeyParts(key: Uint8Array): { gen: number; kind: number; hash: Uint8Array } {
  return { gen: readGen(key, 1), kind: key[5]!, hash: key.subarray(TREE_KEY_HASH_AT, TREE_KEY_HASH_AT + 32) };
}

/** The meta records (0x04 ‖ name → JSON value). */
export const Meta = {
  /** → StoreIdentity: the profile and heights the store was created for (batch-record.ts). */
  identity: "identity",
  /** → number: the node-record format the trees were written in (NODE_FORMAT). */
  format: "format",
  /** → Cursor: where the member continues (batch-record.ts). */
  cursor: "cursor",
  /** → the failing batch, advisory, for `dacd status` (never read for a signing decision). */
  failing: "failing",
  /** → string: the base chain's kind pinned at the first start (chain-pin.ts). */
  chain: "chain",
  /** → PruneInfo: which batches lost their trees to a prune (prune-info.ts). */
  prune: "prune",
  /** → ImportedFrom: the store was imported from the reference member's archive (escape/reference-store.ts). */
  importedFrom: "imported_from",
  /** → OrdersMissing: imported without the order tree; orders are not validated (escape/reference-store.ts). */
  ordersMissing: "orders_missing",
  /** → OnchainCursor: where the base-chain watch continues and what it saw last (onchain-record.ts). */
  onchain: "onchain",
} as const;

export type MetaName = (typeof Meta)[keyof typeof Meta];

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

export function metaKey(name: MetaName): Uint8Array {
  return prefixed(Prefix.meta, new TextEncoder().encode(name));
}

const ONCHAIN_BATCH = new TextEncoder().encode("onchain_batch/");

/** The key of what the base chain holds for batch `batchId` (sorted by id). */
export function onchainBatchKey(batchId: number): Uint8Array {
  // setBigUint64 wraps: an id of 2^64 would be batch 0's key. Ids are checked before; never folded.
  if (!Number.isSafeInteger(batchId) || batchId < 0)
    throw new RangeError(`on-chain batch id ${batchId} is not an integer in [0, 2^53)`);
  const key = new Uint8Array(1 + ONCHAIN_BATCH.length + 8);
  key[0] = Prefix.meta;
  key.set(ONCHAIN_BATCH, 1);
  new DataView(key.buffer).setBigUint64(1 + ONCHAIN_BATCH.length, BigInt(batchId));
  return key;
}

/** The key range of every onchainBatchKey. */
export const ONCHAIN_BATCH_RANGE = {
  gte: onchainBatchKey(0),
  lt: (() => {
    const end = new Uint8Array(1 + ONCHAIN_BATCH.length);
    end[0] = Prefix.meta;
    end.set(ONCHAIN_BATCH, 1);
    end[end.length - 1]! += 1;
    return end;
  })(),
};

/** The key range of the batch records. */
export const BATCH_RANGE = { gte: Uint8Array.of(Prefix.batch), lt: Uint8Array.of(Prefix.batch + 1) };
/** The key range of the tree records: nodes and leaves of every batch (and the retire keys among them). */
export const TREE_RANGE = { gte: Uint8Array.of(Prefix.tree), lt: Uint8Array.of(Prefix.tree + 1) };

/**
 * The order of these hashes by their first 24 bits (ties in the given order): the order of their
 * keys in LevelDB, near enough. LevelDB's memtable is a skip list, and inserting or looking up random
 * keys one after another misses the CPU caches at almost every step; in key order, each step starts
 * next to the one before (bench/key-order.ts). `hashes` is a list of 32-byte hashes, or one buffer
 * of them packed end to end.
 *
 * From 1,024 hashes on, a radix sort: two stable passes of 12 bits (the low half of the prefix,
 * then the high half), linear in the count, where sorting the prefixes as numbers is several times
 * slower for a batch's records (bench/key-order.ts). Below that the sort stays: the
 * passes' two count arrays of 4,096 entries are a fixed cost that a few hundred hashes do not repay.
 */
export function keyOrder(hashes: readonly Uint8Array[] | Uint8Array): Uint32Array {
  const prefixes = prefixesOf(hashes);
  return prefixes.length < RADIX_MIN ? sortOrder(prefixes) : radixOrder(prefixes);
}

/**
 * The order of tree records' keys, near enough (keyOrder's within a gen): by gen, then by the
 * hashes' first 24 bits, ties in the given order. A stable counting pass by gen over keyOrder's
 * order: a batch's lookups span a few hundred gens at most.
 */
export function treeKeyOrder(
  hashes: readonly Uint8Array[] | Uint8Array,
  gens: ArrayLike<number>,
): Uint32Array {
  const byHash = keyOrder(hashes);
  const n = byHash.length;
  let oneGen = true;
  for (let i = 1; i < n && oneGen; i++) oneGen = gens[i] === gens[0];
  if (oneGen) return byHash;
  const distinct = [...new Set(Array.from(gens))].sort((a, b) => a - b);
  const rank = new Map(distinct.map((g, r) => [g, r]));
  const starts = new Uint32Array(distinct.length + 1);
  for (let i = 0; i < n; i++) starts[rank.get(gens[i]!)! + 1]!++;
  for (let r = 0; r < distinct.length; r++) starts[r + 1]! += starts[r]!;
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) {
    const i = byHash[k]!;
    order[starts[rank.get(gens[i]!)!]!++] = i;
  }
  return order;
}

/** keyOrder by sorting the prefixes as numbers at any count (bench/key-order.ts compares the two). */
export function keyOrderBySort(hashes: readonly Uint8Array[] | Uint8Array): Uint32Array {
  return sortOrder(prefixesOf(hashes));
}

/** The first 24 bits of each hash. */
function prefixesOf(hashes: readonly Uint8Array[] | Uint8Array): Uint32Array {
  const packed = hashes instanceof Uint8Array;
  const n = packed ? hashes.length / 32 : hashes.length;
  const prefixes = new Uint32Array(n);
  const prefix = (h: Uint8Array, at: number): number => (h[at]! << 16) | (h[at + 1]! << 8) | h[at + 2]!;
  if (packed) for (let i = 0; i < n; i++) prefixes[i] = prefix(hashes, i * 32);
  else for (let i = 0; i < n; i++) prefixes[i] = prefix(hashes[i]!, 0);
  return prefixes;
}

const RADIX_MIN = 1024;
const RADIX_BITS = 12;
const RADIX = 1 << RADIX_BITS;
const RADIX_MASK = RADIX - 1;

/** Indices by prefix, ties in index order: prefix and index in one exact double, sorted as numbers. */
function sortOrder(prefixes: Uint32Array): Uint32Array {
  const n = prefixes.length;
  if (n >= 2 ** 29) throw new RangeError(`sorting as numbers takes fewer than 2^29 hashes, not ${n}`);
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = prefixes[i]! * 2 ** 29 + i;
  keys.sort();
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) order[k] = keys[k]! % 2 ** 29;
  return order;
}

/** sortOrder's result, by two stable counting passes over 12 bits each. */
function radixOrder(prefixes: Uint32Array): Uint32Array {
  const n = prefixes.length;
  const low = new Uint32Array(n);
  const counts = new Uint32Array(RADIX + 1);
  // Pass 1, by the low 12 bits, from index order (so ties keep it).
  for (let i = 0; i < n; i++) counts[(prefixes[i]! & RADIX_MASK) + 1]!++;
  for (let b = 0; b < RADIX; b++) counts[b + 1]! += counts[b]!;
  for (let i = 0; i < n; i++) low[counts[prefixes[i]! & RADIX_MASK]!++] = i;
  // Pass 2, by the high 12 bits, from pass 1's order.
  counts.fill(0);
  for (let i = 0; i < n; i++) counts[(prefixes[i]! >>> RADIX_BITS) + 1]!++;
  for (let b = 0; b < RADIX; b++) counts[b + 1]! += counts[b]!;
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) {
    const i = low[k]!;
    order[counts[prefixes[i]! >>> RADIX_BITS]!++] = i;
  }
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
