import { keccak_256 } from "@noble/hashes/sha3.js";

/**
 * An Ethereum address as configuration takes it: 0x and 40 hex digits; in mixed case, the EIP-55
 * checksum must hold (a mistyped digit is then caught), all lower or all upper case carry none.
 */
export function isAddress(s: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(s)) return false;
  const digits = s.slice(2);
  if (digits === digits.toLowerCase() || digits === digits.toUpperCase()) return true;
  return toChecksumAddress(s) === s;
}

/** EIP-55: a letter is upper case where the nibble of keccak256(lower-case hex) at its place is ≥ 8. */
export function toChecksumAddress(s: string): string {
  const lower = s.slice(2).toLowerCase();
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = (hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    out += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  }
  return out;
}
