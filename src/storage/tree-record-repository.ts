import { canGetPacked, getPacked, NOT_FOUND } from "./level-binding.js";
import {
  setTreeKeyHead,
  TREE_KEY_HASH_AT,
  TREE_KEY_LENGTH,
  TREE_RANGE,
  treeKey,
  treeKeyOrder,
  treeKeyParts,
  TreeKind,
} from "./keys.js";
import type { StoreHandle } from "./store-handle.js";
import type { UnwrittenBatch } from "./unwritten-batch.js";
import { runtimeSettings } from "../config/runtime-settings.js";

/** The fewest lookups one getMany call of a split read is given. */
export const READ_PART_MIN = 256;
/** A tree record's key: a node's (`node`) or a leaf's, by the batch that wrote it and its 32-byte hash. */
export interface TreeRecordKey {
  readonly node: boolean;
  readonly gen: number;
  readonly hash: Uint8Array;
}

/**
 * The trees' nodes and leaves, content-addressed: a record is keyed by the batch that wrote it
 * (its gen) and its hash. Reads see the batches still being written (`unwritten`, the commits')
 * as if LevelDB held them. Reached as `store.trees`; the records are written by the commits and
 * the bulk writer.
 */
export class TreeRecordRepository {
  constructor(
    private readonly handle: StoreHandle,
    private readonly unwritten: ReadonlyMap<number, UnwrittenBatch>,
  ) {}

  /**
   * The records of nodes: `hashes[i]` written by batch `gens[i]`. One getMany runs its lookups one
   * after another on one libuv thread; a large read is split so that several threads look up at once.
   */
  nodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return this.records(TreeKind.node, hashes, gens);
  }

  /** The records of leaves: `hashes[i]` written by batch `gens[i]`. */
  leaves(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return this.records(TreeKind.leaf, hashes, gens);
  }

  private async records(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    if (gens.length !== hashes.length) throw new RangeError("a gen for every hash is needed");
    if (this.unwritten.size > 0) return this.recordsBesideUnwritten(kind, hashes, gens);
    return this.readRecords(kind, hashes, gens);
  }

  /** records while batches are being written: their gens' records come from memory. */
  private async recordsBesideUnwritten(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    const out = new Array<Uint8Array | undefined>(hashes.length);
    const stored: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const batch = this.unwritten.get(gens[i]!);
      if (batch) out[i] = batch.find(kind, hashes[i]!);
      else stored.push(i);
    }
    if (stored.length === hashes.length) return this.readRecords(kind, hashes, gens);
    const found = await this.readRecords(
      kind,
      stored.map((i) => hashes[i]!),
      stored.map((i) => gens[i]!),
    );
    for (let k = 0; k < stored.length; k++) out[stored[k]!] = found[k];
    return out;
  }

  /** Tree records from LevelDB. */
  private async readRecords(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    if (hashes.length === 0) return [];
    // Looked up in key order (treeKeyOrder), the keys packed in one buffer.
    const order = treeKeyOrder(hashes, gens);
    const keyBytes = new Uint8Array(order.length * TREE_KEY_LENGTH);
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!;
      const at = k * TREE_KEY_LENGTH;
      setTreeKeyHead(keyBytes.subarray(at, at + TREE_KEY_LENGTH), gens[i]!, kind);
      keyBytes.set(hashes[i]!, at + TREE_KEY_HASH_AT);
    }
    const out = new Array<Uint8Array | undefined>(hashes.length);
    const parts = await this.lookUpPacked(keyBytes);
    for (let part = 0, k = 0; part < parts.length; part++) {
      const { values, ends } = parts[part]!;
      for (let j = 0, at = 0; j < ends.length; j++, k++) {
        const end = ends[j]!;
        if (end === NOT_FOUND) continue;
        out[order[k]!] = values.subarray(at, end);
        at = end;
      }
    }
    return out;
  }

  /**
   * Looks up the keys packed in `keyBytes` (TREE_KEY_LENGTH bytes each): the values found one after
   * the other, and where each key's ends (getPacked's answer): in one part, or when the keys are
   * many in up to one range of consecutive keys per thread, looked up side by side. Through dacd's
   * binding where it is loaded (level-binding.ts); else through getMany, whose records, a Buffer
   * each, are copied into one buffer: the trees keep them until their update ends, and the young
   * generation would copy so many objects again and again.
   */
  private async lookUpPacked(keyBytes: Uint8Array): Promise<{ values: Uint8Array; ends: Uint32Array }[]> {
    const { db } = this.handle;
    const count = keyBytes.length / TREE_KEY_LENGTH;
    // One range per thread of libuv's pool, where each lookup runs (why 16: util/threadpool.ts).
    const threads = runtimeSettings().threadpoolSize;
    const partCount = Math.max(1, Math.min(threads, Math.floor(count / READ_PART_MIN)));
    const ranges = Array.from({ length: partCount }, (_, j) =>
      keyBytes.subarray(
        Math.floor((count * j) / partCount) * TREE_KEY_LENGTH,
        Math.floor((count * (j + 1)) / partCount) * TREE_KEY_LENGTH,
      ),
    );
    // Tree records never fill LevelDB's block cache. The lookups below the node cache land on
    // random blocks of a store far larger than the block cache, so a block kept there would only
    // evict another before it is asked for again, while each insert and eviction (a lock, an
    // allocation and a free) is paid on every lookup served by pread, in the tables LevelDB does
    // not memory-map. Memory-mapped tables' blocks are never cached, so nothing changes for them.
    const reads = { ...this.handle.reads, fillCache: false };
    if (getPacked && canGetPacked(db, reads)) {
      const get = getPacked;
      return Promise.all(ranges.map((keys) => get(db, keys, TREE_KEY_LENGTH, reads)));
    }
    return Promise.all(
      ranges.map(async (packedKeys) => {
        // The keys are views of one buffer (classic-level copies each key when called).
        const keys = Array.from({ length: packedKeys.length / TREE_KEY_LENGTH }, (_, k) =>
          packedKeys.subarray(k * TREE_KEY_LENGTH, (k + 1) * TREE_KEY_LENGTH),
        );
        const found = await db.getMany(keys, reads);
        let bytes = 0;
        for (const record of found) if (record) bytes += record.length;
        const values = new Uint8Array(bytes);
        const ends = new Uint32Array(found.length);
        for (let k = 0, at = 0; k < found.length; k++) {
          const record = found[k];
          if (!record) ends[k] = NOT_FOUND;
          else {
            values.set(record, at);
            ends[k] = at += record.length;
          }
        }
        return { values, ends };
      }),
    );
  }

  /**
   * Which tree records the store holds (by gen, then nodes and leaves in hash order), for the prune's
   * sweep, which deletes those that no kept batch reaches with delete. `hash` is a copy.
   */
  async *keys(): AsyncGenerator<TreeRecordKey> {
    for await (const k of this.handle.db.keys({ ...TREE_RANGE, ...this.handle.reads })) {
      if (k.length !== TREE_KEY_LENGTH) continue; // a retire key
      const { gen, kind, hash } = treeKeyParts(k);
      yield { node: kind === TreeKind.node, gen, hash: hash.slice() };
    }
  }

  /**
   * Deletes tree node and leaf records in one write, not fsynced: a deleted record that comes back
   * after a crash is only space.
   */
  async delete(records: readonly TreeRecordKey[]): Promise<void> {
    this.handle.writable();
    if (records.length === 0) return;
    await this.handle.db.batch(
      records.map((r) => ({
        type: "del" as const,
        key: treeKey(r.gen, r.node ? TreeKind.node : TreeKind.leaf, r.hash),
      })),
    );
  }
}
