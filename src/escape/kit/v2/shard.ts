import type { PositionLeaf, VaultLeaf } from "../../../model/state-update.js";
import { bitLength, ByteReader, ByteWriter, bytesToBig, KitFormatError } from "./bytes.js";
import { SHARD_MAGIC, type LeafKind } from "./format.js";

/**
 * A shard of a format-2 kit: consecutive non-empty leaves and the sibling hashes their paths
 * need. The leaves share a subtree of height `common` (the highest bit in which the first and last
 * ids differ); the path of that subtree's root to the tree's root is written once (`top`). Below
 * it, each leaf carries the siblings of the levels where its path leaves the previous leaf's
 * (all `common` levels for the first leaf); the levels above those are the previous leaf's. An
 * empty subtree as sibling is one bit, not a hash: the reader knows the empty subtrees' roots.
 *
 * Layout (docs/escape-kit-format.md): "DKS2", kind (0 vault, 1 position), tree height, common,
 * leaf count, the first id (8 bytes); the top levels' bitmap and hashes; then per leaf: the id's
 * distance from the previous id (none for the first), the leaf's fields, its levels' bitmap and
 * hashes.
 */

export type Sibling = Uint8Array | null;

export interface ShardLeafIn {
  readonly id: bigint;
  readonly vault?: VaultLeaf;
  readonly position?: PositionLeaf;
  /** Siblings of levels 0 … m − 1, m = common for the first leaf, else the levels that changed. */
  readonly siblings: readonly Sibling[];
}

export interface ShardIn {
  readonly kind: LeafKind;
  readonly height: number;
  readonly common: number;
  /** Siblings of levels common … height − 1. */
  readonly top: readonly Sibling[];
  readonly leaves: readonly ShardLeafIn[];
}

function writeLevels(w: ByteWriter, siblings: readonly Sibling[]): void {
  const bitmap = new Uint8Array((siblings.length + 7) >> 3);
  siblings.forEach((s, k) => {
    if (s) bitmap[k >> 3]! |= 1 << (k & 7);
  });
  w.bytes(bitmap);
  for (const s of siblings) if (s) w.bytes(s);
}

export function encodeShard(shard: ShardIn): Uint8Array {
  const { leaves, common, height } = shard;
  if (leaves.length === 0) throw new RangeError("a shard holds at least one leaf");
  const w = new ByteWriter();
  w.bytes(Uint8Array.from(SHARD_MAGIC));
  w.u8(shard.kind === "vault" ? 0 : 1);
  w.u8(height);
  w.u8(common);
  w.uint(leaves.length);
  w.id(leaves[0]!.id);
  if (shard.top.length !== height - common) throw new RangeError("the top path needs height − common levels");
  writeLevels(w, shard.top);
  let previous: bigint | undefined;
  for (const leaf of leaves) {
    const levels = previous === undefined ? common : bitLength(previous ^ leaf.id);
    if (previous !== undefined) w.ubig(leaf.id - previous);
    if (leaf.siblings.length !== levels || levels > common)
      throw new RangeError(`leaf ${leaf.id}: ${leaf.siblings.length} siblings, ${levels} levels changed`);
    if (shard.kind === "vault") {
      const v = leaf.vault!;
      w.big(v.key);
      w.big(v.token);
      w.big(v.balance);
    } else {
      const p = leaf.position!;
      w.big(p.publicKey);
      w.signed64(p.collateral);
      w.uint(p.assets.length);
      for (const a of p.assets) {
        w.big(a.assetId);
        w.signed64(a.balance);
        w.signed64(a.fundingIndex);
      }
    }
    writeLevels(w, leaf.siblings);
    previous = leaf.id;
  }
  return w.done();
}

/** A sibling as read: a hash, or null for the empty subtree of its level. */
export type SiblingOut = bigint | null;

export interface ShardLeafOut {
  readonly id: bigint;
  readonly vault?: VaultLeaf;
  readonly position?: PositionLeaf;
  readonly siblings: readonly SiblingOut[];
}

export interface ShardOut {
  readonly kind: LeafKind;
  readonly height: number;
  readonly common: number;
  readonly top: readonly SiblingOut[];
  readonly leaves: readonly ShardLeafOut[];
}

function readLevels(r: ByteReader, n: number): SiblingOut[] {
  const bitmap = r.bytes((n + 7) >> 3);
  const out: SiblingOut[] = [];
  for (let k = 0; k < n; k++) out.push(bitmap[k >> 3]! & (1 << (k & 7)) ? bytesToBig(r.bytes(32)) : null);
  return out;
}

export function decodeShard(bytes: Uint8Array, what: string): ShardOut {
  const r = new ByteReader(bytes, what);
  const magic = r.bytes(4);
  if (SHARD_MAGIC.some((b, i) => magic[i] !== b)) throw new KitFormatError(`${what} is not a kit shard`);
  const kindByte = r.u8();
  if (kindByte > 1) throw new KitFormatError(`${what}: leaf kind ${kindByte}`);
  const kind: LeafKind = kindByte === 0 ? "vault" : "position";
  const height = r.u8();
  const common = r.u8();
  if (height === 0 || height > 64 || common > height)
    throw new KitFormatError(`${what}: tree height ${height}, common subtree ${common}`);
  const count = r.uint();
  if (count === 0) throw new KitFormatError(`${what} holds no leaf`);
  let id = r.id();
  const subtree = id >> BigInt(common);
  const top = readLevels(r, height - common);
  const leaves: ShardLeafOut[] = [];
  for (let j = 0; j < count; j++) {
    let levels = common;
    if (j > 0) {
      const step = r.ubig();
      if (step === 0n) throw new KitFormatError(`${what}: leaf ${id} twice`);
      const next = id + step;
      levels = bitLength(id ^ next);
      id = next;
    }
    if (id >> BigInt(height) !== 0n || id >> BigInt(common) !== subtree)
      throw new KitFormatError(`${what}: leaf ${id} is outside the shard's subtree`);
    let leaf: ShardLeafOut;
    if (kind === "vault") {
      const vault: VaultLeaf = { key: r.big(), token: r.big(), balance: r.big() };
      leaf = { id, vault, siblings: readLevels(r, levels) };
    } else {
      const publicKey = r.big();
      const collateral = r.signed64();
      const n = r.uint();
      const assets = Array.from({ length: n }, () => ({
        assetId: r.big(),
        balance: r.signed64(),
        fundingIndex: r.signed64(),
      }));
      leaf = { id, position: { publicKey, collateral, assets }, siblings: readLevels(r, levels) };
    }
    leaves.push(leaf);
  }
  if (!r.ended) throw new KitFormatError(`${what} has ${bytes.length - r.at} bytes after its last leaf`);
  return { kind, height, common, top, leaves };
}

/** Leaf j's siblings on every level, leaf level first (null: the level's empty subtree). */
export function leafSiblings(shard: ShardOut, j: number): SiblingOut[] {
  const out = new Array<SiblingOut>(shard.height);
  for (let k = 0; k < shard.height - shard.common; k++) out[shard.common + k] = shard.top[k]!;
  // Walking back from leaf j, each level is set by the nearest leaf whose path changed it.
  let filled = 0;
  for (let i = j; i >= 0 && filled < shard.common; i--) {
    const s = shard.leaves[i]!.siblings;
    for (let k = filled; k < s.length; k++) out[k] = s[k]!;
    filled = Math.max(filled, s.length);
  }
  if (filled < shard.common) throw new KitFormatError("a shard's first leaf lacks levels");
  return out;
}
