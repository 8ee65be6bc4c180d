import { readFileSync } from "node:fs";
import path from "node:path";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { describe, expect, it } from "vitest";
import {
  decodeAssetInfo,
  readExitState,
  revertReason,
  type EthCall,
} from "../../src/escape/exit/chain-state.js";
import { exitPlan } from "../../src/escape/exit/plan.js";
import { spotEscape } from "../../src/escape/onchain/spot.js";

/**
 * The chain-state reader's decoding: asset info by StarkEx's selectors (computed here with noble),
 * revert reasons out of the error shapes viem and EIP-1193 providers give, and the step states a
 * contract's answers lead to, with a contract written here as a table of selectors (the real
 * chain is test/system/exit-chain-state.test.ts's). And the exit modules stay browser-safe.
 */

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const sel = (signature: string): string =>
  "0x" + hex(keccak_256(new TextEncoder().encode(signature)).subarray(0, 4));
const w = (v: bigint): string => v.toString(16).padStart(64, "0");
/** Error(string)'s revert data, packed by hand. */
const errorString = (s: string): string => {
  const b = Buffer.from(s, "utf8");
  return (
    sel("Error(string)") +
    w(32n) +
    w(BigInt(b.length)) +
    b.toString("hex").padEnd(Math.ceil(b.length / 32) * 64, "0")
  );
};

describe("decodeAssetInfo", () => {
  it("reads the kind from the selector and the token from the next word", () => {
    const token = "00000000000000000000000000000000000000000000000000000000000000c0ffee".slice(-40);
    expect(decodeAssetInfo(sel("ETH()") as `0x${string}`)).toEqual({ kind: "eth" });
    expect(
      decodeAssetInfo(`${sel("ERC20Token(address)")}${"0".repeat(24)}${token}` as `0x${string}`),
    ).toEqual({
      kind: "erc20",
      token: `0x${token}`,
    });
    for (const [sig, kind] of [
      ["ERC721Token(address,uint256)", "erc721"],
      ["ERC1155Token(address,uint256)", "erc1155"],
      ["MintableERC20Token(address)", "mintable_erc20"],
      ["MintableERC721Token(address,uint256)", "mintable_erc721"],
    ])
      expect(decodeAssetInfo(`${sel(sig!)}${w(0x1234n)}` as `0x${string}`)?.kind).toBe(kind);
    expect(decodeAssetInfo("0xdeadbeef")).toBeUndefined();
  });
});

describe("revertReason", () => {
  it("decodes Error(string) wherever the provider puts it, and reads node messages", () => {
    const data = errorString("ESCAPE_ALREADY_USED");
    expect(revertReason({ code: 3, message: "execution reverted", data })).toBe("ESCAPE_ALREADY_USED");
    expect(revertReason({ message: "x", cause: { cause: { data } } })).toBe("ESCAPE_ALREADY_USED");
    expect(revertReason({ error: { data: { data } } })).toBe("ESCAPE_ALREADY_USED");
    expect(
      revertReason(
        new Error(
          "VM Exception while processing transaction: reverted with reason string 'USER_UNREGISTERED'",
        ),
      ),
    ).toBe("USER_UNREGISTERED");
    expect(revertReason({ message: "execution reverted: FULL_WITHDRAWAL_PENDING" })).toBe(
      "FULL_WITHDRAWAL_PENDING",
    );
    expect(revertReason({ message: "execution reverted", data: "0x" })).toBe("reverted without a reason");
    expect(revertReason({ data: sel("Panic(uint256)") + w(0x11n) })).toBe("panic 0x11");
  });
});

const EXCHANGE = "0x1111111111111111111111111111111111111111";
const VERIFIER = "0x2222222222222222222222222222222222222222";
const OWNER = "0x00000000000000000000000000000000000000aa";
const KEY = 0x3a7bn;
const ASSET = 0x2893n;

/** A contract as a table: selector → answer (a hex string, or an Error(string) revert). */
function contract(
  answers: Record<string, string | { revert: string }>,
  seen: { from?: string }[] = [],
): EthCall {
  return async ({ to, data, from }) => {
    seen.push({ from });
    const key = `${to}:${data.slice(0, 10)}`;
    const a = answers[key];
    if (a === undefined) throw Object.assign(new Error("execution reverted"), { data: "0x" });
    if (typeof a === "object")
      throw Object.assign(new Error("execution reverted"), { data: errorString(a.revert) });
    return a as `0x${string}`;
  };
}

