import { ByteChunks } from "../../../util/byte-chunks.js";
import {
  GEN_BYTES,
  HASH_BYTES,
  MAX_CACHED_RECORD_LENGTH,
  readGen,
  writeGen,
} from "../../../storage/records/node-record.js";
import { MISSING_RECORD, type NodeSource, type PackedNodes } from "../../../storage/records/node-source.js";
import { SNAPSHOT_ENTRY_HEAD, TopNodeCacheBase } from "./top-node-cache.js";

/** A slot: hash ‖ gen ‖ record length (1 byte) ‖ record (up to MAX_CACHED_RECORD_LENGTH). */
const LENGTH_AT = HASH_BYTES + GEN_BYTES;
/** Where a slot's record starts. */
const RECORD_AT = LENGTH_AT + 1;
const MAX_RECORD = MAX_CACHED_RECORD_LENGTH;
const SLOT = RECORD_AT + MAX_RECORD;

/**
 * The top node cache (top-node-cache.ts) in JavaScript, where the addon is not loaded (or
 * DACD_NODE_CACHE=js). The native walks, which know where each node they read sits, look up by
 * position first (getPacked).
 *
 * Everything lives in flat typed arrays, so a million cached nodes are a few large buffers rather
 * than millions of objects for the garbage collector to trace, and a lookup touches a few cache
 * lines: node bytes in a slab of fixed-size slots; per tree and depth, an array from index to slot
 * (2^depth entries, allocated when first used); and an open-addressing table from 32 bits of the
 * hash to slot. A table cell whose slot has since been given to another node is stale: lookups
 * pass over it, inserts too, and the table is rebuilt from the slots when it fills up.
 */
export class JsTopNodeCache extends TopNodeCacheBase {
  readonly isNative = false;
  private slab = new Uint8Array(0);
  private used = 0;
  /** Open addressing, linear probing: cell → slot + 1 (0: empty), and the key it was filed under. */
  private table = new Int32Array(1 << 16);
  private keys = new Int32Array(1 << 16);
  private filled = 0;
  /** Where copies of cached records are carved from (copyOut). */
  private readonly copies = new ByteChunks();
  /** tree → depth → index → slot + 1 (0: none). */
  private readonly byPosition = new Map<string, Int32Array[]>();
  /** tree → depth → how many positions hold a slot, and where the last search for one to give up stopped. */
  private readonly held = new Map<string, { count: number[]; cursor: number[] }>();
  /** Slots of forgotten trees' positions, which new positions take first. */
  private readonly freeSlots: number[] = [];

  get size(): number {
    return this.used - this.freeSlots.length;
  }

  get canSnapshot(): boolean {
    return this.levels > 0;
  }

  protected forget(tree: string): void {
    for (const level of this.byPosition.get(tree) ?? [])
      if (level) for (const held of level) if (held !== 0) this.freeSlots.push(held - 1);
    this.byPosition.delete(tree);
    this.held.delete(tree);
  }

  protected viewCalls(source: NodeSource): Pick<NodeSource, "getPacked"> {
    return {
      getPacked: (tree, hashes, positions, gens) => this.getPacked(source, tree, hashes, positions, gens),
    };
  }

  importEntries(tree: string, entries: Uint8Array, maxGen: number): number {
    let count = 0;
    for (let at = 0; at < entries.length; count++) {
      const length = entries[at + SNAPSHOT_ENTRY_HEAD - 1] ?? 0;
      if (entries.length - at < SNAPSHOT_ENTRY_HEAD + length || length > MAX_RECORD)
        throw new RangeError("a node cache entry is cut short or its record too long");
      const depth = entries[at]!;
      const index = readLe32(entries, at + 1);
      const gen = readLe32(entries, at + 37);
      if (
        gen <= maxGen &&
        depth < this.levels &&
        index < 2 ** depth &&
        !this.holdsLater(tree, depth, index, gen)
      ) {
        const slot = this.slotFor(tree, depth, index, entries, at + 5, gen);
        if (slot >= 0) {
          this.slab[slot * SLOT + LENGTH_AT] = length;
          this.slab.set(
            entries.subarray(at + SNAPSHOT_ENTRY_HEAD, at + SNAPSHOT_ENTRY_HEAD + length),
            slot * SLOT + RECORD_AT,
          );
        }
      }
      at += SNAPSHOT_ENTRY_HEAD + length;
    }
    return count;
  }

