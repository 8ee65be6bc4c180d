import { describe, expect, it } from "vitest";
import { spotProofText, type KitTree } from "../../src/escape/kit/encode.js";
import { rowHex } from "../../src/escape/kit/path-stack.js";
import { spotEscape } from "../../src/escape/onchain/spot.js";
import { bigintToBytes32 } from "../../src/util/bytes.js";

/**
 * The kit's spot proof text, laid out by hand for speed, is byte for byte the onchain module's
 * proof printed as `dacd proof --format starkex` prints it: for vault ids 0 and 2^31 − 1, an
 * empty vault, the largest values, with and without a source.
 */

const HEIGHT = 31;
const P = 2n ** 251n + 17n * 2n ** 192n + 1n; // the Stark field prime: values stay below it
/** A deterministic field element per (seed, i). */
const fe = (seed: number, i: number): bigint =>
  (BigInt(seed + 1) * 0x9e3779b97f4a7c15f39cc0605cedc834n * BigInt(i + 7)) % P;

function caseOf(index: bigint, vault: { key: bigint; token: bigint; balance: bigint }, seed: number) {
  const nodes = Array.from({ length: HEIGHT + 1 }, (_, k) => fe(seed, k));
  const siblings = Array.from({ length: HEIGHT }, (_, k) => fe(seed + 100, k));
  const keyAsset = fe(seed + 200, 0);
  const b = (v: bigint): Uint8Array => bigintToBytes32(v);
  const rows = siblings.map((s, k) =>
    ((index >> BigInt(k)) & 1n) === 1n ? rowHex(b(s), b(nodes[k]!)) : rowHex(b(nodes[k]!), b(s)),
  );
  return { nodes, siblings, keyAsset, rows, rootHex63: nodes[HEIGHT]!.toString(16).padStart(63, "0") };
}

describe("the kit's spot proof text", () => {
  const vaults = [
    { index: 0n, vault: { key: 0x1234n, token: 1n, balance: 1n } },
    { index: 2n ** 31n - 1n, vault: { key: P - 1n, token: P - 2n, balance: 2n ** 63n - 1n } },
    { index: 1234567n, vault: { key: 0n, token: 0n, balance: 0n } },
    { index: 2n ** 30n, vault: { key: fe(9, 9), token: fe(8, 8), balance: 10n ** 18n } },
  ];
  for (const [n, source] of [
    [0, { profile: "spot-v4.0", batch_id: 41, sequence_number: 42 }],
    [1, undefined],
  ] as const)
    it(`equals the onchain module's JSON (${source ? "with" : "without"} a source)`, () => {
      vaults.forEach(({ index, vault }, seed) => {
        const c = caseOf(index, vault, seed + n * 10);
        const tree: KitTree = { rootHex63: c.rootHex63, height: HEIGHT, source: source! };
        const text = spotProofText(tree, index, vault, bigintToBytes32(c.keyAsset), c.rows);
        const expected = spotEscape(
          { starkKey: vault.key, assetId: vault.token, quantizedAmount: vault.balance },
          c.keyAsset,
          { index, siblings: c.siblings, nodes: c.nodes },
          source,
        );
        expect(text).toBe(JSON.stringify(expected, null, 2) + "\n");
        expect(JSON.parse(text)).toMatchObject({ vault_id: index.toString(), empty: vault.key === 0n });
      });
    });
});
