import { FIELD_PRIME } from "../../model/field.js";

/**
 * The word layout both StarkEx escape verifiers read (docs/escape-formats.md, "Words and
 * rows"): a row of two field elements is the 512-bit big-endian number left ‖ right ‖ 8 zero bits,
 * handed to the contract as its high and low 256-bit words. The right value straddles the two
 * words, so nothing is 32-byte aligned.
 */

export type Row = readonly [left: bigint, right: bigint];

/** The path part of an on-chain proof: what a dacd-proof/1 Merkle proof holds, with its nodes. */
export interface MerklePath {
  /** The leaf's index in its tree. */
  readonly index: bigint;
  /** nodes[k] is the path's node at level k: nodes[0] the leaf hash, nodes[height] the root. */
  readonly nodes: readonly bigint[];
  /** siblings[k] is nodes[k]'s sibling, leaf level first (height entries). */
  readonly siblings: readonly bigint[];
}

const LOW_248 = (1n << 248n) - 1n;
/** The index field of the last row is 248 bits wide (4 zero bits sit above it). */
export const INDEX_LIMIT = 1n << 248n;

function fieldElement(v: bigint, what: string): bigint {
  if (v < 0n || v >= FIELD_PRIME) throw new RangeError(`${what} is not a field element`);
  return v;
}

/** A row's two words: w0 = left << 4 | right >> 248, w1 = (right mod 2^248) << 8. */
export function rowWords(row: Row, at = 0): [bigint, bigint] {
  const l = fieldElement(row[0], `row ${at} left`);
  const r = fieldElement(row[1], `row ${at} right`);
  return [(l << 4n) | (r >> 248n), (r & LOW_248) << 8n];
}

export function rowsToWords(rows: readonly Row[]): bigint[] {
  return rows.flatMap((row, i) => rowWords(row, i));
}

/**
 * The tree part of a proof: one row per level with the path's node and its sibling (the node on
 * the left where the index's bit at that level is 0), then root ‖ `lastIndex`.
 */
export function pathRows(path: MerklePath, lastIndex: bigint): Row[] {
  const height = path.siblings.length;
  if (path.nodes.length !== height + 1)
    throw new RangeError(`a path of height ${height} needs ${height + 1} nodes`);
  if (path.index < 0n || path.index >= 1n << BigInt(height))
    throw new RangeError(`index ${path.index} is outside a tree of height ${height}`);
  if (lastIndex < 0n || lastIndex >= INDEX_LIMIT)
    throw new RangeError(`index ${lastIndex} does not fit the last row's 248 bits`);
  const rows: Row[] = [];
  for (let k = 0; k < height; k++) {
    const node = path.nodes[k]!;
    const sibling = path.siblings[k]!;
    rows.push(((path.index >> BigInt(k)) & 1n) === 1n ? [sibling, node] : [node, sibling]);
  }
  rows.push([path.nodes[height]!, lastIndex]);
  return rows;
}

/** A uint256 as the contracts' tools show it: 0x and 64 lower-case hex digits. */
export function word0x(v: bigint): `0x${string}` {
  return `0x${v.toString(16).padStart(64, "0")}`;
}