describe("readExitState", () => {
  const proof = spotEscape(
    { starkKey: KEY, assetId: ASSET, quantizedAmount: 1234n },
    0x55n,
    { index: 9n, nodes: [0x77n, 0x101n, 0x102n, 0x103n, 0x104n], siblings: [0x201n, 0x202n, 0x203n, 0x204n] },
    { profile: "spot", batch_id: 60, sequence_number: 60 },
  );
  const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER, chainId: 31337 });
  const ex = (sig: string): string => `${EXCHANGE}:${sel(sig)}`;

  it("a frozen exchange, an ERC-20 vault escaped already: states, amounts, withdraw data, the frozen batch", async () => {
    const seen: { from?: string }[] = [];
    const erc20Info =
      "0x" + w(32n) + w(36n) + sel("ERC20Token(address)").slice(2) + w(0xc0ffeen) + "0".repeat(56);
    const call = contract(
      {
        [ex("isFrozen()")]: "0x" + w(1n),
        [ex("FREEZE_GRACE_PERIOD()")]: "0x" + w(604800n),
        [ex("getLastBatchId()")]: "0x" + w(56n),
        [ex("getEthKey(uint256)")]: "0x" + w(0xaan),
        [ex("getAssetInfo(uint256)")]: erc20Info,
        [ex("getQuantum(uint256)")]: "0x" + w(10n ** 12n),
        [ex("getWithdrawalBalance(uint256,uint256)")]: "0x" + w(1234n * 10n ** 12n),
        [ex("getFullWithdrawalRequest(uint256,uint256)")]: "0x" + w(0n),
        [`0x0000000000000000000000000000000000c0ffee:${sel("decimals()")}`]: "0x" + w(18n),
        [`${VERIFIER}:${sel("isValid(bytes32)")}`]: "0x" + w(1n),
        [ex("escape(uint256,uint256,uint256,uint256)")]: { revert: "ESCAPE_ALREADY_USED" },
        [ex("withdraw(uint256,uint256)")]: "0x",
      },
      seen,
    );
    const s = await readExitState(call, plan);
    expect(s.chain).toMatchObject({
      frozen: true,
      freeze_grace_period: "604800",
      last_batch_id: 56,
      eth_key: "0x00000000000000000000000000000000000000AA",
      request_time: "0",
      withdrawal_balance: (1234n * 10n ** 12n).toString(),
      withdrawal_balance_quantized: "1234",
      amount_base_units: (1234n * 10n ** 12n).toString(),
      amount_units: "0.001234",
      asset: {
        kind: "erc20",
        token: "0x0000000000000000000000000000000000c0ffee",
        quantum: "1000000000000",
        decimals: 18,
      },
    });
    // The proof is at 60, the exchange froze at 56: labelled from the chain.
    expect(s.frozen_batch_id).toBe(56);
    expect(s.at_frozen_batch).toBe(false);
    expect(s.notes[0]).toMatch(/at batch 60, not at batch 56/);
    expect(s.steps.map((x) => [x.step, x.state?.status])).toEqual([
      ["request", "done"],
      ["freeze", "done"],
      ["verify_escape", "done"],
      ["escape", "done"],
      ["withdraw", "ready"],
    ]);
    expect(s.steps[3]!.state!.revert).toBe("ESCAPE_ALREADY_USED");
    expect(s.steps[4]!.data).toBe(sel("withdraw(uint256,uint256)") + w(KEY) + w(ASSET));
    // Steps are simulated from the key's registered address.
    expect(seen.some((x) => x.from?.toLowerCase() === OWNER)).toBe(true);
  });

  it("before the freeze: no request yet, an unregistered key, and functions the contract lacks listed", async () => {
    const call = contract({
      [ex("isFrozen()")]: "0x" + w(0n),
      [ex("getEthKey(uint256)")]: "0x" + w(0n),
      [ex("getFullWithdrawalRequest(uint256,uint256)")]: "0x" + w(0n),
      [ex("fullWithdrawalRequest(uint256,uint256)")]: { revert: "USER_UNREGISTERED" },
      [ex("getAssetInfo(uint256)")]: { revert: "ASSET_TYPE_NOT_REGISTERED" },
    });
    const s = await readExitState(call, plan);
    expect(s.steps.map((x) => [x.step, x.state?.status])).toEqual([
      ["register", "ready"],
      ["request", "blocked"],
      ["freeze", "waiting"],
      ["verify_escape", "waiting"],
      ["escape", "waiting"],
      ["withdraw", "blocked"],
    ]);
    expect(s.steps[1]!.state!.revert).toBe("USER_UNREGISTERED");
    expect(s.chain.unread).toContain("FREEZE_GRACE_PERIOD: reverted without a reason");
    expect(s.chain.asset?.kind).toBe("unregistered");
    expect(s.steps[5]!.function).toBe("withdrawWithTokenId(uint256,uint256,uint256)");
  });

  it("a pending request: the freeze waits until request time + FREEZE_GRACE_PERIOD", async () => {
    const call = contract({
      [ex("isFrozen()")]: "0x" + w(0n),
      [ex("FREEZE_GRACE_PERIOD()")]: "0x" + w(1000n),
      [ex("getEthKey(uint256)")]: "0x" + w(0xaan),
      [ex("getFullWithdrawalRequest(uint256,uint256)")]: "0x" + w(5000n),
      [ex("freezeRequest(uint256,uint256)")]: { revert: "FULL_WITHDRAWAL_PENDING" },
    });
    const s = await readExitState(call, plan, { now: 5400n });
    expect(s.chain.freeze_possible_at).toBe("6000");
    expect(s.steps.map((x) => x.step)).toEqual(["request", "freeze", "verify_escape", "escape", "withdraw"]);
    expect(s.steps[0]!.state).toMatchObject({ status: "done", request_time: "5000" });
    expect(s.steps[1]!.state).toMatchObject({
      status: "waiting",
      revert: "FULL_WITHDRAWAL_PENDING",
      freeze_possible_at: "6000",
      seconds_left: "600",
    });
  });
});

