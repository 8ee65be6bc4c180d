import { describe, expect, it } from "vitest";
import { prng } from "../../src/util/prng.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import {
  decodeLeafRecord,
  encodeLeafRecord,
  hashAndEncodeLeaves,
  hashLeaves,
  normalizeVault,
} from "../../src/verifier/trees/format/leaves.js";
import type { LeafKind } from "../../src/model/profile.js";
import type { Leaf, PositionLeaf, VaultLeaf } from "../../src/model/state-update.js";

const engine = createEngine("auto");
const hex = (b: Uint8Array | null): string => (b ? Buffer.from(b).toString("hex") : "none");

describe("hashAndEncodeLeaves", () => {
  const rand = prng(21);
  const big = (bits: number): bigint => {
    let v = 0n;
    for (let b = 0; b < bits; b += 24) v = (v << 24n) | BigInt(Math.floor(rand() * 2 ** 24));
    return v & ((1n << BigInt(bits)) - 1n);
  };
  const vaults: VaultLeaf[] = Array.from({ length: 50 }, (_, i) => ({
    key: big(251),
    token: big(250),
    balance: i % 7 === 0 ? 0n : big(63), // balance 0: hashed and stored as the empty vault
  }));
  const positions: PositionLeaf[] = Array.from({ length: 20 }, (_, i) => ({
    publicKey: big(251),
    collateral: big(62) - (1n << 61n),
    assets: Array.from({ length: i % 4 }, () => ({
      assetId: big(120),
      balance: big(62) - (1n << 61n),
      fundingIndex: big(62) - (1n << 61n),
    })),
  }));
  const orders: Leaf[] = Array.from({ length: 20 }, () => big(64));

  it.each([
    ["vault", vaults],
    ["position", positions],
    ["order", orders],
  ] as [LeafKind, Leaf[]][])(
    "gives %s leaves the hashes and records of hashLeaves and encodeLeafRecord",
    async (kind, leaves) => {
      const { hashes, records } = await hashAndEncodeLeaves(engine, kind, leaves);
      expect(hashes.map(hex)).toEqual((await hashLeaves(engine, kind, leaves)).map(hex));
      expect(records.map(hex)).toEqual(leaves.map((leaf) => hex(encodeLeafRecord(kind, leaf))));
      if (kind === "vault")
        records.forEach((rec, i) => expect(decodeLeafRecord(kind, rec!)).toEqual(normalizeVault(vaults[i]!)));
    },
  );
});
