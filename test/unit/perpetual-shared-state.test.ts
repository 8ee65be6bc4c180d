import { keccak_256 } from "@noble/hashes/sha3.js";
import { decodeFunctionData, parseAbi } from "viem";
import { describe, expect, it } from "vitest";
import { verifyOnchainProof } from "../../src/escape/onchain/check.js";
import { perpetualEscape, positionValues, type PerpetualEscape } from "../../src/escape/onchain/perpetual.js";
import { newSharedState, readSharedState } from "../../src/escape/onchain/shared-state.js";
import { withdrawalAmount } from "../../src/escape/onchain/withdrawal.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { PositionLeaf } from "../../src/model/state-update.js";
import { bigintToBytes32, bytesToBigint } from "../../src/util/bytes.js";

/**
 * The perpetual escape with the exchange's shared state: the withdrawal amount against a
 * computation written here from PerpetualEscapeVerifier's description in signed whole numbers
 * (collateral·2^32 + Σ balance·price + the funding owed rounded down to a multiple of 2^32, then
 * whole units rounded down), the fact hash against keccak of hand-packed words, the call data
 * decoded with viem, and the checker's verdict.
 */
const engine = createEngine("native");
const B63 = 1n << 63n;
const FXP = 1n << 32n;
const H = async (x: bigint, y: bigint): Promise<bigint> =>
  bytesToBigint(await engine.hashMany(bigintToBytes32(x), bigintToBytes32(y)));
const hex64 = (v: bigint): string => v.toString(16).padStart(64, "0");
/** Floor division for signed whole numbers (BigInt's / rounds toward zero). */
const floorDiv = (a: bigint, b: bigint): bigint => (a % b !== 0n && a < 0n !== b < 0n ? a / b - 1n : a / b);

const ASSETS = [0x11n, 0xbeef1n, 2n ** 120n - 1n];
/** Global funding indices (signed, 32 fractional bits) and prices (32 fractional bits). */
const FUNDING = new Map([
  [ASSETS[0]!, 5n * FXP + 123n],
  [ASSETS[1]!, -(7n * FXP) - 99n],
  [ASSETS[2]!, 3n],
]);
const PRICES = new Map([
  [ASSETS[0]!, 2n * FXP + (FXP >> 1n)],
  [ASSETS[1]!, 40_000n * FXP + 17n],
  [ASSETS[2]!, 1n],
]);

function sharedStateOf(root: bigint, prices = PRICES): bigint[] {
  return [
    root,
    64n,
    0x1234n,
    64n,
    BigInt(FUNDING.size),
    ...[...FUNDING].flatMap(([a, i]) => [a, i + B63]),
    1_700_000_000n,
    BigInt(prices.size),
    ...[...prices].flat(),
    1_700_000_123n,
  ];
}

/** The amount by the description, in signed numbers. */
function independentAmount(p: PositionLeaf): bigint {
  let fxp = p.collateral * FXP;
  let owed = 0n;
  for (const a of p.assets) {
    owed -= a.balance * (FUNDING.get(a.assetId)! - a.fundingIndex);
    fxp += a.balance * PRICES.get(a.assetId)!;
  }
  return floorDiv(fxp + floorDiv(owed, FXP) * FXP, FXP);
}

/** A height-64 tree with one leaf at `id`, every other leaf the empty position's hash. */
async function onlyLeaf(id: bigint, leaf: bigint, emptyLeaf: bigint) {
  const empty = [emptyLeaf];
  for (let k = 0; k < 64; k++) empty.push(await H(empty[k]!, empty[k]!));
  const nodes = [leaf];
  for (let k = 0; k < 64; k++) {
    const right = ((id >> BigInt(k)) & 1n) === 1n;
    nodes.push(right ? await H(empty[k]!, nodes[k]!) : await H(nodes[k]!, empty[k]!));
  }
  return { index: id, nodes, siblings: empty.slice(0, 64) };
}