describe("readExitState when the node does not answer", () => {
  it("a simulation that times out leaves the step unknown, not blocked", async () => {
    const proof = spotEscape(
      { starkKey: KEY, assetId: ASSET, quantizedAmount: 5n },
      0x55n,
      {
        index: 9n,
        nodes: [0x77n, 0x101n, 0x102n, 0x103n, 0x104n],
        siblings: [0x201n, 0x202n, 0x203n, 0x204n],
      },
      { profile: "spot", batch_id: 56, sequence_number: 56 },
    );
    const plan = exitPlan(proof, { exchange: EXCHANGE, verifier: VERIFIER });
    const tables = contract({
      [`${EXCHANGE}:${sel("isFrozen()")}`]: "0x" + w(1n),
      [`${EXCHANGE}:${sel("getEthKey(uint256)")}`]: "0x" + w(0xaan),
    });
    const call: EthCall = async (req) => {
      if (req.data.startsWith(sel("verifyEscape(uint256[])")))
        throw Object.assign(new Error("The request took too long to respond."), { name: "TimeoutError" });
      return tables(req);
    };
    const s = await readExitState(call, plan);
    const verify = s.steps.find((x) => x.step === "verify_escape")!;
    expect(verify.state).toMatchObject({ status: "unknown", revert: null });
    expect(verify.state!.reason).toMatch(/did not complete: The request took too long/);
  });
});

describe("the exit modules are browser-safe", () => {
  it("plan.ts and chain-state.ts import, transitively, no node: module and nothing but viem", () => {
    const root = path.resolve(import.meta.dirname, "../../src");
    const seen = new Set<string>();
    const external = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/^\s*import\s+(type\s+)?[^"']*?from\s*["']([^"']+)["']/gm)) {
        if (m[1]) continue; // type-only: erased
        const spec = m[2]!;
        if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")));
        else external.add(spec);
      }
    };
    visit(path.join(root, "escape/exit/plan.ts"));
    visit(path.join(root, "escape/exit/chain-state.ts"));
    expect([...external]).toEqual(["viem"]);
  });
});
