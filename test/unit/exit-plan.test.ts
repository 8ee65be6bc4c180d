import { keccak_256 } from "@noble/hashes/sha3.js";
import { describe, expect, it } from "vitest";
import { exitPlan, noExitPlan, type ExitPlan } from "../../src/escape/exit/plan.js";
import { perpetualEscape } from "../../src/escape/onchain/perpetual.js";
import { spotEscape } from "../../src/escape/onchain/spot.js";
import type { MerklePath } from "../../src/escape/onchain/rows.js";
import type { PositionLeaf } from "../../src/model/state-update.js";

/**
 * The exit plan's steps and call data. Every expected call data is packed here by hand: the
 * selector is keccak-256 of the signature (noble, not viem) and the arguments 32-byte words, so a
 * wrong signature, order or encoding in the plan fails. The proofs are built by the project's
 * encoders over made-up paths (the plan reads the proof; it does not hash).
 */

const sel = (signature: string): string =>
  Buffer.from(keccak_256(new TextEncoder().encode(signature)).subarray(0, 4)).toString("hex");
const w = (v: bigint): string => v.toString(16).padStart(64, "0");
const call = (signature: string, ...words: bigint[]): string => "0x" + sel(signature) + words.map(w).join("");
/** A uint256[] tail: its length, then its words. */
const arr = (words: readonly string[]): string =>
  w(BigInt(words.length)) + words.map((x) => w(BigInt(x))).join("");

const EXCHANGE = "0x1111111111111111111111111111111111111111";
const VERIFIER = "0x2222222222222222222222222222222222222222";
const OWNER = "0x00000000000000000000000000000000000000aa";
const KEY = 0x3a7b9c1d2e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9an;
const ASSET = 0x2893294412a4c8f915f75892b395ebbf6859ec246ec365c3b1f56f47c3a0a5dn;

/** A made-up path of height 4 to `index` (field elements; not Pedersen-consistent). */
function path(index: bigint, leaf: bigint): MerklePath {
  return { index, nodes: [leaf, 0x101n, 0x102n, 0x103n, 0x104n], siblings: [0x201n, 0x202n, 0x203n, 0x204n] };
}

function spot(amount: bigint, key = KEY, asset = ASSET) {
  return spotEscape({ starkKey: key, assetId: asset, quantizedAmount: amount }, 0x55n, path(9n, 0x77n), {
    profile: "spot",
    batch_id: 56,
    sequence_number: 56,
  });
}

const steps = (p: ExitPlan): string[] => p.steps.map((s) => s.step);
const step = (p: ExitPlan, name: string) => p.steps.find((s) => s.step === name)!;

