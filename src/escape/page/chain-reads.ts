import { decodeFunctionResult, encodeFunctionData, formatUnits, parseAbi, type Hex } from "viem";
import type { EthCall, PlanWithState } from "../exit/chain-state.js";
import type { ExitStep, ExitStepName } from "../exit/plan.js";

/**
 * What the escape page shows of the chain: the exit plan's state as the exit module reads it
 * (src/escape/exit/chain-state.ts, through the wallet's provider), turned into the page's terms:
 * numbers, the asset's units, and which step is done, next, waiting or later.
 */

export interface AssetUnits {
  symbol: string;
  decimals: number;
  quantum: bigint;
}

export type StepStatus = "done" | "next" | "waiting" | "later";

export interface ChainView {
  frozen: boolean | null;
  gracePeriodS: bigint | null;
  /** The forced request's time (s since 1970); 0n when none was made. */
  requestTime: bigint | null;
  /** When freezeRequest becomes possible (s since 1970), once a request is pending. */
  freezeAt: bigint | null;
  /** The latest block's time (s since 1970). */
  now: bigint | null;
  ethKey: Hex | null;
  /** getWithdrawalBalance: un-quantized (the asset's base units). */
  withdrawable: bigint | null;
  asset: AssetUnits | null;
  status: Partial<Record<ExitStepName, StepStatus>>;
}

const big = (s: string | null | undefined): bigint | null =>
  s === null || s === undefined ? null : BigInt(s);

export function chainView(p: PlanWithState, now: bigint | null, symbol: string | null): ChainView {
  const c = p.chain;
  const a = c.asset;
  return {
    frozen: c.frozen,
    gracePeriodS: big(c.freeze_grace_period),
    requestTime: big(c.request_time),
    freezeAt: big(c.freeze_possible_at),
    now,
    ethKey: c.eth_key,
    withdrawable: big(c.withdrawal_balance),
    asset:
      a?.quantum === undefined
        ? null
        : {
            symbol: symbol ?? (a.kind === "eth" ? "ETH" : "units"),
            decimals: a.decimals ?? (a.kind === "eth" ? 18 : 0),
            quantum: BigInt(a.quantum),
          },
    status: pageStatus(p.steps),
  };
}

/**
 * Done steps as the chain says; the first step not done is next (or waiting, when the chain says
 * it must wait: the grace period); the others come later.
 */
export function pageStatus(steps: readonly ExitStep[]): Partial<Record<ExitStepName, StepStatus>> {
  const status: Partial<Record<ExitStepName, StepStatus>> = {};
  let nextFound = false;
  for (const s of steps) {
    const st = s.state?.status;
    if (st === "done") status[s.step] = "done";
    else if (!nextFound) {
      nextFound = true;
      status[s.step] = st === "waiting" ? "waiting" : "next";
    } else status[s.step] = "later";
  }
  return status;
}

const SYMBOL = parseAbi(["function symbol() view returns (string)"]);

/** The token's symbol() (the name users know it by), or null. */
export async function tokenSymbol(call: EthCall, token: Hex): Promise<string | null> {
  try {
    const out = await call({ to: token, data: encodeFunctionData({ abi: SYMBOL, functionName: "symbol" }) });
    return decodeFunctionResult({ abi: SYMBOL, functionName: "symbol", data: out });
  } catch {
    return null;
  }
}

/** An amount in the asset's units: quantized × quantum, shown with the token's decimals. */
export function inUnits(quantized: bigint, asset: AssetUnits): string {
  return `${formatUnits(quantized * asset.quantum, asset.decimals)} ${asset.symbol}`;
}

/** An un-quantized amount (getWithdrawalBalance's) in the asset's units. */
export function rawInUnits(amount: bigint, asset: AssetUnits): string {
  return `${formatUnits(amount, asset.decimals)} ${asset.symbol}`;
}
