import { keccak_256 } from "@noble/hashes/sha3.js";
import { decodeFunctionData, encodeAbiParameters, keccak256, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProof, type Proof } from "../../src/escape/proof.js";
import { verifyOnchainProof } from "../../src/escape/onchain/check.js";
import { makeOnchainProof, onchainFromProof } from "../../src/escape/onchain/from-proof.js";
import { perpetualEscape, positionValues, type PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import { spotEscape, type SpotEscape } from "../../src/escape/onchain/spot.js";
import { hashLeaves } from "../../src/verifier/trees/format/leaves.js";
import type { PositionLeaf } from "../../src/model/state-update.js";
import { bigintToBytes32, bytesToBigint } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { chainStore, randomBig, type ChainStore } from "../helpers/chain-store.js";
import { removeTempDirs } from "../helpers/temp-dir.js";

/**
 * The on-chain escape format against docs/escape-formats.md: the words are built here again
 * from the spec's row formula (the 512-bit number left << 260 | right << 8), the claim hash and
 * call data are recomputed with viem and with a hand-built buffer, the rows are chained to the
 * root with the project's Pedersen, and the checker accepts every proof made and refuses each one
 * with a bit flipped in any word.
 */

/** The native engine: the tamper loops below check thousands of proofs. */
const engine = createEngine("native");
const B63 = 1n << 63n;
const H = async (x: bigint, y: bigint): Promise<bigint> =>
  bytesToBigint(await engine.hashMany(bigintToBytes32(x), bigintToBytes32(y)));
const hex64 = (v: bigint): string => "0x" + v.toString(16).padStart(64, "0");

/** The spec's row as two words: the high and low halves of left << 260 | right << 8. */
function specWords(rows: [bigint, bigint][]): string[] {
  return rows.flatMap(([l, r]) => {
    const n = (l << 260n) | (r << 8n);
    return [hex64(n >> 256n), hex64(n % (1n << 256n))];
  });
}

/** Path rows from a leaf hash and siblings: (node, sibling) ordered by the index's bits, then root ‖ last. */
async function specPathRows(
  leafHash: bigint,
  siblings: bigint[],
  index: bigint,
  last: bigint,
): Promise<{ rows: [bigint, bigint][]; root: bigint }> {
  const rows: [bigint, bigint][] = [];
  let node = leafHash;
  for (let k = 0; k < siblings.length; k++) {
    const row: [bigint, bigint] =
      (index >> BigInt(k)) % 2n === 1n ? [siblings[k]!, node] : [node, siblings[k]!];
    rows.push(row);
    node = await H(row[0], row[1]);
  }
  rows.push([node, last]);
  return { rows, root: node };
}

/** The words as rows again (the spec's split), for the chaining check below. */
function rowsOf(words: string[]): [bigint, bigint][] {
  const rows: [bigint, bigint][] = [];
  for (let i = 0; i < words.length; i += 2) {
    const n = (BigInt(words[i]!) << 256n) | BigInt(words[i + 1]!);
    rows.push([n >> 260n, (n >> 8n) % (1n << 252n)]);
  }
  return rows;
}

/** Each row's Pedersen hash sits in the next row where `bit(r)` says; the last node row gives the root. */
async function expectChained(words: string[], bit: (r: number) => bigint): Promise<void> {
  const rows = rowsOf(words);
  for (let r = 0; r + 1 < rows.length; r++) {
    const h = await H(rows[r]![0], rows[r]![1]);
    expect(h, `row ${r}`).toBe(rows[r + 1]![bit(r) === 1n ? 1 : 0]);
  }
}

const SPOT_ABI = parseAbi([
  "function verifyEscape(uint256[] escapeProof)",
  "function escape(uint256 starkKey, uint256 vaultId, uint256 assetId, uint256 quantizedAmount)",
]);

/** The claim and the call data, against viem's encoder and a keccak over a hand-built buffer. */
function expectSpotAbi(e: SpotEscape): void {
  const six = [
    BigInt(e.stark_key),
    BigInt(e.asset_id),
    BigInt(e.quantized_amount),
    BigInt(e.vault_root),
    BigInt(e.tree_height),
    BigInt(e.vault_id),
  ];
  const buf = new Uint8Array(6 * 32);
  six.forEach((v, i) => buf.set(bigintToBytes32(v), i * 32));
  expect(e.claim_hash).toBe("0x" + Buffer.from(keccak_256(buf)).toString("hex"));
  expect(e.claim_hash).toBe(
    keccak256(
      encodeAbiParameters(
        six.map(() => ({ type: "uint256" })),
        six,
      ),
    ),
  );
  const verify = decodeFunctionData({ abi: SPOT_ABI, data: e.calldata.verify_escape as `0x${string}` });
  expect(verify.functionName).toBe("verifyEscape");
  expect(verify.args[0]).toEqual(e.escape_proof.map(BigInt));
  expect(e.calldata.verify_escape.slice(0, 10)).toBe("0x2dd53006");
  const escape = decodeFunctionData({ abi: SPOT_ABI, data: e.calldata.escape as `0x${string}` });
  expect(escape.functionName).toBe("escape");
  expect(escape.args).toEqual([six[0], six[5], six[1], six[2]]);
}

/**
 * The bits flipped in word w: the zero bits, the bits next to the boundaries (the right value's
 * split at bit 248 of the high word, the 4 zero bits of the last row), and two that move with w,
 * so that together the words cover every position.
 */
const bitsOf = (w: number): number[] => [
  w % 2 === 0 ? 3 : 7,
  8,
  247,
  248,
  251,
  255,
  (w * 29) % 256,
  (w * 67 + 128) % 256,
];

/** A flipped bit in any word is refused, and by the words' own checks, not by the call data's. */
async function expectTamperRefused(e: SpotEscape | PerpetualEscape): Promise<void> {
  const key = "escape_proof" in e ? "escape_proof" : "merkle_proof";
  const words = (e as unknown as Record<string, string[]>)[key]!;
  for (let w = 0; w < words.length; w++) {
    for (const bit of new Set(bitsOf(w))) {
      const q = structuredClone(e) as unknown as Record<string, string[]>;
      q[key]![w] = hex64(BigInt(words[w]!) ^ (1n << BigInt(bit)));
      const verdict = await verifyOnchainProof(engine, q);
      expect(verdict.valid, `word ${w} bit ${bit}`).toBe(false);
      expect(verdict.reason, `word ${w} bit ${bit}`).not.toMatch(/calldata/);
    }
  }
}

async function expectAccepted(e: SpotEscape | PerpetualEscape, root: string): Promise<void> {
  const json = JSON.parse(JSON.stringify(e)) as unknown;
  expect(await verifyOnchainProof(engine, json)).toMatchObject({ valid: true });
  expect(await verifyOnchainProof(engine, json, root)).toMatchObject({ valid: true });
  expect(await verifyOnchainProof(engine, json, "0x1234")).toMatchObject({ valid: false });
}

/** Spot words from a dacd proof by the spec: vault row, leaf row, path, root ‖ vault id. */
async function spotFromSpec(p: Proof): Promise<{ words: string[]; root: bigint }> {
  const key = BigInt(p.leaf.stark_key as string);
  const token = BigInt(p.leaf.token as string);
  const amount = BigInt(p.leaf.balance as string);
  const inner = await H(key, token);
  const leaf = await H(inner, amount);
  expect(hex64(leaf).slice(2)).toBe(p.leaf_hash);
  const { rows, root } = await specPathRows(
    leaf,
    p.siblings!.map((s) => BigInt("0x" + s)),
    BigInt(p.leaf_id),
    BigInt(p.leaf_id),
  );
  return {
    words: specWords([[key, token], [inner, amount], ...rows]),
    root,
  };
}

/** The position's chain values by the spec, from a leaf as `dacd proof` prints it. */
function specValues(leaf: Record<string, unknown>): bigint[] {
  const assets = Object.entries(
    leaf.assets as Record<string, { balance: string; cached_funding_index: string }>,
  )
    .map(([id, a]) => [BigInt(id), BigInt(a.cached_funding_index), BigInt(a.balance)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return [
    ...assets.map(([id, f, b]) => id * 2n ** 128n + (f + B63) * 2n ** 64n + (b + B63)),
    BigInt(leaf.public_key as string),
    (BigInt(leaf.collateral_balance as string) + B63) * 2n ** 16n + BigInt(assets.length),
  ];
}

async function perpetualFromSpec(p: Proof): Promise<string[]> {
  const values = specValues(p.leaf);
  const chain: [bigint, bigint][] = [];
  let state = 0n;
  for (const v of values) {
    chain.push([state, v]);
    state = await H(state, v);
  }
  // The chain's end is the leaf hash the project's trees computed.
  expect(hex64(state).slice(2)).toBe(p.leaf_hash);
  const L = BigInt(values.length);
  const { rows } = await specPathRows(
    state,
    p.siblings!.map((s) => BigInt("0x" + s)),
    BigInt(p.leaf_id),
    BigInt(p.leaf_id) << L,
  );
  return specWords([...chain, ...rows]);
}

const stores: Partial<Record<string, ChainStore>> = {};
beforeAll(async () => {
  stores.spot = await chainStore("spot-chain");
  stores.v40 = await chainStore("spot-v40-chain");
  stores.perp = await chainStore("perpetual-chain");
}, 120_000);
afterAll(async () => {
  for (const s of Object.values(stores)) await s!.store.close();
  await engine.close?.();
  await removeTempDirs();
});

function idsOf(s: ChainStore, key: string): string[] {
  const ids = new Set<string>();
  for (const r of s.responses)
    for (const id of Object.keys(((r.update as Record<string, unknown>)[key] ?? {}) as object)) ids.add(id);
  return [...ids];
}

describe.each(["spot", "v40"] as const)("spot escape proofs from the %s vectors", (which) => {
  it("the words, claim and call data match the spec; verify-proof accepts them and refuses any flipped bit", async () => {
    const s = stores[which]!;
    const ids = [...idsOf(s, "vaults").slice(0, 4), "0", "123456", String(2 ** 31 - 1)];
    let empty = 0;
    let full = 0;
    for (const [n, id] of ids.entries()) {
      const p = await makeProof(s.store, engine, "vault", id);
      const e = (await makeOnchainProof(s.store, engine, "vaults", id)) as SpotEscape;
      expect(e.format).toBe("starkex-escape-spot/1");
      expect(e.escape_proof).toHaveLength(68);
      expect(e.tree_height).toBe(31);
      expect(e).toMatchObject({
        vault_id: id,
        empty: p.empty,
        batch_id: p.batch_id,
        vault_root: "0x" + p.root,
      });
      const spec = await spotFromSpec(p);
      expect(e.escape_proof).toEqual(spec.words);
      expect(hex64(spec.root)).toBe(e.vault_root);
      await expectChained(e.escape_proof, (r) => (r === 0 ? 0n : (BigInt(id) >> BigInt(r - 1)) & 1n));
      expectSpotAbi(e);
      await expectAccepted(e, p.root);
      if (p.empty) {
        expect(e).toMatchObject({ stark_key: hex64(0n), asset_id: hex64(0n), quantized_amount: "0" });
        empty++;
      } else full++;
      // Every word and a dozen bits in each, for one full and one empty vault.
      if (n === 0 || id === String(2 ** 31 - 1)) await expectTamperRefused(e);
    }
    expect(empty).toBeGreaterThan(0);
    expect(full).toBeGreaterThan(0);
  }, 120_000);

  it("older batches and other trees", async () => {
    const s = stores[which]!;
    const id = idsOf(s, "vaults")[0]!;
    const old = (await makeOnchainProof(s.store, engine, "vault", id, 0)) as SpotEscape;
    expect(old.vault_root).toBe("0x" + s.expected.batches[0]!.roots.vault);
    await expectAccepted(old, old.vault_root);
    await expect(makeOnchainProof(s.store, engine, "order", "1")).rejects.toThrow(/no on-chain escape/);
    if (which === "spot")
      await expect(makeOnchainProof(s.store, engine, "rollup_vault", "1")).rejects.toThrow(
        /no on-chain escape/,
      );
    await expect(makeOnchainProof(s.store, engine, "vault", String(2 ** 31))).rejects.toThrow(/outside/);
  });
});

describe("perpetual escape proofs from the vectors", () => {
  it("the words match the spec for 0 to 4 assets; the chain ends at the leaf hash; verify-proof accepts and refuses any flipped bit", async () => {
    const s = stores.perp!;
    const seen = new Map<number, string>();
    for (const id of idsOf(s, "positions")) {
      const p = await makeProof(s.store, engine, "position", id);
      const n = Object.keys(p.leaf.assets as object).length;
      if (!p.empty && !seen.has(n)) seen.set(n, id);
    }
    expect([...seen.keys()]).toEqual(expect.arrayContaining([0, 3]));
    const cases = [...seen.entries()].map(([n, id]) => [n, id] as const).concat([[0, "0"]]);
    for (const [n, id] of cases) {
      const p = await makeProof(s.store, engine, "position", id);
      const e = (await makeOnchainProof(s.store, engine, "positions", id)) as PerpetualEscape;
      expect(e.format).toBe("starkex-escape-perpetual/1");
      expect(e.n_assets).toBe(n);
      expect(e.merkle_proof).toHaveLength(2 * (n + 2 + 64 + 1));
      expect(e).toMatchObject({
        position_id: id,
        empty: p.empty,
        tree_height: 64,
        position_root: "0x" + p.root,
        collateral_balance: p.leaf.collateral_balance,
        public_key: hex64(BigInt(p.leaf.public_key as string)),
      });
      expect(e.note).toMatch(/sharedState.*base chain/);
      const ids = e.assets.map((a) => BigInt(a.asset_id));
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
      for (const a of e.assets)
        expect(a).toEqual({
          asset_id: a.asset_id,
          ...(p.leaf.assets as Record<string, unknown>)["0x" + BigInt(a.asset_id).toString(16)]!,
        });
      expect(e.merkle_proof).toEqual(await perpetualFromSpec(p));
      const L = BigInt(n + 2);
      await expectChained(e.merkle_proof, (r) => ((BigInt(id) << L) >> BigInt(r + 1)) & 1n);
      await expectAccepted(e, p.root);
      if (n === 3 || id === "0") await expectTamperRefused(e);
    }
  }, 180_000);
});

/** A sparse Merkle tree held level by level (only the non-empty nodes), hashed with the engine. */
async function sparseTree(height: number, leaves: Map<bigint, bigint>, emptyLeaf: bigint) {
  const E = [emptyLeaf];
  for (let k = 0; k < height; k++) E.push(await H(E[k]!, E[k]!));
  const levels = [new Map(leaves)];
  for (let k = 0; k < height; k++) {
    const next = new Map<bigint, bigint>();
    for (const i of levels[k]!.keys()) {
      const parent = i >> 1n;
      if (next.has(parent)) continue;
      next.set(
        parent,
        await H(levels[k]!.get(parent * 2n) ?? E[k]!, levels[k]!.get(parent * 2n + 1n) ?? E[k]!),
      );
    }
    levels.push(next);
  }
  const at = (k: number, i: bigint): bigint => levels[k]!.get(i) ?? E[k]!;
  return {
    root: at(height, 0n),
    path: (index: bigint) => ({
      index,
      nodes: Array.from({ length: height + 1 }, (_, k) => at(k, index >> BigInt(k))),
      siblings: Array.from({ length: height }, (_, k) => at(k, (index >> BigInt(k)) ^ 1n)),
    }),
  };
}

describe("generated trees", () => {
  it("spot: vault ids 0 and 2^31 − 1, a full tree's edges and an empty vault", async () => {
    const r = prng(49);
    const ids = [0n, 1n, 12345n, 2n ** 30n, 2n ** 31n - 1n];
    const vaults = new Map(
      ids.map((id) => [
        id,
        { starkKey: randomBig(r, 251), assetId: randomBig(r, 250), quantizedAmount: randomBig(r, 63) | 1n },
      ]),
    );
    const inner = new Map<bigint, bigint>();
    const leaves = new Map<bigint, bigint>();
    for (const [id, v] of vaults) {
      inner.set(id, await H(v.starkKey, v.assetId));
      leaves.set(id, await H(inner.get(id)!, v.quantizedAmount));
    }
    const emptyInner = await H(0n, 0n);
    const tree = await sparseTree(31, leaves, await H(emptyInner, 0n));
    const cases = [...ids.map((id) => [id, vaults.get(id)!, inner.get(id)!] as const)];
    cases.push([7n, { starkKey: 0n, assetId: 0n, quantizedAmount: 0n }, emptyInner]);
    for (const [id, v, keyAsset] of cases) {
      const e = spotEscape(v, keyAsset, tree.path(id));
      expect(e.escape_proof).toHaveLength(68);
      expect(e.empty).toBe(id === 7n);
      const { rows } = await specPathRows(tree.path(id).nodes[0]!, tree.path(id).siblings, id, id);
      expect(e.escape_proof).toEqual(
        specWords([[v.starkKey, v.assetId], [keyAsset, v.quantizedAmount], ...rows]),
      );
      expect(e.vault_root).toBe(hex64(tree.root));
      expectSpotAbi(e);
      await expectAccepted(e, e.vault_root);
      if (id === 2n ** 31n - 1n || id === 7n) await expectTamperRefused(e);
    }
  }, 120_000);

  it("perpetual: positions with 0 and 3 assets at ids 0 and 2^64 − 1; the chain ends at the project's position leaf hash", async () => {
    const r = prng(4949);
    const signed = (): bigint => randomBig(r, 64) - B63;
    const positions = new Map<bigint, PositionLeaf>([
      [0n, { publicKey: randomBig(r, 251), collateral: signed(), assets: [] }],
      [
        2n ** 64n - 1n,
        {
          publicKey: randomBig(r, 251),
          collateral: -B63,
          assets: [
            { assetId: 1n, balance: -B63, fundingIndex: B63 - 1n },
            { assetId: randomBig(r, 100) + 2n, balance: signed(), fundingIndex: signed() },
            { assetId: 2n ** 120n - 1n, balance: B63 - 1n, fundingIndex: 0n },
          ],
        },
      ],
      [
        123456789n,
        {
          publicKey: randomBig(r, 251),
          collateral: signed(),
          assets: [{ assetId: randomBig(r, 119), balance: signed(), fundingIndex: signed() }],
        },
      ],
    ]);
    const states = new Map<bigint, bigint[]>();
    const leaves = new Map<bigint, bigint>();
    for (const [id, p] of positions) {
      const chain = [0n];
      for (const v of positionValues(p)) chain.push(await H(chain[chain.length - 1]!, v));
      states.set(id, chain);
      const [leaf] = await hashLeaves(engine, "position", [p]);
      // The chain the proof spells out ends at the leaf hash the project's trees compute.
      expect(chain[chain.length - 1]).toBe(bytesToBigint(leaf!));
      leaves.set(id, chain[chain.length - 1]!);
    }
    const emptyPosition: PositionLeaf = { publicKey: 0n, collateral: 0n, assets: [] };
    const emptyChain = [0n, await H(0n, 0n)];
    emptyChain.push(await H(emptyChain[1]!, B63 << 16n));
    expect(hex64(emptyChain[2]!)).toBe(
      hex64(0x028109b4e56fad0455aa4b316045c93937b1e7e4e0fc663db375b9e67c80c620n),
    );
    const tree = await sparseTree(64, leaves, emptyChain[2]!);
    const cases = [...positions.entries()].map(([id, p]) => [id, p, states.get(id)!] as const);
    cases.push([42n, emptyPosition, emptyChain]);
    for (const [id, p, chain] of cases) {
      const e = perpetualEscape(p, chain, tree.path(id));
      expect(e.n_assets).toBe(p.assets.length);
      expect(e.merkle_proof).toHaveLength(2 * (p.assets.length + 2 + 64 + 1));
      expect(e.empty).toBe(id === 42n);
      const values = positionValues(p);
      const { rows } = await specPathRows(
        chain[chain.length - 1]!,
        tree.path(id).siblings,
        id,
        id << BigInt(values.length),
      );
      expect(e.merkle_proof).toEqual(
        specWords([...values.map((v, i): [bigint, bigint] => [chain[i]!, v]), ...rows]),
      );
      expect(e.position_root).toBe(hex64(tree.root));
      await expectAccepted(e, e.position_root);
      if (p.assets.length === 3) await expectTamperRefused(e);
    }
  }, 180_000);
});

describe("the checker refuses what the words do not say", () => {
  it("fields, claim, call data, counts and zero bits", async () => {
    const s = stores.spot!;
    const id = idsOf(s, "vaults")[0]!;
    const e = (await onchainFromProof(engine, await makeProof(s.store, engine, "vault", id))) as SpotEscape;
    const refused = async (change: (q: Record<string, unknown>) => void, reason: RegExp): Promise<void> => {
      const q = structuredClone(e) as unknown as Record<string, unknown>;
      change(q);
      const verdict = await verifyOnchainProof(engine, q);
      expect(verdict.valid).toBe(false);
      expect(verdict.reason).toMatch(reason);
    };
    await refused((q) => (q.quantized_amount = String(BigInt(e.quantized_amount) + 1n)), /quantized_amount/);
    await refused((q) => (q.vault_id = "1"), /vault_id/);
    await refused((q) => (q.stark_key = hex64(1n)), /stark_key/);
    await refused((q) => (q.claim_hash = hex64(0n)), /claim_hash/);
    await refused((q) => ((q.calldata as Record<string, string>).escape += "00"), /calldata.escape/);
    await refused(
      (q) => ((q.calldata as Record<string, string>).verify_escape = "0x2dd53006"),
      /verify_escape/,
    );
    await refused((q) => (q.tree_height = 30), /rows/);
    await refused((q) => (q.escape_proof as string[]).push(hex64(0n), hex64(0n)), /rows/);
    await refused((q) => (q.escape_proof as string[]).pop(), /pairs/);
    await refused((q) => (q.empty = true), /empty/);
    await refused((q) => (q.format = "starkex-escape-spot/2"), /format/);
    const words = e.escape_proof;
    await refused((q) => ((q.escape_proof as string[])[1] = hex64(BigInt(words[1]!) | 1n)), /8 low bits/);
    // The 4 bits between the root and the index.
    await refused((q) => ((q.escape_proof as string[])[66] = hex64(BigInt(words[66]!) | 1n)), /4 bits/);
    // A left value at the prime: the row is refused before any hash.
    const p = 2n ** 251n + 17n * 2n ** 192n + 1n;
    await refused(
      (q) => ((q.escape_proof as string[])[0] = hex64((p << 4n) | (BigInt(words[0]!) & 15n))),
      /STARK prime/,
    );
  });
});
