import { ByteChunks } from "../../../util/byte-chunks.js";
import { bigintToBytes32, bytesToBigint, copy32, writeBigint32 } from "../../../util/bytes.js";
import type { Leaf, OrderLeaf, PositionLeaf, VaultLeaf } from "../../../model/state-update.js";
import type { HashEngine } from "../../hash/engine.js";
import type { LeafKind } from "../../../model/profile.js";
import { assetWord, B63, collateralWord } from "../../../model/leaf-rules.js";

/**
 * Leaf encodings of docs/algorithms.md, Leaves: how a vault, position or order becomes the 32-byte
 * value at the bottom of its tree, and the compact record dacd stores so leaves can be read back
 * (inspection, dumps, proofs). Hashing is done for many leaves at once, one engine call per step.
 */

export const EMPTY_VAULT: VaultLeaf = { key: 0n, token: 0n, balance: 0n };
export const EMPTY_POSITION: PositionLeaf = { publicKey: 0n, collateral: 0n, assets: [] };

export function emptyLeaf(kind: LeafKind): Leaf {
  return kind === "vault" ? EMPTY_VAULT : kind === "position" ? EMPTY_POSITION : 0n;
}

/** A vault with balance 0 is hashed as the empty vault, whatever key and token it names. */
export function normalizeVault(v: VaultLeaf): VaultLeaf {
  return v.balance === 0n ? EMPTY_VAULT : v;
}

/** Packs n 32-byte values into one buffer for an engine call. */
function pack(values: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(values.length * 32);
  for (let i = 0; i < values.length; i++) out.set(values[i]!, i * 32);
  return out;
}

/** Packs n values below 2^256 into one buffer, 32 big-endian bytes each. */
function packBigints(values: readonly bigint[]): Uint8Array {
  const out = new Uint8Array(values.length * 32);
  for (let i = 0; i < values.length; i++) writeBigint32(values[i]!, out, i * 32);
  return out;
}

function unpack(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < buf.length; i += 32) out.push(buf.subarray(i, i + 32));
  return out;
}

export async function hashPairs(
  engine: HashEngine,
  xs: Uint8Array[],
  ys: Uint8Array[],
): Promise<Uint8Array[]> {
  if (xs.length === 0) return [];
  return unpack(await engine.hashMany(pack(xs), pack(ys)));
}

const b32 = bigintToBytes32;

async function hashVaults(engine: HashEngine, vaults: readonly VaultLeaf[]): Promise<Uint8Array[]> {
  return (await hashVaultRecords(engine, vaults)).hashes;
}

/**
 * Vaults' hashes and records (key ‖ token ‖ balance, 96 bytes each, back to back): the hash inputs
 * are the records' fields, so each field is converted from BigInt once for both.
 */
async function hashVaultRecords(
  engine: HashEngine,
  vaults: readonly VaultLeaf[],
): Promise<{ hashes: Uint8Array[]; records: Uint8Array }> {
  const n = vaults.length;
  const records = new Uint8Array(n * VAULT_RECORD_LENGTH);
  if (n === 0) return { hashes: [], records };
  const keys = new Uint8Array(n * 32);
  const tokens = new Uint8Array(n * 32);
  const balances = new Uint8Array(n * 32);
  for (let i = 0; i < n; i++) {
    const v = normalizeVault(vaults[i]!);
    const at = i * VAULT_RECORD_LENGTH;
    writeBigint32(v.key, records, at);
    writeBigint32(v.token, records, at + 32);
    writeBigint32(v.balance, records, at + 64);
    copy32(keys, i * 32, records, at);
    copy32(tokens, i * 32, records, at + 32);
    copy32(balances, i * 32, records, at + 64);
  }
  const inner = await engine.hashMany(keys, tokens);
  return { hashes: unpack(await engine.hashMany(inner, balances)), records };
}

async function hashPositions(engine: HashEngine, positions: readonly PositionLeaf[]): Promise<Uint8Array[]> {
  if (positions.length === 0) return [];
  // The asset chain H(…H(H(0, m1), m2)…, mk) advances one step for every position at once.
  const acc = positions.map(() => b32(0n));
  const maxAssets = positions.reduce((m, p) => Math.max(m, p.assets.length), 0);
  for (let step = 0; step < maxAssets; step++) {
    const which = positions.flatMap((p, i) => (p.assets.length > step ? [i] : []));
    const out = unpack(
      await engine.hashMany(
        pack(which.map((i) => acc[i]!)),
        packBigints(which.map((i) => assetWord(positions[i]!.assets[step]!))),
      ),
    );
    which.forEach((i, k) => (acc[i] = out[k]!));
  }
  const withKey = await engine.hashMany(pack(acc), packBigints(positions.map((p) => p.publicKey)));
  const last = packBigints(positions.map(collateralWord));
  return unpack(await engine.hashMany(withKey, last));
}

