/**
 * What a PKCS#11 token gives for an EC key, turned into what an Ethereum-kind member posts: the
 * curve (CKA_EC_PARAMS) checked to be secp256k1, the public point (CKA_EC_POINT) unwrapped, and a
 * raw CKM_ECDSA signature (r ‖ s) made into the 65-byte r ‖ s ‖ v form with a low s.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { DacdError } from "../../errors.js";
import { addressFromUncompressed } from "../eth-signer.js";

/** DER of the OID 1.3.132.0.10 (secp256k1), as CKA_EC_PARAMS holds it (namedCurve). */
export const SECP256K1_EC_PARAMS = Uint8Array.from([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a]);

const KNOWN_CURVES: Record<string, string> = {
  "06082a8648ce3d030107": "P-256 (prime256v1)",
  "06052b81040022": "P-384 (secp384r1)",
  "06052b81040023": "P-521 (secp521r1)",
};

/** Refuses (CONFIG) a key on any curve but secp256k1, naming the curve when it is a common one. */
export function checkSecp256k1Params(params: Uint8Array, keyLabel: string): void {
  if (Buffer.from(params).equals(SECP256K1_EC_PARAMS)) return;
  const hex = Buffer.from(params).toString("hex");
  const name = KNOWN_CURVES[hex] ?? `EC parameters 0x${hex.slice(0, 64)}`;
  throw new DacdError(
    "CONFIG",
    `the token key ${JSON.stringify(keyLabel)} is on ${name}, not secp256k1 (OID 1.3.132.0.10): an Ethereum-kind member needs a secp256k1 key`,
  );
}

/**
 * The uncompressed point (0x04 ‖ x ‖ y) of CKA_EC_POINT: a DER OCTET STRING around it, as the
 * standard says, or the bare point, as some tokens return; anything not on secp256k1 is refused.
 */
export function unwrapEcPoint(value: Uint8Array, keyLabel: string): Uint8Array {
  let point = value;
  if (value[0] === 0x04 && value.length >= 2 && value[1] === value.length - 2 && value.length !== 65)
    point = value.subarray(2);
  try {
    return secp256k1.Point.fromBytes(point).toBytes(false);
  } catch {
    throw new DacdError(
      "CONFIG",
      `the token key ${JSON.stringify(keyLabel)} has a public point that is not on secp256k1`,
    );
  }
}

/** The checksummed Ethereum address of an uncompressed secp256k1 point. */
export function addressOfPoint(point: Uint8Array): string {
  return addressFromUncompressed(point);
}

/**
 * The posted form (0x ‖ r ‖ s ‖ v, v = 27 + recovery id) of a raw CKM_ECDSA signature over
 * `claim`: s is taken into the lower half (an HSM does not do it, and Ethereum's ecrecover
 * callers refuse a high s), and the recovery id is the one that recovers `point`. Throws when
 * neither does, so a signature by another key never leaves.
 */
export function postedSignature(raw: Uint8Array, claim: Uint8Array, point: Uint8Array): string {
  if (raw.length !== 64) throw new RangeError(`CKM_ECDSA returned ${raw.length} bytes, not r ‖ s (64)`);
  let sig = secp256k1.Signature.fromBytes(raw, "compact");
  if (sig.hasHighS()) sig = new secp256k1.Signature(sig.r, secp256k1.Point.CURVE().n - sig.s);
  const want = Buffer.from(point);
  for (const recovery of [0, 1]) {
    let recovered: Uint8Array;
    try {
      recovered = sig.addRecoveryBit(recovery).recoverPublicKey(claim).toBytes(false);
    } catch {
      continue;
    }
    if (!want.equals(recovered)) continue;
    const out = new Uint8Array(65);
    out.set(sig.toBytes("compact"), 0);
    out[64] = 27 + recovery;
    return "0x" + Buffer.from(out).toString("hex");
  }
  throw new RangeError("the token's signature does not recover to the member key");
}