describe("exitPlan, spot", () => {
  it("without chain state: every step, exact call data where the proof alone gives it", () => {
    const proof = spot(1234n);
    const p = exitPlan(proof, { chainId: 31337, exchange: EXCHANGE, verifier: VERIFIER });
    expect(p).toMatchObject({
      object: "vault",
      id: "9",
      batch_id: 56,
      chain_id: 31337,
      quantized_amount: "1234",
    });
    expect(steps(p)).toEqual(["register", "request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(step(p, "register")).toMatchObject({
      data: null,
      function: "registerEthAddress(address,uint256,bytes)",
    });
    expect(step(p, "request")).toMatchObject({
      to: EXCHANGE,
      function: "fullWithdrawalRequest(uint256,uint256)",
      args: [proof.stark_key, "9"],
      data: call("fullWithdrawalRequest(uint256,uint256)", KEY, 9n),
      value: "0",
      sender: "owner",
    });
    expect(step(p, "freeze").data).toBe(call("freezeRequest(uint256,uint256)", KEY, 9n));
    const verify = step(p, "verify_escape");
    expect(verify.to).toBe(VERIFIER);
    expect(verify.contract).toBe("verifier");
    // One dynamic argument: its offset (32), then the array.
    expect(verify.data).toBe("0x" + sel("verifyEscape(uint256[])") + w(32n) + arr(proof.escape_proof));
    expect(proof.escape_proof).toHaveLength(2 * (4 + 3));
    expect(step(p, "escape").data).toBe(
      call("escape(uint256,uint256,uint256,uint256)", KEY, 9n, ASSET, 1234n),
    );
    // The asset's kind is the chain's (getAssetInfo): the function is named, the data is not given.
    expect(step(p, "withdraw")).toMatchObject({ function: "withdraw(uint256,uint256)", data: null });
    expect(step(p, "withdraw").note).toMatch(/getAssetInfo/);
    expect(p.at_frozen_batch).toBeNull();
    expect(p.message).toBeNull();
  });

  it("a registered key and an ERC-20: no register step, withdraw(ownerKey, assetType)", () => {
    const p = exitPlan(spot(5n), { ethKey: OWNER, asset: { kind: "erc20", quantum: "1000" } });
    expect(steps(p)).toEqual(["request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(step(p, "withdraw").data).toBe(call("withdraw(uint256,uint256)", KEY, ASSET));
    expect(step(p, "request").to).toBeNull();
    expect(p.notes.join(" ")).toMatch(/exchange's address is not known/);
  });

  it("an unregistered key (getEthKey = 0) keeps the register step", () => {
    const p = exitPlan(spot(5n), {
      ethKey: "0x0000000000000000000000000000000000000000",
      asset: { kind: "eth" },
    });
    expect(steps(p)[0]).toBe("register");
    expect(step(p, "register").note).toMatch(/no Ethereum address/);
  });

  it("ERC-721/1155: withdrawWithTokenId, with data only when the asset type and token id are known", () => {
    const known = exitPlan(spot(1n), {
      ethKey: OWNER,
      asset: { kind: "erc721", asset_type: "0xabc", token_id: "0x7" },
    });
    expect(step(known, "withdraw")).toMatchObject({
      function: "withdrawWithTokenId(uint256,uint256,uint256)",
      data: call("withdrawWithTokenId(uint256,uint256,uint256)", KEY, 0xabcn, 7n),
    });
    const unknown = exitPlan(spot(1n), { ethKey: OWNER, asset: { kind: "erc1155" } });
    expect(step(unknown, "withdraw")).toMatchObject({
      function: "withdrawWithTokenId(uint256,uint256,uint256)",
      data: null,
    });
  });

  it("mintable: withdrawAndMint without data, and the note says the minting blob is not the committee's", () => {
    const p = exitPlan(spot(1n), { ethKey: OWNER, asset: { kind: "mintable_erc20" } });
    expect(step(p, "withdraw")).toMatchObject({
      function: "withdrawAndMint(uint256,uint256,bytes)",
      data: null,
    });
    expect(step(p, "withdraw").note).toMatch(/minting blob .* not in the committee's data/);
  });

  it("an empty vault or a zero balance: no transaction, a message", () => {
    const empty = exitPlan(spot(0n, 0n, 0n));
    expect(empty.empty).toBe(true);
    expect(empty.steps).toEqual([]);
    expect(empty.message).toMatch(/Vault 9 is empty at batch 56: there is nothing to withdraw/);
    const zero = exitPlan(spot(0n));
    expect(zero.steps).toEqual([]);
    expect(zero.message).toMatch(/nothing to withdraw/);
  });

  it("an unknown id: no transaction, the message given", () => {
    const p = noExitPlan("vault", "99", "vault 99 is not in the store");
    expect(p).toMatchObject({ id: "99", steps: [], message: "vault 99 is not in the store" });
  });

  it("a proof at a batch that is not the frozen one is labelled", () => {
    const p = exitPlan(spot(3n), { frozenBatchId: 50 });
    expect(p.frozen_batch_id).toBe(50);
    expect(p.at_frozen_batch).toBe(false);
    expect(p.notes[0]).toMatch(/at batch 56, not at batch 50 where the exchange froze/);
    const at = exitPlan(spot(3n), { frozenBatchId: 56 });
    expect(at.at_frozen_batch).toBe(true);
  });
});

describe("exitPlan, perpetual", () => {
  const position: PositionLeaf = {
    publicKey: KEY,
    collateral: 7_000n,
    assets: [{ assetId: 0x11n, balance: 10n, fundingIndex: 0n }],
  };
  // A made-up hash chain (the plan does not hash): states[0] = 0, the last one the leaf.
  const states = [0n, 0x31n, 0x32n, 0x33n];

  function perp(withShared: boolean, p: PositionLeaf = position) {
    const pth = path(5n, 0x33n);
    const root = pth.nodes[4]!;
    // Shared state: root, height, order root and height, 1 funding index (biased 2^63), its timestamp, 1 price (2.0), system time.
    const words = [root, 4n, 0n, 0n, 1n, 0x11n, 1n << 63n, 1n, 1n, 0x11n, 2n << 32n, 2n];
    return perpetualEscape(
      p,
      states.slice(0, p.assets.length + 3),
      { ...pth, nodes: [states[p.assets.length + 2]!, ...pth.nodes.slice(1)] },
      { profile: "perpetual", batch_id: 56, sequence_number: 56 },
      withShared ? { words, txHash: "0xabc", systemAssetType: 0x2893n } : undefined,
    );
  }

  it("with the shared state: every step, exact call data", () => {
    const proof = perp(true);
    expect(proof.withdrawal_amount).toBe("7020");
    const p = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER, ethKey: OWNER, frozenBatchId: 56 });
    expect(steps(p)).toEqual(["request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(p).toMatchObject({ object: "position", id: "5", quantized_amount: "7020", at_frozen_batch: true });
    expect(step(p, "request")).toMatchObject({
      function: "forcedWithdrawalRequest(uint256,uint256,uint256,bool)",
      data: call("forcedWithdrawalRequest(uint256,uint256,uint256,bool)", KEY, 5n, 7020n, 0n),
    });
    expect(step(p, "freeze").data).toBe(call("freezeRequest(uint256,uint256,uint256)", KEY, 5n, 7020n));
    // Two dynamic arrays: offsets 0x60 and 0x60 + 32·(1 + merkleProof's length), nAssets between.
    const mp = proof.merkle_proof;
    const ss = proof.shared_state!;
    expect(step(p, "verify_escape").data).toBe(
      "0x" +
        sel("verifyEscape(uint256[],uint256,uint256[])") +
        w(0x60n) +
        w(1n) +
        w(0x60n + 32n * BigInt(1 + mp.length)) +
        arr(mp) +
        arr(ss),
    );
    expect(step(p, "escape").data).toBe(call("escape(uint256,uint256,uint256)", KEY, 5n, 7020n));
    expect(step(p, "withdraw").data).toBe(call("withdraw(uint256,uint256)", KEY, 0x2893n));
  });

  it("without the shared state: verify_escape and escape say they need the chain and have no data", () => {
    const p = exitPlan(perp(false), { systemAssetType: "0x2893" });
    expect(steps(p)).toEqual(["register", "request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(p.quantized_amount).toBe("7000");
    expect(step(p, "request").data).toBe(
      call("forcedWithdrawalRequest(uint256,uint256,uint256,bool)", KEY, 5n, 7000n, 0n),
    );
    expect(step(p, "verify_escape")).toMatchObject({ data: null });
    expect(step(p, "verify_escape").note).toMatch(/shared state/);
    expect(step(p, "escape").data).toBeNull();
    expect(step(p, "withdraw").data).toBe(call("withdraw(uint256,uint256)", KEY, 0x2893n));
    expect(p.notes.join(" ")).toMatch(/shared state .* is not known here/);
  });

  it("an empty position or a non-positive amount: no transaction", () => {
    const empty = perp(false, { publicKey: 0n, collateral: 0n, assets: [] });
    const p = exitPlan(empty);
    expect(p.steps).toEqual([]);
    expect(p.message).toMatch(/Position 5 is empty at batch 56/);
    const owing = exitPlan(perp(true, { ...position, collateral: -10_000n }));
    expect(owing.steps).toEqual([]);
    expect(owing.message).toMatch(/may withdraw -9980/);
  });
});
