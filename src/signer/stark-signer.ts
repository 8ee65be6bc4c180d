/**
 * The member signer for Starknet-kind base chains: STARK-curve ECDSA (@scure/starknet) over the claim
 * hash mapped into the range the curve's signer accepts, posted as {r, s} hex; member_key is the
 * public key's x coordinate (the "STARK key").
 */
import * as starknet from "@scure/starknet";
import { DacdError } from "../errors.js";
import { bytesToBigint } from "../util/bytes.js";
import type { Signer } from "./signer.js";

/** The STARK curve order n: a private key k is valid iff 0 < k < n. */
export const STARK_CURVE_ORDER = 0x800000000000010ffffffffffffffffb781126dcae7b2321e66a241adc64d2fn;

const MASK_251 = (1n << 251n) - 1n;

/**
 * THE rule mapping a 32-byte claim hash to the STARK message that is signed — used for both signing
 * and verification; change it nowhere else.
 *
 * message = claim (as a big-endian 256-bit integer) mod 2^251, i.e. its low 251 bits.
 *
 * Why not "mod the field prime p": @scure/starknet's `sign`/`verify` (like StarkWare's reference
 * signer and Cairo's ECDSA check) require msgHash < 2^251, and p = 2^251 + 17·2^192 + 1 is above that,
 * so a value reduced mod p could still be rejected. Keeping the low 251 bits always lands in
 * [0, 2^251) ⊂ [0, p), is total (never fails), and costs only 5 bits of the 256-bit hash.
 */
export function starknetMessageFromClaim(claim: Uint8Array): bigint {
  if (!(claim instanceof Uint8Array) || claim.length !== 32)
    throw new RangeError("claim hash must be 32 bytes");
  return bytesToBigint(claim) & MASK_251;
}

function msgHex(claim: Uint8Array): string {
  return "0x" + starknetMessageFromClaim(claim).toString(16);
}

export function isValidStarkPrivateKey(privateKey: Uint8Array): boolean {
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32) return false;
  const k = bytesToBigint(privateKey);
  return k > 0n && k < STARK_CURVE_ORDER;
}

export class StarkSigner implements Signer {
  readonly chainKind = "starknet" as const;
  readonly custody = "file" as const;
  readonly memberKey: string;
  readonly #key: Uint8Array;

  constructor(privateKey: Uint8Array) {
    if (!isValidStarkPrivateKey(privateKey))
      throw new DacdError(
        "CONFIG",
        "private key is not a valid STARK key (need 32 bytes, 0 < k < curve order)",
      );
    this.#key = Uint8Array.from(privateKey);
    this.memberKey = starknet.getStarkKey(this.#key);
  }

  sign(claimHash: Uint8Array): { r: string; s: string } {
    const sig = starknet.sign(msgHex(claimHash), this.#key);
    return { r: "0x" + sig.r.toString(16), s: "0x" + sig.s.toString(16) };
  }

  toJSON(): { chainKind: "starknet"; memberKey: string } {
    return { chainKind: this.chainKind, memberKey: this.memberKey };
  }
}

function parseHexBigint(s: string): bigint | null {
  if (typeof s !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(s)) return null;
  return BigInt(s);
}

/**
 * Whether {r, s} is a valid signature of the claim by the STARK key `publicKeyHex` (x coordinate only).
 * Either point with that x is accepted, as Cairo's ECDSA check does. Never throws on bad input.
 */
export function verifyStarkSignature(
  claim: Uint8Array,
  sig: { r: string; s: string },
  publicKeyHex: string,
): boolean {
  try {
    const r = parseHexBigint(sig.r);
    const s = parseHexBigint(sig.s);
    const x = parseHexBigint(publicKeyHex);
    if (r === null || s === null || x === null) return false;
    const signature = new starknet.Signature(r, s);
    const msg = msgHex(claim);
    const xHex = x.toString(16).padStart(64, "0");
    for (const prefix of ["02", "03"]) {
      let pub: Uint8Array;
      try {
        pub = starknet.Point.fromHex(prefix + xHex).toBytes(false);
      } catch {
        return false; // x is not on the curve
      }
      if (starknet.verify(signature, msg, pub)) return true;
    }
    return false;
  } catch {
    return false;
  }
}
