import { createHash } from "node:crypto";
import { isBelowPrime } from "../src/model/field.js";

/**
 * n deterministic field elements below p, packed 32 bytes each: SHA-256 in counter mode with the
 * top bits masked. Shared by the engine benchmark and the engine tests.
 */
export function packedFieldElements(n: number, seed: string): Uint8Array {
  const out = new Uint8Array(n * 32);
  for (let i = 0; i < n; i++) {
    const h = createHash("sha256").update(`${seed}:${i}`).digest();
    h[0] = h[0]! & 0x0f;
    if (!isBelowPrime(h)) h[0] = h[0]! & 0x07;
    out.set(h, i * 32);
  }
  return out;
}