  private holdsLater(tree: string, depth: number, index: number, gen: number): boolean {
    const slot = (this.byPosition.get(tree)?.[depth]?.[index] ?? 0) - 1;
    return slot >= 0 && readGen(this.slab, slot * SLOT + HASH_BYTES) > gen;
  }

  protected exportChunk(tree: string, cursor: Int32Array, out: Uint8Array): number {
    const levels = this.byPosition.get(tree);
    let at = 0;
    let depth = levels ? cursor[0]! : this.levels;
    let index = cursor[1]!;
    for (; depth < this.levels; depth++, index = 0) {
      const level = levels![depth];
      if (!level) continue;
      for (; index < level.length; index++) {
        const slot = level[index]! - 1;
        if (slot < 0) continue;
        const base = slot * SLOT;
        const length = this.slab[base + LENGTH_AT]!;
        if (at + SNAPSHOT_ENTRY_HEAD + length > out.length) {
          cursor[0] = depth;
          cursor[1] = index;
          return at;
        }
        out[at] = depth;
        writeLe32(out, at + 1, index);
        out.set(this.slab.subarray(base, base + HASH_BYTES), at + 5);
        writeLe32(out, at + 37, readGen(this.slab, base + HASH_BYTES));
        out[at + 41] = length;
        out.set(this.slab.subarray(base + RECORD_AT, base + RECORD_AT + length), at + SNAPSHOT_ENTRY_HEAD);
        at += SNAPSHOT_ENTRY_HEAD + length;
      }
    }
    cursor[0] = depth;
    cursor[1] = 0;
    return at;
  }

  get(hash: Uint8Array, gen: number): Uint8Array | undefined {
    const slot = this.find(hash, 0, gen);
    if (slot < 0) return undefined;
    const at = slot * SLOT;
    // A copy: the slot may be overwritten by a newer node at its position, and the slab regrown.
    return this.copyOut(at + RECORD_AT, this.slab[at + LENGTH_AT]!);
  }

  /** The slot of the node whose hash is at `hash[off]`, of this gen, or −1. */
  private find(hash: Uint8Array, off: number, gen: number): number {
    const mask = this.table.length - 1;
    const key = hashKey(hash, off);
    for (let cell = key & mask; ; cell = (cell + 1) & mask) {
      const entry = this.table[cell]!;
      if (entry === 0) return -1;
      if (this.keys[cell] === key && this.holdsAt(entry - 1, hash, off, gen)) return entry - 1;
    }
  }

