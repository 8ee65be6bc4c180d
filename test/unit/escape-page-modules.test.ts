import { encodeAbiParameters, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import type { ExitPlan, ExitStep } from "../../src/escape/exit/plan.js";
import { inUnits, stepStatus, type ChainView } from "../../src/escape/page/chain-reads.js";
import { revertInWords, revertString } from "../../src/escape/page/revert.js";
import { safeBatch } from "../../src/escape/page/safe-batch.js";

/** The escape page's pure modules: revert reasons in words, where the user stands, the Safe batch. */

const errorData = (reason: string): Hex =>
  `0x08c379a0${encodeAbiParameters([{ type: "string" }], [reason]).slice(2)}`;

const STEPS = ["request", "freeze", "verify_escape", "escape", "withdraw"] as const;

function plan(data = true): ExitPlan {
  const steps = STEPS.map((step, i): ExitStep => ({
    step,
    contract: step === "verify_escape" ? "verifier" : "exchange",
    to: `0x${String(i + 1).repeat(40)}` as Hex,
    function: `${step}()`,
    inputs: [],
    args: [],
    data: data && step !== "verify_escape" ? (`0x0${i}` as Hex) : null,
    value: "0",
    sender: "anyone",
    state: null,
    note: null,
  }));
  return { object: "vault", id: "5", chain_id: 31337, steps } as unknown as ExitPlan;
}

function view(over: Partial<ChainView>): ChainView {
  return {
    frozen: false,
    gracePeriodS: 3600n,
    requestTime: 0n,
    freezeAt: null,
    now: 1000n,
    ethKey: `0x${"7".repeat(40)}`,
    vaultRoot: null,
    factValid: false,
    escaped: false,
    withdrawable: 0n,
    asset: null,
    status: {},
    ...over,
  };
}

describe("revert reasons in words", () => {
  it("decodes Error(string) wherever the wallet puts it, and says what it means", () => {
    const data = errorData("ESCAPE_ALREADY_USED");
    expect(revertString(data)).toBe("ESCAPE_ALREADY_USED");
    expect(revertInWords({ message: "execution reverted", data })).toBe(
      "ESCAPE_ALREADY_USED: this vault or position has already escaped; its balance waits in withdraw",
    );
    expect(
      revertInWords({ message: "x", error: { data: { data: errorData("FORCED_ACTION_PENDING") } } }),
    ).toMatch(/^FORCED_ACTION_PENDING: the grace period/);
    // Hardhat's message when the data is not passed on.
    expect(
      revertInWords({
        message: "VM Exception while processing transaction: reverted with reason string 'STATE_NOT_FROZEN'",
      }),
    ).toMatch(/^STATE_NOT_FROZEN: the exchange is not frozen yet/);
    // An unknown reason stays as the contract gave it; no data at all keeps the wallet's words.
    expect(revertInWords({ message: "m", data: errorData("SOMETHING_ELSE") })).toBe("SOMETHING_ELSE");
    expect(revertInWords(new Error("User rejected the request."))).toBe("User rejected the request.");
  });
});

describe("where the user stands", () => {
  it("request first; the freeze waits out the grace period; then the escape; withdraw; all done", () => {
    expect(stepStatus(plan(), view({}))).toEqual({
      request: "next",
      freeze: "later",
      verify_escape: "later",
      escape: "later",
      withdraw: "later",
    });
    const pending = view({ requestTime: 900n, freezeAt: 4500n, now: 1000n });
    expect(stepStatus(plan(), pending)).toMatchObject({ request: "done", freeze: "waiting" });
    expect(stepStatus(plan(), { ...pending, now: 4500n })).toMatchObject({ freeze: "next" });
    expect(stepStatus(plan(), view({ frozen: true }))).toMatchObject({
      request: "done",
      freeze: "done",
      verify_escape: "next",
      escape: "later",
    });
    expect(stepStatus(plan(), view({ frozen: true, factValid: true }))).toMatchObject({
      verify_escape: "done",
      escape: "next",
    });
    expect(
      stepStatus(plan(), view({ frozen: true, factValid: true, escaped: true, withdrawable: 3400n })),
    ).toMatchObject({
      escape: "done",
      withdraw: "next",
    });
    expect(
      Object.values(
        stepStatus(plan(), view({ frozen: true, factValid: true, escaped: true, withdrawable: 0n })),
      ),
    ).toEqual(["done", "done", "done", "done", "done"]);
  });

  it("shows an amount in the asset's units: quantized × quantum, with the token's decimals", () => {
    const asset = { kind: "erc20" as const, token: null, symbol: "DUSD", decimals: 6, quantum: 1000n };
    expect(inUnits(3400n, asset)).toBe("3.4 DUSD");
    expect(inUnits(1n, { ...asset, symbol: "ETH", decimals: 18, quantum: 10n ** 10n })).toBe(
      "0.00000001 ETH",
    );
  });
});

describe("the Safe Transaction Builder batch", () => {
  it("carries every step with call data and an address, in order, on the plan's chain", () => {
    const batch = safeBatch(plan(), 1_700_000_000_000) as {
      version: string;
      chainId: string;
      createdAt: number;
      transactions: { to: string; value: string; data: string }[];
    };
    expect(batch.version).toBe("1.0");
    expect(batch.chainId).toBe("31337");
    expect(batch.transactions.map((t) => t.data)).toEqual(["0x00", "0x01", "0x03", "0x04"]);
    expect(batch.transactions[0]).toEqual({
      to: `0x${"1".repeat(40)}`,
      value: "0",
      data: "0x00",
      contractMethod: null,
      contractInputsValues: null,
    });
  });
});
