import { encodeAbiParameters, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import type { ExitPlan, ExitStep } from "../../src/escape/exit/plan.js";
import type { PlanWithState } from "../../src/escape/exit/chain-state.js";
import { chainView, inUnits, pageStatus } from "../../src/escape/page/chain-reads.js";
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

/** The plan with each step's state as readExitState gives it. */
function withStates(states: string[]): ExitStep[] {
  return plan().steps.map((s, i) => ({
    ...s,
    state: { status: states[i] as "done", reason: null, revert: null },
  }));
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
  it("done as the chain says; the first step not done is next or waiting; the rest later", () => {
    expect(
      Object.values(pageStatus(withStates(["ready", "waiting", "waiting", "waiting", "waiting"]))),
    ).toEqual(["next", "later", "later", "later", "later"]);
    expect(pageStatus(withStates(["done", "waiting", "waiting", "waiting", "waiting"]))).toMatchObject({
      request: "done",
      freeze: "waiting",
      verify_escape: "later",
    });
    expect(pageStatus(withStates(["done", "done", "ready", "waiting", "waiting"]))).toMatchObject({
      verify_escape: "next",
      escape: "later",
    });
    // A step the chain blocks for another reason is still the one to look at: its reason is shown.
    expect(pageStatus(withStates(["done", "done", "done", "blocked", "waiting"]))).toMatchObject({
      escape: "next",
    });
    expect(Object.values(pageStatus(withStates(["done", "done", "done", "done", "done"])))).toEqual([
      "done",
      "done",
      "done",
      "done",
      "done",
    ]);
  });

  it("reads the chain's summary as numbers, the asset with its symbol, decimals and quantum", () => {
    const p = {
      ...plan(),
      steps: withStates(["done", "waiting", "waiting", "waiting", "waiting"]),
      chain: {
        frozen: false,
        freeze_grace_period: "3600",
        last_batch_id: 4,
        eth_key: `0x${"7".repeat(40)}`,
        request_time: "1000",
        freeze_possible_at: "4600",
        withdrawal_balance: "0",
        withdrawal_balance_quantized: "0",
        asset: { kind: "erc20", token: `0x${"a".repeat(40)}`, quantum: "1000", decimals: 6 },
        amount_base_units: null,
        amount_units: null,
        unread: [],
      },
    } as unknown as PlanWithState;
    const v = chainView(p, 2000n, "DUSD");
    expect(v).toMatchObject({
      frozen: false,
      gracePeriodS: 3600n,
      requestTime: 1000n,
      freezeAt: 4600n,
      now: 2000n,
    });
    expect(v.asset).toEqual({ symbol: "DUSD", decimals: 6, quantum: 1000n });
    expect(v.status.freeze).toBe("waiting");
  });

  it("shows an amount in the asset's units: quantized × quantum, with the token's decimals", () => {
    const asset = { symbol: "DUSD", decimals: 6, quantum: 1000n };
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
