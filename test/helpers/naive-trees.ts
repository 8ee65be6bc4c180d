import { createRequire } from "node:module";
import { pedersen } from "@scure/starknet";

/**
 * Naive full recomputations of tree roots from a complete leaf set, written from the definitions of
 * committee-algorithms §3 with bigints and @scure/starknet, sharing no code with src/verifier/trees.
 * They serve as the reference the incremental, store-backed trees are checked against.
 */

// A chain of batches recomputed naively repeats most of its hashes from one root to the next: they
// are remembered (a pure function's results), which keeps a recomputation per batch affordable.
const memo = new Map<string, bigint>();
const MEMO_LIMIT = 1_000_000;

/** Pedersen of two field elements, with @scure/starknet. */
export function memoH(a: bigint, b: bigint): bigint {
  const key = `${a.toString(36)}.${b.toString(36)}`;
  let out = memo.get(key);
  if (out === undefined) {
    out = BigInt(pedersen(a, b));
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(key, out);
  }
  return out;
}

const require = createRequire(import.meta.url);
const wasm = require("pedersen-fast") as { pedersen_from_hex(x: string, y: string): string };

/**
 * Pedersen with L2BEAT's pedersen-fast (Rust compiled to WebAssembly), called directly: for trees
 * of thousands of leaves, too many for BigInt Pedersen within a test. Not dacd's code either; the
 * Pedersen vectors pin it like every engine.
 */
export function fastH(a: bigint, b: bigint): bigint {
  return BigInt(wasm.pedersen_from_hex("0x" + a.toString(16), "0x" + b.toString(16)));
}

export type Hash2 = (a: bigint, b: bigint) => bigint;

/** Root of a Merkle tree of `height` holding `leaves` (index → leaf value), others `emptyLeaf`. */
export function naiveMerkleRoot(
  height: number,
  leaves: Map<bigint, bigint>,
  emptyLeaf: bigint,
  H: Hash2 = memoH,
): bigint {
  const empty = [emptyLeaf];
  for (let k = 0; k < height; k++) empty.push(H(empty[k]!, empty[k]!));
  const rec = (h: number, prefix: bigint, ids: bigint[]): bigint => {
    if (ids.length === 0) return empty[h]!;
    if (h === 0) return leaves.get(ids[0]!)!;
    const bit = BigInt(h - 1);
    const left = ids.filter((i) => ((i >> bit) & 1n) === 0n);
    const right = ids.filter((i) => ((i >> bit) & 1n) === 1n);
    return H(rec(h - 1, prefix * 2n, left), rec(h - 1, prefix * 2n + 1n, right));
  };
  return rec(height, 0n, [...leaves.keys()]);
}

type Naive =
  | { kind: "empty" }
  | { kind: "node"; hash: bigint }
  | { kind: "edge"; bottom: bigint; path: bigint; length: number };

/** Root of a Patricia-Merkle tree of `height`; leaves of value 0 are empty. */
export function naivePatriciaRoot(height: number, leaves: Map<bigint, bigint>, H: Hash2 = memoH): bigint {
  const hashOf = (n: Naive): bigint =>
    n.kind === "empty" ? 0n : n.kind === "node" ? n.hash : H(n.bottom, n.path) + BigInt(n.length);
  const rec = (h: number, ids: bigint[]): Naive => {
    if (ids.length === 0) return { kind: "empty" };
    if (h === 0) return { kind: "node", hash: leaves.get(ids[0]!)! };
    const bit = BigInt(h - 1);
    const l = rec(
      h - 1,
      ids.filter((i) => ((i >> bit) & 1n) === 0n),
    );
    const r = rec(
      h - 1,
      ids.filter((i) => ((i >> bit) & 1n) === 1n),
    );
    if (l.kind === "empty" && r.kind === "empty") return l;
    if (l.kind !== "empty" && r.kind !== "empty") return { kind: "node", hash: H(hashOf(l), hashOf(r)) };
    const [child, b] = l.kind === "empty" ? [r, 1n] : [l, 0n];
    if (child.kind === "edge")
      return {
        kind: "edge",
        bottom: child.bottom,
        path: (b << BigInt(child.length)) | child.path,
        length: child.length + 1,
      };
    return { kind: "edge", bottom: hashOf(child), path: b, length: 1 };
  };
  return hashOf(
    rec(
      height,
      [...leaves.entries()].filter(([, v]) => v !== 0n).map(([k]) => k),
    ),
  );
}
