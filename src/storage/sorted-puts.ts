import type { ClassicLevel } from "classic-level";
import { copy32 } from "../util/bytes.js";
import type { PackedRecords } from "./records/node-source.js";
import type { NodeWrites } from "./records/node-writes.js";
import { yieldToEventLoop } from "../util/yield.js";
import { keyOrder, setTreeKeyHead, TREE_KEY_HASH_AT, TREE_KEY_LENGTH } from "./keys.js";
import { nativeContext, putRecordsInto } from "./level-binding.js";

type ChainedBatch = ReturnType<ClassicLevel<Uint8Array, Uint8Array>["batch"]>;

/** How records go into one chained batch: `put` one at a time; `putRecords`, where there is one, many. */
export interface BatchPuts {
  put(key: Uint8Array, value: Uint8Array): void;
  /** Puts `order[k]` … `order[end - 1]` of `packed` under `head` ‖ hash in one call (level-binding.ts). */
  putRecords?: (head: Uint8Array, packed: PackedRecords, order: Uint32Array, k: number, end: number) => void;
}

/**
 * The puts of a chained batch. `put` skips abstract-level's per-call wrapper, which builds an
 * operation object and looks up encodings on every put (about 90 bytes and a fifth of a
 * microsecond each, for 170k puts a batch). `_put` is abstract-level's implementation interface; it
 * is safe here because the store uses neither hooks nor sublevels and its keys and values are
 * already bytes (the `view` encoding). Neither `_put` nor the binding's batch_put_records counts in
 * the batch's length, and abstract-level's `write` skips a batch whose length is 0, so the first
 * record goes through the public put: a batch filled this way is never taken for empty. Where an
 * implementation has no `_put`, the public put throughout.
 */
export function batchPuts(batch: ChainedBatch): BatchPuts {
  const impl = batch as unknown as { _put?: (key: Uint8Array, value: Uint8Array, options: object) => void };
  if (typeof impl._put !== "function") return { put: (key, value) => void batch.put(key, value) };
  const options = {};
  let counted = false;
  const put = (key: Uint8Array, value: Uint8Array): void => {
    if (counted) impl._put!(key, value, options);
    else {
      batch.put(key, value);
      counted = true;
    }
  };
  const putInto = putRecordsInto;
  const context = putInto && nativeContext(batch);
  if (!putInto || context === undefined) return { put };
  return {
    put,
    putRecords(head, packed, order, k, end) {
      if (!counted && k < end) {
        const i = order[k++]!;
        const key = new Uint8Array(head.length + 32);
        key.set(head);
        copy32(key, head.length, packed.hashes, i * 32);
        put(key, packed.records.subarray(packed.from[i]!, packed.to[i]!));
      }
      putInto(context, head, packed, order, k, end);
    },
  };
}

/**
 * Puts records `order[k]`, `order[k + 1]`, … under the head of `key` (a tree key's: keys.ts) and
 * their hash until `order[end]` or until `maxBytes` of keys and values have been put; returns where
 * it stopped. The batch copies key and value at put(), so one key buffer serves every put.
 */
export function putInOrder(
  puts: BatchPuts,
  key: Uint8Array,
  packed: PackedRecords,
  order: Uint32Array,
  k: number,
  end = order.length,
  maxBytes = Infinity,
): number {
  const { hashes, records, from, to } = packed;
  if (puts.putRecords) {
    const first = k;
    for (let bytes = 0; k < end && bytes < maxBytes; k++) {
      const i = order[k]!;
      bytes += TREE_KEY_LENGTH + to[i]! - from[i]!;
    }
    puts.putRecords(key.subarray(0, TREE_KEY_HASH_AT), packed, order, first, k);
    return k;
  }
  for (let bytes = 0; k < end && bytes < maxBytes; k++) {
    const i = order[k]!;
    copy32(key, TREE_KEY_HASH_AT, hashes, i * 32);
    const record = records.subarray(from[i]!, to[i]!);
    bytes += TREE_KEY_LENGTH + record.length;
    puts.put(key, record);
  }
  return k;
}

/** Bytes of keys and values put per turn of the event loop (a few milliseconds of puts). */
export const PUT_SLICE_BYTES = 1 << 20;

/**
 * Puts records `from` to `to` of `writes` under their tree keys (batch `gen`, `kind`, hash), in key
 * order (keyOrder: one gen, so the hashes decide): LevelDB
 * inserts each write into its memtable, a skip list, and in key order each insert starts next to
 * the one before. Visiting 170k records in key order in their packed buffers jumps around far less
 * than visiting as many objects on the heap would (several cache misses per put). The puts run a
 * slice of PUT_SLICE_BYTES per turn, so that a tree of 100k records does not hold the event loop
 * for as long as they take; `stopped` is asked before each slice.
 */
export async function putSorted(
  puts: BatchPuts,
  gen: number,
  kind: number,
  writes: NodeWrites,
  from: number,
  to: number,
  stopped: () => boolean = () => false,
): Promise<void> {
  if (from >= to) return;
  // The range as a list of its own: its hashes, and the offsets of its records in the whole buffer.
  // The views stay valid while the list grows (NodeWrites never writes a buffer it handed out).
  const all = writes.packed();
  const packed: PackedRecords = {
    hashes: all.hashes.subarray(from * 32, to * 32),
    records: all.records,
    from: all.from.subarray(from, to),
    to: all.to.subarray(from, to),
  };
  const key = new Uint8Array(TREE_KEY_LENGTH);
  setTreeKeyHead(key, gen, kind);
  const order = keyOrder(packed.hashes);
  for (let k = 0; k < order.length;) {
    if (k > 0) await yieldToEventLoop();
    if (stopped()) return;
    k = putInOrder(puts, key, packed, order, k, order.length, PUT_SLICE_BYTES);
  }
}
