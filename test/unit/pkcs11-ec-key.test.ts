import { secp256k1 } from "@noble/curves/secp256k1.js";
import { describe, expect, it } from "vitest";
import { ethAddressFromPrivateKey, recoverAddress } from "../../src/signer/eth-signer.js";
import {
  addressOfPoint,
  checkSecp256k1Params,
  postedSignature,
  SECP256K1_EC_PARAMS,
  unwrapEcPoint,
} from "../../src/signer/pkcs11/ec-key.js";

const key = new Uint8Array(32).fill(0x22);
const point = secp256k1.getPublicKey(key, false);
const N = secp256k1.Point.CURVE().n;

describe("PKCS#11 EC key handling", () => {
  it("accepts secp256k1's OID only, naming a P-256 key", () => {
    expect(() => checkSecp256k1Params(SECP256K1_EC_PARAMS, "k")).not.toThrow();
    const p256 = Buffer.from("06082a8648ce3d030107", "hex");
    expect(() => checkSecp256k1Params(p256, "k")).toThrow(/is on P-256 \(prime256v1\), not secp256k1/);
  });

  it("unwraps CKA_EC_POINT (DER OCTET STRING or bare) to the address of the key", () => {
    const der = Buffer.concat([Buffer.from([0x04, 0x41]), point]);
    expect(unwrapEcPoint(der, "k")).toEqual(point);
    expect(unwrapEcPoint(point, "k")).toEqual(point);
    expect(addressOfPoint(unwrapEcPoint(der, "k"))).toBe(ethAddressFromPrivateKey(key));
    expect(() => unwrapEcPoint(Buffer.from([0x04, 0x02, 0x04, 0x01]), "k")).toThrow(/not on secp256k1/);
  });

  it("makes a raw r ‖ s low-s and recoverable, and refuses another key's signature", () => {
    const claim = new Uint8Array(32).fill(0x5a);
    const sig = secp256k1.Signature.fromBytes(
      secp256k1.sign(claim, key, { prehash: false, lowS: true }),
      "compact",
    );
    const high = new secp256k1.Signature(sig.r, N - sig.s).toBytes("compact");
    for (const raw of [sig.toBytes("compact"), high]) {
      const posted = postedSignature(raw, claim, point);
      expect(recoverAddress(claim, posted)).toBe(ethAddressFromPrivateKey(key));
      expect(BigInt("0x" + posted.slice(66, 130))).toBe(sig.s);
    }
    const other = secp256k1.getPublicKey(new Uint8Array(32).fill(0x33), false);
    expect(() => postedSignature(high, claim, other)).toThrow(/does not recover to the member key/);
  });
});