  remember(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void {
    if (depth >= this.levels || record.length > MAX_RECORD) return;
    const slot = this.slotFor(tree, depth, index, hash, 0, gen);
    if (slot < 0) return;
    const base = slot * SLOT;
    this.slab[base + LENGTH_AT] = record.length;
    this.slab.set(record, base + RECORD_AT);
  }

  /**
   * The slot for the node whose hash is at `hash[off]`, of this gen, at a position: filed under
   * that hash, its record left for the caller to write. −1 when the position holds that node already.
   */
  private slotFor(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    off: number,
    gen: number,
  ): number {
    let levels = this.byPosition.get(tree);
    if (!levels) this.byPosition.set(tree, (levels = []));
    const level = (levels[depth] ??= new Int32Array(2 ** depth));
    let slot = level[index]! - 1;
    if (slot >= 0) {
      if (this.holdsAt(slot, hash, off, gen)) return -1;
      // The slot now holds the newer node; the old one's table cell goes stale.
    } else {
      slot =
        this.freeSlots.pop() ?? (this.used < this.maxNodes ? this.allocate() : this.takeDeeperSlot(depth));
      if (slot < 0) return -1;
      level[index] = slot + 1;
      const held = this.heldAt(tree);
      held.count[depth] = (held.count[depth] ?? 0) + 1;
    }
    const base = slot * SLOT;
    for (let i = 0; i < 32; i++) this.slab[base + i] = hash[off + i]!;
    writeGen(this.slab, base + 32, gen);
    this.insert(slot);
    return slot;
  }

  private heldAt(tree: string): { count: number[]; cursor: number[] } {
    let held = this.held.get(tree);
    if (!held) this.held.set(tree, (held = { count: [], cursor: [] }));
    return held;
  }

  /**
   * At the node bound, the slot of a node at a deeper level than `depth`, the deepest level first
   * (any tree's), taken from its position: a node nearer the top lies on the paths of more leaves,
   * so it saves more reads per batch. So the bound holds the top levels of every tree, whatever
   * order the nodes came in, and only the deepest kept level is partial (node_cache.c does the
   * same). −1 when no deeper level holds one.
   */
  private takeDeeperSlot(depth: number): number {
    for (let d = this.levels - 1; d > depth; d--)
      for (const [tree, held] of this.held) {
        if (!held.count[d]) continue;
        const level = this.byPosition.get(tree)![d]!;
        let at = held.cursor[d] ?? 0;
        while (level[at] === 0) at = (at + 1) % level.length;
        held.cursor[d] = at;
        held.count[d]!--;
        const slot = level[at]! - 1;
        level[at] = 0;
        return slot;
      }
    return -1;
  }

  rememberPacked(
    tree: string,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void {
    for (let i = 0, at = 0; i < lengths.length; at += lengths[i]!, i++) {
      const depth = positions[2 * i]!;
      const index = positions[2 * i + 1]!;
      const length = lengths[i]!;
      if (index < 0 || depth >= this.levels || length > MAX_RECORD) continue;
      const slot = this.slotFor(tree, depth, index, hashes, i * 32, gens[i]!);
      if (slot < 0) continue;
      const base = slot * SLOT;
      this.slab[base + LENGTH_AT] = length;
      for (let k = 0; k < length; k++) this.slab[base + RECORD_AT + k] = records[at + k]!;
    }
  }

  /**
   * Looks nodes up by position first (one array read and a hash compare, where the table would
   * probe), then by hash; hits are copied straight into the packed result, and the rest come from
   * `source` in one lookup. Nodes below the cached levels are never here: they go to the source
   * without a probe.
   */
  private async getPacked(
    source: NodeSource,
    tree: string,
    hashes: Uint8Array,
    positions: Int32Array,
    gens: Uint32Array,
  ): Promise<PackedNodes> {
    const n = hashes.length >>> 5;
    const lengths = new Uint32Array(n);
    const hitSlots = new Int32Array(n);
    const levels = this.byPosition.get(tree);
    const missing: number[] = [];
    const unplaced: number[] = [];
    let hitBytes = 0;
    for (let i = 0; i < n; i++) {
      const depth = positions[2 * i]!;
      const index = positions[2 * i + 1]!;
      let slot = -1;
      if (index >= 0 && depth < this.levels) {
        const atPosition = (levels?.[depth]?.[index] ?? 0) - 1;
        if (atPosition >= 0 && this.holdsAt(atPosition, hashes, i * 32, gens[i]!)) slot = atPosition;
        else if ((slot = this.find(hashes, i * 32, gens[i]!)) >= 0) unplaced.push(i); // kept under another position
      }
      if (slot < 0) {
        missing.push(i);
        unplaced.push(i);
        continue;
      }
      hitSlots[i] = slot + 1;
      hitBytes += lengths[i] = this.slab[slot * SLOT + LENGTH_AT]!;
    }
    // The hits are copied now: while the store is read, another tree's update may reuse their slots.
    const hits = new Uint8Array(hitBytes);
    for (let i = 0, at = 0; i < n; i++) {
      if (hitSlots[i] === 0) continue;
      const from = (hitSlots[i]! - 1) * SLOT + RECORD_AT;
      for (let k = 0; k < lengths[i]!; k++) hits[at + k] = this.slab[from + k]!;
      at += lengths[i]!;
    }
    if (missing.length === 0) return { records: hits, lengths, unplaced };
    const wanted = new Array<Uint8Array>(missing.length);
    const wantedGens = new Uint32Array(missing.length);
    for (let k = 0; k < missing.length; k++) {
      wanted[k] = hashes.subarray(missing[k]! * 32, missing[k]! * 32 + 32);
      wantedGens[k] = gens[missing[k]!]!;
    }
    const found = await source.getNodes(wanted, wantedGens);
    let bytes = hitBytes;
    for (let k = 0; k < missing.length; k++) {
      const rec = found[k];
      lengths[missing[k]!] = rec === undefined ? MISSING_RECORD : rec.length;
      bytes += rec?.length ?? 0;
    }
    const records = new Uint8Array(bytes);
    for (let i = 0, at = 0, fromHits = 0, k = 0; i < n; i++) {
      if (hitSlots[i] !== 0) {
        for (let b = 0; b < lengths[i]!; b++) records[at + b] = hits[fromHits + b]!;
        fromHits += lengths[i]!;
        at += lengths[i]!;
      } else {
        const rec = found[k++];
        if (rec === undefined) continue;
        records.set(rec, at);
        at += rec.length;
      }
    }
    return { records, lengths, unplaced };
  }

  /**
   * A copy of `length` slab bytes from `at`, carved from a chunk of copies: a cache hit then costs
   * one view rather than an ArrayBuffer of its own (a batch keeps ~150k hits alive while its trees
   * update, and the garbage collector copies each survivor and its buffer).
   */
  private copyOut(at: number, length: number): Uint8Array {
    const out = this.copies.take(length);
    for (let i = 0; i < length; i++) out[i] = this.slab[at + i]!;
    return out;
  }

  /** Whether the slot holds the node whose hash is at `hash[off]`, of this gen. */
  private holdsAt(slot: number, hash: Uint8Array, off: number, gen: number): boolean {
    const base = slot * SLOT;
    for (let i = 0; i < 32; i++) if (this.slab[base + i] !== hash[off + i]) return false;
    return readGen(this.slab, base + 32) === gen;
  }

  /**
   * Puts a slot's node in the table, in the first empty cell of its probe sequence. Stale cells are
   * passed over rather than reused: telling one apart means reading its slot (a cache miss in a
   * slab of tens of MiB) for every cell probed; the rebuild drops them all at once instead.
   */
  private insert(slot: number): void {
    if ((this.filled + 1) * 4 > this.table.length * 3) this.rebuild();
    this.place(slot);
  }

  /** A table of twice the live slots' size, from the slots alone. */
  private rebuild(): void {
    const size = Math.max(1 << 16, 2 ** Math.ceil(Math.log2(this.used * 2 + 1)));
    this.table = new Int32Array(size);
    this.keys = new Int32Array(size);
    this.filled = 0;
    for (let slot = 0; slot < this.used; slot++) this.place(slot);
  }

  /** Puts `slot` in the first empty cell of its probe sequence (the table has room). */
  private place(slot: number): void {
    const mask = this.table.length - 1;
    const key = hashKey(this.slab, slot * SLOT);
    let cell = key & mask;
    while (this.table[cell] !== 0) cell = (cell + 1) & mask;
    this.table[cell] = slot + 1;
    this.keys[cell] = key;
    this.filled++;
  }

  /**
   * A new slot at the slab's end. A position, once used, keeps its slot for each newer node there
   * (until its tree is forgotten).
   */
  private allocate(): number {
    if ((this.used + 1) * SLOT > this.slab.length) {
      const grown = new Uint8Array(Math.max(1024 * SLOT, this.slab.length * 2));
      grown.set(this.slab);
      this.slab = grown;
    }
    return this.used++;
  }
}

function readLe32(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

function writeLe32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value & 0xff;
  bytes[at + 1] = (value >>> 8) & 0xff;
  bytes[at + 2] = (value >>> 16) & 0xff;
  bytes[at + 3] = value >>> 24;
}

/** 31 bits of the hash at `off` (hashes are uniform, so any bits will do). */
function hashKey(bytes: Uint8Array, off: number): number {
  return (
    ((bytes[off + 28]! & 0x7f) << 24) | (bytes[off + 29]! << 16) | (bytes[off + 30]! << 8) | bytes[off + 31]!
  );
}
