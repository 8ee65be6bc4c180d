/** The STARK field prime p = 2^251 + 17·2^192 + 1. */
export const FIELD_PRIME = 2n ** 251n + 17n * 2n ** 192n + 1n;

/** The prime as 32 big-endian bytes, for range checks on raw buffers. */
export const FIELD_PRIME_BYTES: Uint8Array = (() => {
  const out = new Uint8Array(32);
  let v = FIELD_PRIME;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
})();

/** True when the 32-byte big-endian value at `offset` is below the field prime. */
export function isBelowPrime(buf: Uint8Array, offset = 0): boolean {
  for (let i = 0; i < 32; i++) {
    const a = buf[offset + i]!;
    const b = FIELD_PRIME_BYTES[i]!;
    if (a !== b) return a < b;
  }
  return false;
}
