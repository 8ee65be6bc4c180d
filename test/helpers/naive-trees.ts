import { createRequire } from "node:module";
import { Point } from "@scure/starknet";

/**
 * Naive full recomputations of tree roots from a complete leaf set, written from the definitions in
 * docs/algorithms.md (Trees) with bigints and @scure/starknet, sharing no code with src/verifier/trees.
 * They serve as the reference the incremental, store-backed trees are checked against.
 */

/**
 * StarkWare's Pedersen points (the shift point, then the bases of x's low 248 bits, x's high 4
 * bits, y's low 248 bits and y's high 4 bits), the constants @scure/starknet's `pedersen` uses.
 */
const POINTS = [
  [
    0x49ee3eba8c1600700ee1b87eb599f16716b0b1022947733551fde4050ca6804n,
    0x3ca0cfe4b3bc6ddf346d49d06ea0ed34e621062c0e056c1d0405d266e10268an,
  ],
  [
    0x234287dcbaffe7f969c748655fca9e58fa8120b6d56eb0c1080d17957ebe47bn,
    0x3b056f100f96fb21e889527d41f4e39940135dd7a6c94cc6ed0268ee89e5615n,
  ],
  [
    0x4fa56f376c83db33f9dab2656558f3399099ec1de5e3018b7a6932dba8aa378n,
    0x3fa0984c931c9e38113e0c0e47e4401562761f92a7a23b45168f4e80ff5b54dn,
  ],
  [
    0x4ba4cc166be8dec764910f75b45f74b40c690c74709e90f3aa372f0bd2d6997n,
    0x40301cf5c1751f4b971e46c4ede85fcac5c59a5ce5ae7c48151f27b24b219cn,
  ],
  [
    0x54302dcb0e6cc1c6e44cca8f61a63bb2ca65048d53fb325d36ff12c49a58202n,
    0x1b77b3e37d13504b348046268d8ae25ce98ad783c25561a879dcc77e99c2426n,
  ],
].map(([x, y]) => Point.fromAffine({ x: x!, y: y! }));
type CurvePoint = (typeof POINTS)[number];
const [SHIFT, X_LOW, X_HIGH, Y_LOW, Y_HIGH] = POINTS as [
  CurvePoint,
  CurvePoint,
  CurvePoint,
  CurvePoint,
  CurvePoint,
];
const LOW_BITS = (1n << 248n) - 1n;
let precomputed = false;

/**
 * Pedersen of a pair in field elements: shift + x_low·P1 + x_high·P2 + y_low·P3 + y_high·P4, the
 * sum @scure/starknet's `pedersen` adds up bit by bit, as four scalar multiplications on its curve
 * with tables of the fixed bases (several times faster). test/unit/naive-pedersen.test.ts holds it to
 * `pedersen` and the vectors.
 */
export function pedersenPair(x: bigint, y: bigint): bigint {
  if (!precomputed) {
    for (const base of [X_LOW, Y_LOW]) base.precompute(8, false);
    for (const base of [X_HIGH, Y_HIGH]) base.precompute(4, false);
    precomputed = true;
  }
  return SHIFT.add(X_LOW.multiplyUnsafe(x & LOW_BITS))
    .add(X_HIGH.multiplyUnsafe(x >> 248n))
    .add(Y_LOW.multiplyUnsafe(y & LOW_BITS))
    .add(Y_HIGH.multiplyUnsafe(y >> 248n))
    .toAffine().x;
}

// A chain of batches recomputed naively repeats most of its hashes from one root to the next: they
// are remembered (a pure function's results), which keeps a recomputation per batch affordable.
const memo = new Map<string, bigint>();
const MEMO_LIMIT = 1_000_000;

/** Pedersen of two field elements, on @scure/starknet's curve (pedersenPair), remembered. */
export function memoH(a: bigint, b: bigint): bigint {
  const key = `${a.toString(36)}.${b.toString(36)}`;
  let out = memo.get(key);
  if (out === undefined) {
    out = pedersenPair(a, b);
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
