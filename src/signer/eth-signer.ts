/**
 * The member signer for Ethereum-kind base chains: secp256k1 ECDSA directly over the 32-byte claim
 * hash (no "\x19Ethereum Signed Message" prefix, no further hashing), RFC 6979 nonce, low s, posted
 * as `0x` ‖ r(32) ‖ s(32) ‖ v(1) with v = 27 + recovery id — the form `ecrecover` takes.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { DacdError } from "../errors.js";
import type { Signer } from "./signer.js";

/** EIP-55 mixed-case checksum of a 20-byte address given as hex (with or without 0x). */
export function toChecksumAddress(address: string): string {
  const lower = (
    address.startsWith("0x") || address.startsWith("0X") ? address.slice(2) : address
  ).toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(lower)) throw new RangeError("address must be 20 bytes of hex");
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = (hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    const ch = lower[i]!;
    out += nibble >= 8 ? ch.toUpperCase() : ch;
  }
  return out;
}

/** Checksummed address of an uncompressed (65-byte, 0x04-prefixed) secp256k1 public key. */
export function addressFromUncompressed(pub: Uint8Array): string {
  return toChecksumAddress(Buffer.from(keccak_256(pub.subarray(1)).subarray(12)).toString("hex"));
}

/** Checksummed Ethereum address of a secp256k1 private key. */
export function ethAddressFromPrivateKey(privateKey: Uint8Array): string {
  return addressFromUncompressed(secp256k1.getPublicKey(privateKey, false));
}

export function isValidEthPrivateKey(privateKey: Uint8Array): boolean {
  return (
    privateKey instanceof Uint8Array &&
    privateKey.length === 32 &&
    secp256k1.utils.isValidSecretKey(privateKey)
  );
}

function assertClaim(claim: Uint8Array): void {
  if (!(claim instanceof Uint8Array) || claim.length !== 32)
    throw new RangeError("claim hash must be 32 bytes");
}

export class EthSigner implements Signer {
  readonly chainKind = "ethereum" as const;
  readonly custody = "file" as const;
  readonly memberKey: string;
  readonly #key: Uint8Array;

  constructor(privateKey: Uint8Array) {
    if (!isValidEthPrivateKey(privateKey))
      throw new DacdError("CONFIG", "private key is not a valid secp256k1 key (need 32 bytes, 0 < k < n)");
    this.#key = Uint8Array.from(privateKey);
    this.memberKey = ethAddressFromPrivateKey(this.#key);
  }

  sign(claimHash: Uint8Array): string {
    assertClaim(claimHash);
    // noble v2 'recovered' format is recovery(1) ‖ r(32) ‖ s(32); lowS and RFC 6979 are the defaults,
    // stated here so a library default change cannot silently alter posted signatures.
    const sig = secp256k1.sign(claimHash, this.#key, {
      prehash: false,
      lowS: true,
      extraEntropy: false,
      format: "recovered",
    });
    const out = new Uint8Array(65);
    out.set(sig.subarray(1, 65), 0);
    out[64] = 27 + sig[0]!;
    return "0x" + Buffer.from(out).toString("hex");
  }

  toJSON(): { chainKind: "ethereum"; memberKey: string } {
    return { chainKind: this.chainKind, memberKey: this.memberKey };
  }
}

/**
 * The checksummed address that produced `sigHex` (65 bytes r ‖ s ‖ v, v in {27, 28} or {0, 1}) over
 * the 32-byte claim. Throws RangeError on a malformed signature.
 */
export function recoverAddress(claim: Uint8Array, sigHex: string): string {
  assertClaim(claim);
  const digits = sigHex.startsWith("0x") || sigHex.startsWith("0X") ? sigHex.slice(2) : sigHex;
  if (!/^[0-9a-fA-F]{130}$/.test(digits)) throw new RangeError("signature must be 65 bytes of hex");
  const raw = Buffer.from(digits, "hex");
  const v = raw[64]!;
  const recovery = v >= 27 ? v - 27 : v;
  if (recovery !== 0 && recovery !== 1) throw new RangeError(`signature has invalid v ${v}`);
  const recovered = new Uint8Array(65);
  recovered[0] = recovery;
  recovered.set(raw.subarray(0, 64), 1);
  const pub = secp256k1.recoverPublicKey(recovered, claim, { prehash: false });
  return addressFromUncompressed(secp256k1.Point.fromBytes(pub).toBytes(false));
}