async function escapeOf(id: bigint, p: PositionLeaf, shared?: (root: bigint) => bigint[]) {
  const states = [0n];
  for (const v of positionValues(p)) states.push(await H(states[states.length - 1]!, v));
  const emptyLeaf = await H(await H(0n, 0n), B63 << 16n);
  const path = await onlyLeaf(id, states[states.length - 1]!, emptyLeaf);
  const root = path.nodes[64]!;
  const words = shared ? shared(root) : sharedStateOf(root);
  return {
    root,
    words,
    e: perpetualEscape(p, states, path, undefined, {
      words,
      txHash: "0xabc",
      systemAssetType: 0x2893n,
    }),
  };
}

const VERIFIER = parseAbi([
  "function verifyEscape(uint256[] merkleProof, uint256 nAssets, uint256[] sharedState)",
  "function escape(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)",
  "function withdraw(uint256 ownerKey, uint256 assetType)",
]);

describe("the perpetual escape with the shared state", () => {
  const positions: [string, bigint, PositionLeaf][] = [
    ["0 assets", 0n, { publicKey: 0x5a5an, collateral: 1_000_000n, assets: [] }],
    [
      "3 assets, funding owed both ways",
      2n ** 64n - 1n,
      {
        publicKey: 0x77n,
        collateral: -5_000_000n,
        assets: [
          { assetId: ASSETS[0]!, balance: 1_000n, fundingIndex: -(2n * FXP) + 5n },
          { assetId: ASSETS[1]!, balance: 300n, fundingIndex: -(6n * FXP) },
          { assetId: ASSETS[2]!, balance: -7n, fundingIndex: 10n },
        ],
      },
    ],
  ];

  it.each(positions)("%s: amount, fact hash and call data", async (_, id, p) => {
    const { e, words, root } = await escapeOf(id, p);
    const amount = independentAmount(p);
    expect(amount).toBeGreaterThan(0n);
    expect(e.withdrawal_amount).toBe(amount.toString());
    expect(withdrawalAmount(positionValues(p), words)).toBe(amount);
    expect(e.shared_state![0]).toBe("0x" + hex64(root));
    const stateHash = keccak_256(Buffer.from(words.map(hex64).join(""), "hex"));
    expect(e.shared_state_hash).toBe("0x" + Buffer.from(stateHash).toString("hex"));
    const fact = keccak_256(
      Buffer.concat([
        Buffer.from(hex64(p.publicKey) + hex64(amount), "hex"),
        stateHash,
        Buffer.from(hex64(id), "hex"),
      ]),
    );
    expect(e.fact_hash).toBe("0x" + Buffer.from(fact).toString("hex"));

    const verify = decodeFunctionData({ abi: VERIFIER, data: e.calldata!.verify_escape });
    expect(verify.functionName).toBe("verifyEscape");
    expect((verify.args[0] as readonly bigint[]).map((w) => "0x" + hex64(w))).toEqual(e.merkle_proof);
    expect(verify.args[1]).toBe(BigInt(p.assets.length));
    expect(verify.args[2]).toEqual(words);
    expect(decodeFunctionData({ abi: VERIFIER, data: e.calldata!.escape }).args).toEqual([
      p.publicKey,
      id,
      amount,
    ]);
    expect(decodeFunctionData({ abi: VERIFIER, data: e.calldata!.withdraw! }).args).toEqual([
      p.publicKey,
      0x2893n,
    ]);

    const json = JSON.parse(JSON.stringify(e)) as PerpetualEscape;
    expect(await verifyOnchainProof(engine, json, "0x" + hex64(root))).toMatchObject({ valid: true });
    for (const field of ["withdrawal_amount", "fact_hash"] as const) {
      const bad = { ...json, [field]: field === "fact_hash" ? "0x" + hex64(1n) : (amount + 1n).toString() };
      expect((await verifyOnchainProof(engine, bad)).valid, field).toBe(false);
    }
    const badState = {
      ...json,
      shared_state: json.shared_state!.map((w, i) => (i === 6 ? "0x" + hex64(BigInt(w) + 1n) : w)),
    };
    expect((await verifyOnchainProof(engine, badState)).valid).toBe(false);
    const badCall = { ...json, calldata: { ...json.calldata!, escape: json.calldata!.verify_escape } };
    expect((await verifyOnchainProof(engine, badCall)).valid).toBe(false);
  });

  it("a price above 2^190 wraps modulo 2^256 as the contract's unchecked words do", async () => {
    const p = positions[1]![2];
    const huge = new Map(PRICES).set(ASSETS[1]!, 1n << 200n);
    const values = positionValues(p);
    const { root } = await escapeOf(0n, p);
    const words = sharedStateOf(root, huge);
    const WORD = 1n << 256n;
    let fxp = p.collateral * FXP;
    let owed = 0n;
    for (const a of p.assets) {
      owed -= a.balance * (FUNDING.get(a.assetId)! - a.fundingIndex);
      fxp += a.balance * huge.get(a.assetId)!;
    }
    let sum = (((fxp + floorDiv(owed, FXP) * FXP) % WORD) + WORD) % WORD;
    if (sum >= WORD / 2n) sum -= WORD;
    expect(withdrawalAmount(values, words)).toBe(floorDiv(sum, FXP));
  });

  it("no call data when the verifier would refuse: a negative amount, an asset the state lacks, another root", async () => {
    const poor: PositionLeaf = { publicKey: 9n, collateral: -1n, assets: [] };
    const negative = (await escapeOf(5n, poor)).e;
    expect(negative.withdrawal_amount).toBe("-1");
    expect(negative).not.toHaveProperty("calldata");
    expect(negative).not.toHaveProperty("fact_hash");
    expect(negative.note).toMatch(/not positive/);

    const unknown: PositionLeaf = {
      publicKey: 9n,
      collateral: 10n,
      assets: [{ assetId: 0x99n, balance: 1n, fundingIndex: 0n }],
    };
    const lacking = (await escapeOf(5n, unknown)).e;
    expect(lacking).not.toHaveProperty("withdrawal_amount");
    expect(lacking).not.toHaveProperty("calldata");
    expect(lacking.note).toMatch(/asset 0x99 is not in the shared state/);

    const other = (await escapeOf(5n, positions[0]![2], () => sharedStateOf(1n))).e;
    expect(other).not.toHaveProperty("calldata");
    expect(other.note).toMatch(/not this proof's/);
    for (const e of [negative, lacking])
      expect(await verifyOnchainProof(engine, JSON.parse(JSON.stringify(e)))).toMatchObject({ valid: true });
    expect((await verifyOnchainProof(engine, JSON.parse(JSON.stringify(other)))).valid).toBe(false);
  });
});

describe("the shared state in a program output", () => {
  it("is the new state after the asset configs and the previous state", () => {
    const prev = [1n, 64n, 2n, 64n, 0n, 10n, 0n, 11n];
    const next = sharedStateOf(0x77n);
    const output = [
      0xc0n,
      0n,
      2n,
      0x11n,
      0xaan,
      0x12n,
      0xbbn,
      8n,
      ...prev,
      BigInt(next.length),
      ...next,
      500n,
      0n,
      0n,
      0n,
      0n,
    ];
    expect(newSharedState(output)).toEqual(next);
    const s = readSharedState(next);
    expect(s.positionRoot).toBe(0x77n);
    expect(s.funding.map(([a]) => a)).toEqual(ASSETS);
    expect(s.prices[1]).toEqual([ASSETS[1], PRICES.get(ASSETS[1]!)]);
    expect(s.systemTime).toBe(1_700_000_123n);
    expect(() => newSharedState(output.slice(0, 20))).toThrow(/ends inside its new shared state/);
    expect(() => readSharedState(next.slice(0, 9))).toThrow(/counts need|ends before/);
  });
});
