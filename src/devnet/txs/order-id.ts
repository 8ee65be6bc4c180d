import { keccak_256 } from "@noble/hashes/sha3.js";

/**
 * Devnet rule for order ids: keccak-256 of the order's signed fields (a tag and the values in a fixed
 * order, joined by commas), reduced modulo 2^height so the id is a leaf of the order tree. The same
 * order always gets the same id, so a replayed order finds its fulfilled amount.
 */
export function orderId(tag: string, parts: readonly (bigint | number | string)[], height: number): bigint {
  const text = [tag, ...parts.map((p) => p.toString())].join(",");
  const h = keccak_256(new TextEncoder().encode(text));
  return BigInt("0x" + Buffer.from(h).toString("hex")) % (1n << BigInt(height));
}
