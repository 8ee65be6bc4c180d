import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as starknet from "@scure/starknet";
import { isDacdError } from "../../src/errors.js";
import { createSigner } from "../../src/signer/create-signer.js";
import { EthSigner, recoverAddress, toChecksumAddress } from "../../src/signer/eth-signer.js";
import {
  STARK_CURVE_ORDER,
  StarkSigner,
  starknetMessageFromClaim,
  verifyStarkSignature,
} from "../../src/signer/stark-signer.js";
import { bigintToBytes32, hexToBytes32 } from "../../src/util/bytes.js";

const hex32 = (s: string): Uint8Array => {
  const b = hexToBytes32(s);
  if (!b) throw new Error(`bad hex ${s}`);
  return b;
};

const TEST_KEY = hex32("0xbfb1d570ddf495e378a1a85140e72d177a92637223fa540e05aaa061179f4290");
const TEST_ADDR = "0xb2849CBc25853685bfc4815Ab51d28E810606A48";

function expectConfigError(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(isDacdError(caught, "CONFIG")).toBe(true);
}

describe("EthSigner", () => {
  it("derives the checksummed member key", () => {
    const s = new EthSigner(TEST_KEY);
    expect(s.chainKind).toBe("ethereum");
    expect(s.memberKey).toBe(TEST_ADDR);
  });

  it("reproduces the reference signature exactly", () => {
    const s = new EthSigner(TEST_KEY);
    const claim = hex32("0x3db39c589a6f14da3ec795f0fe22245574b4e889c70a27a1c6136303b4ba2505");
    expect(s.sign(claim)).toBe(
      "0x91139636b0d42fbb362411c09459f82025fdb34ffed9ce4dc4df0131a7e3e6e151fb0c683975d500b93d392284afd6a92bd398694002d13171241020da499a331b",
    );
  });

  const vectorsDir = join(import.meta.dirname, "..", "fixtures", "vectors");
  const folders = readdirSync(vectorsDir).filter((d) => existsSync(join(vectorsDir, d, "expected.json")));

  it("finds the vector folders", () => {
    expect(folders.length).toBeGreaterThanOrEqual(4);
  });

  for (const folder of folders) {
    it(`reproduces every signature in ${folder}/expected.json`, () => {
      const expected = JSON.parse(readFileSync(join(vectorsDir, folder, "expected.json"), "utf8")) as {
        private_key: string;
        member_key: string;
        batches: { batch_id: number; claim_hash: string; signature?: string }[];
      };
      const signer = createSigner("ethereum", hex32(expected.private_key));
      expect(signer.memberKey).toBe(expected.member_key);
      let checked = 0;
      for (const b of expected.batches) {
        if (b.signature === undefined) continue;
        const claim = hex32(b.claim_hash);
        expect(signer.sign(claim), `batch ${b.batch_id}`).toBe(b.signature);
        expect(recoverAddress(claim, b.signature)).toBe(expected.member_key);
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });
  }

  it("signs low-s, v in {27, 28}, deterministically", () => {
    const s = new EthSigner(TEST_KEY);
    const halfN = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
    for (let i = 0; i < 20; i++) {
      const claim = bigintToBytes32(BigInt(i) * 0x9e3779b97f4a7c15f39cc0605cedc834n + 1n);
      const sig = s.sign(claim);
      expect(sig).toMatch(/^0x[0-9a-f]{130}$/);
      expect(BigInt("0x" + sig.slice(66, 130)) <= halfN).toBe(true);
      expect([27, 28]).toContain(parseInt(sig.slice(130), 16));
      expect(s.sign(claim)).toBe(sig);
      expect(recoverAddress(claim, sig)).toBe(TEST_ADDR);
    }
  });

  it("recovers a different address for a tampered claim", () => {
    const s = new EthSigner(TEST_KEY);
    const claim = hex32("0x3db39c589a6f14da3ec795f0fe22245574b4e889c70a27a1c6136303b4ba2505");
    const sig = s.sign(claim);
    const other = Uint8Array.from(claim);
    other[0] = other[0]! ^ 1;
    expect(recoverAddress(other, sig)).not.toBe(TEST_ADDR);
  });

  it("does not expose the private key", () => {
    const s = new EthSigner(TEST_KEY);
    const keyHex = Buffer.from(TEST_KEY).toString("hex");
    expect(JSON.stringify(s)).not.toContain(keyHex);
    expect(JSON.stringify(s)).not.toContain(keyHex.slice(0, 16));
    expect(Object.values(s).some((v) => v instanceof Uint8Array)).toBe(false);
  });

  it("refuses invalid secp256k1 keys", () => {
    expectConfigError(() => new EthSigner(new Uint8Array(32)));
    expectConfigError(() => new EthSigner(new Uint8Array(32).fill(0xff)));
    expectConfigError(() => new EthSigner(new Uint8Array(31).fill(1)));
  });

  it("computes EIP-55 checksums", () => {
    // The examples from EIP-55 itself.
    for (const a of [
      "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
      "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
      "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
      "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    ]) {
      expect(toChecksumAddress(a.toLowerCase())).toBe(a);
    }
  });
});

describe("StarkSigner", () => {
  const STARK_KEY = hex32("0x3c1e9550e66958296d11b60f8e8e7a7ad990d07fa65d5f7652c4a6c87d4e3cc");

  it("uses getStarkKey as member key", () => {
    const s = new StarkSigner(STARK_KEY);
    expect(s.chainKind).toBe("starknet");
    expect(s.memberKey).toBe(starknet.getStarkKey(STARK_KEY));
    expect(s.memberKey).toMatch(/^0x[0-9a-f]+$/);
  });

  const claims = [
    "0x3db39c589a6f14da3ec795f0fe22245574b4e889c70a27a1c6136303b4ba2505",
    "0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "0x07ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "0x0000000000000000000000000000000000000000000000000000000000000001",
  ].map(hex32);

  it("signs so that @scure/starknet verifies against the member key", () => {
    const s = new StarkSigner(STARK_KEY);
    const pub = starknet.getPublicKey(STARK_KEY);
    for (const claim of claims) {
      const sig = s.sign(claim);
      expect(sig.r).toMatch(/^0x[0-9a-f]+$/);
      expect(sig.s).toMatch(/^0x[0-9a-f]+$/);
      const msg = "0x" + starknetMessageFromClaim(claim).toString(16);
      expect(starknet.verify(new starknet.Signature(BigInt(sig.r), BigInt(sig.s)), msg, pub)).toBe(true);
      expect(verifyStarkSignature(claim, sig, s.memberKey)).toBe(true);
      // deterministic
      expect(s.sign(claim)).toEqual(sig);
    }
  });

  it("fails verification when a claim byte changes", () => {
    const s = new StarkSigner(STARK_KEY);
    const claim = claims[0]!;
    const sig = s.sign(claim);
    for (const idx of [31, 16, 1]) {
      const changed = Uint8Array.from(claim);
      changed[idx] = changed[idx]! ^ 0x01;
      expect(verifyStarkSignature(changed, sig, s.memberKey)).toBe(false);
    }
    const otherKey = new StarkSigner(hex32("0x1234")).memberKey;
    expect(verifyStarkSignature(claim, sig, otherKey)).toBe(false);
    expect(verifyStarkSignature(claim, { r: sig.r, s: "0x1" }, s.memberKey)).toBe(false);
    expect(verifyStarkSignature(claim, { r: "zz", s: sig.s }, s.memberKey)).toBe(false);
  });

  it("maps the claim to its low 251 bits", () => {
    expect(starknetMessageFromClaim(claims[1]!)).toBe((1n << 251n) - 1n);
    expect(starknetMessageFromClaim(claims[4]!)).toBe(1n);
    expect(starknetMessageFromClaim(claims[0]!) < 1n << 251n).toBe(true);
  });

  it("refuses keys outside (0, n)", () => {
    expectConfigError(() => new StarkSigner(new Uint8Array(32)));
    expectConfigError(() => new StarkSigner(bigintToBytes32(STARK_CURVE_ORDER)));
    expectConfigError(() => new StarkSigner(TEST_KEY)); // a secp256k1 key far above the STARK order
    expect(() => new StarkSigner(bigintToBytes32(STARK_CURVE_ORDER - 1n))).not.toThrow();
  });
});

describe("createSigner", () => {
  it("builds the signer for the chain kind", () => {
    expect(createSigner("ethereum", TEST_KEY).memberKey).toBe(TEST_ADDR);
    const k = hex32("0x1234");
    expect(createSigner("starknet", k).memberKey).toBe(starknet.getStarkKey(k));
  });

  it("refuses a key that does not fit the chain kind", () => {
    expectConfigError(() => createSigner("starknet", TEST_KEY));
    expectConfigError(() => createSigner("ethereum", new Uint8Array(32).fill(0xff)));
    expectConfigError(() => createSigner("ethereum", new Uint8Array(32)));
  });
});