/** Hashes many leaves of one kind; the result is in the input's order. */
export async function hashLeaves(
  engine: HashEngine,
  kind: LeafKind,
  leaves: readonly Leaf[],
): Promise<Uint8Array[]> {
  switch (kind) {
    case "vault":
      return hashVaults(engine, leaves as VaultLeaf[]);
    case "position":
      return hashPositions(engine, leaves as PositionLeaf[]);
    case "order":
      return (leaves as OrderLeaf[]).map((v) => b32(v));
  }
}

// ---- stored leaf records -------------------------------------------------------------------------
// Vault: key ‖ token ‖ balance (32 bytes each). Position: public key (32) ‖ collateral + 2^63 (8) ‖
// then per asset: asset id (16) ‖ balance + 2^63 (8) ‖ funding index + 2^63 (8). Orders need no
// record: the leaf is the amount.

function readU64(b: Uint8Array, offset: number): bigint {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(offset);
}

/** A vault's record: key ‖ token ‖ balance, 32 bytes each. */
export const VAULT_RECORD_LENGTH = 96;
/** A position's record: public key (32) ‖ collateral (8), then an asset entry per asset. */
export const POSITION_RECORD_HEAD = 40;
/** A position's asset entry: asset id (16) ‖ balance (8) ‖ funding index (8). */
export const POSITION_ASSET_LENGTH = 32;

/** True when `length` is that of a well-formed leaf record of `kind` (orders have none). */
export function isLeafRecordLength(kind: LeafKind, length: number): boolean {
  if (kind === "vault") return length === VAULT_RECORD_LENGTH;
  if (kind === "position")
    return length >= POSITION_RECORD_HEAD && (length - POSITION_RECORD_HEAD) % POSITION_ASSET_LENGTH === 0;
  return false;
}

/** Where leaf records are carved from: more than 64 bytes each, so an ArrayBuffer each otherwise. */
const leafRecords = new ByteChunks();

/** Written in place into shared chunks: a record per changed leaf makes no temporary arrays. */
export function encodeLeafRecord(kind: LeafKind, leaf: Leaf): Uint8Array | null {
  if (kind === "vault") {
    const v = normalizeVault(leaf as VaultLeaf);
    const rec = leafRecords.take(VAULT_RECORD_LENGTH);
    writeBigint32(v.key, rec, 0);
    writeBigint32(v.token, rec, 32);
    writeBigint32(v.balance, rec, 64);
    return rec;
  }
  if (kind === "position") {
    const p = leaf as PositionLeaf;
    const rec = leafRecords.take(POSITION_RECORD_HEAD + POSITION_ASSET_LENGTH * p.assets.length);
    const view = new DataView(rec.buffer, rec.byteOffset, rec.byteLength);
    writeBigint32(p.publicKey, rec, 0);
    view.setBigUint64(32, p.collateral + B63);
    const id = new Uint8Array(32);
    p.assets.forEach((a, i) => {
      const o = POSITION_RECORD_HEAD + POSITION_ASSET_LENGTH * i;
      writeBigint32(a.assetId, id, 0); // asset ids are below 2^128: their low 16 bytes
      rec.set(id.subarray(16), o);
      view.setBigUint64(o + 16, a.balance + B63);
      view.setBigUint64(o + 24, a.fundingIndex + B63);
    });
    return rec;
  }
  return null;
}

/**
 * Hashes many leaves of one kind and encodes their records (encodeLeafRecord; null for orders),
 * both in the input's order. Vaults' fields are converted once for both.
 */
export async function hashAndEncodeLeaves(
  engine: HashEngine,
  kind: LeafKind,
  leaves: readonly Leaf[],
): Promise<{ hashes: Uint8Array[]; records: (Uint8Array | null)[] }> {
  if (kind === "vault") {
    const { hashes, records } = await hashVaultRecords(engine, leaves as VaultLeaf[]);
    return {
      hashes,
      records: hashes.map((_, i) => records.subarray(i * VAULT_RECORD_LENGTH, (i + 1) * VAULT_RECORD_LENGTH)),
    };
  }
  const hashes = await hashLeaves(engine, kind, leaves);
  return { hashes, records: leaves.map((leaf) => encodeLeafRecord(kind, leaf)) };
}

export function decodeLeafRecord(kind: LeafKind, rec: Uint8Array): Leaf {
  if (kind === "vault") {
    return { key: bytesToBigint(rec, 0), token: bytesToBigint(rec, 32), balance: bytesToBigint(rec, 64) };
  }
  if (kind === "position") {
    const assets = [];
    for (let o = POSITION_RECORD_HEAD; o + POSITION_ASSET_LENGTH <= rec.length; o += POSITION_ASSET_LENGTH) {
      assets.push({
        assetId: bytesToBigint(rec, o, 16),
        balance: readU64(rec, o + 16) - B63,
        fundingIndex: readU64(rec, o + 24) - B63,
      });
    }
    return { publicKey: bytesToBigint(rec, 0), collateral: readU64(rec, 32) - B63, assets };
  }
  return bytesToBigint(rec, 0);
}
