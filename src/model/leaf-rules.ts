/**
 * The rules every leaf obeys wherever it enters dacd (the gateway's JSON, a dump, a reference
 * archive, a proof's leaf) and the encodings that turn a position into the words the trees and the
 * on-chain verifier hash (docs/escape-formats.md, "Perpetual"). The readers differ in syntax and in
 * how they name a bad field; the ranges and the checks are these, so a value one path refuses no
 * other path takes. (src/escape/onchain/check.ts keeps its own copy on purpose: it is the
 * independent checker.) The leaves are typed by shape here, not with state-update.ts's types: that
 * module names trees (profile.ts), and profile.ts takes its bounds from here.
 */

interface VaultLeaf {
  readonly key: bigint;
  readonly token: bigint;
  readonly balance: bigint;
}
interface PositionAsset {
  readonly assetId: bigint;
  readonly balance: bigint;
  readonly fundingIndex: bigint;
}
interface PositionLeaf {
  readonly collateral: bigint;
  readonly assets: readonly PositionAsset[];
}

/**
 * 2^63: signed 64-bit quantities (balances, funding indices, collateral) lie in [−2^63, 2^63), and
 * adding it (the bias) makes them the unsigned 64-bit numbers the encodings pack. A spot amount
 * lies in [0, 2^63).
 */
export const B63 = 1n << 63n;
/** 2^64: a perpetual order's fulfilled amount is unsigned 64-bit. */
export const B64 = 1n << 64n;
/** An asset id is below 2^120. */
export const ASSET_ID_LIMIT = 1n << 120n;
/** A position holds fewer than 2^16 assets (the count is 16 bits of its last word). */
export const MAX_ASSETS = 1 << 16;

/**
 * The longest hex number a leaf field may be written with: 64 digits (a field element fits; more
 * digits would be leading zeros, and an unbounded number costs time to parse).
 */
export const MAX_HEX_DIGITS = 64;
/** The longest decimal number a leaf field may be written with (leading zeros included). */
export const MAX_DECIMAL_DIGITS = 80;

/** A half-open range [min, max) of a leaf field. */
export interface Range {
  readonly min: bigint;
  readonly max: bigint;
}

/** A signed 64-bit quantity: a position's collateral, an asset's balance and cached funding index. */
export const SIGNED_64: Range = { min: -B63, max: B63 };
/** A vault's balance. */
export const VAULT_BALANCE: Range = { min: 0n, max: B63 };
/** An asset id. */
export const ASSET_ID: Range = { min: 0n, max: ASSET_ID_LIMIT };

export function inRange(v: bigint, r: Range): boolean {
  return v >= r.min && v < r.max;
}

export function isSigned64(v: bigint): boolean {
  return inRange(v, SIGNED_64);
}

/**
 * The field of a vault that breaks the rules, and why, or undefined: a vault with a balance names a
 * key and a token (neither is 0).
 */
export function vaultProblem(v: VaultLeaf): { field: "key" | "token"; message: string } | undefined {
  if (v.balance > 0n && v.key === 0n) return { field: "key", message: "is 0 in a vault with a balance" };
  if (v.balance > 0n && v.token === 0n) return { field: "token", message: "is 0 in a vault with a balance" };
  return undefined;
}

/** Refuses (through `refuse`) a position of `n` assets when it is too many. */
export function checkAssetCount(n: number, refuse: (message: string) => never): void {
  if (n >= MAX_ASSETS) refuse(`${n} assets; a position holds fewer than ${MAX_ASSETS}`);
}

/**
 * A position's assets as its leaf holds them: ascending by id, each id once, fewer than
 * MAX_ASSETS. `refuse` is called with the reason when they are not (it throws, naming where).
 * Two spellings of one id (0x1 and 0x01) would make the leaf ambiguous: they are refused.
 */
export function sortAssets<A extends PositionAsset>(assets: A[], refuse: (message: string) => never): A[] {
  checkAssetCount(assets.length, refuse);
  assets.sort((x, y) => (x.assetId < y.assetId ? -1 : x.assetId > y.assetId ? 1 : 0));
  for (let i = 1; i < assets.length; i++)
    if (assets[i]!.assetId === assets[i - 1]!.assetId) refuse(`asset id ${assets[i]!.assetId} appears twice`);
  return assets;
}

/** An asset's word in the position's hash chain: asset id << 128 | biased funding << 64 | biased balance. */
export function assetWord(a: PositionAsset): bigint {
  return (a.assetId << 128n) | ((a.fundingIndex + B63) << 64n) | (a.balance + B63);
}

/** A position's last word in its hash chain: biased collateral << 16 | asset count. */
export function collateralWord(p: PositionLeaf): bigint {
  return ((p.collateral + B63) << 16n) | BigInt(p.assets.length);
}
