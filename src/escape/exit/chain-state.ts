import {
  decodeAbiParameters,
  decodeFunctionResult,
  encodeFunctionData,
  parseAbi,
  toFunctionSelector,
  type Hex,
} from "viem";
import {
  isZeroAddress,
  perpetualWithdrawStep,
  spotWithdrawStep,
  type AssetKind,
  type ExitAsset,
  type ExitOptions,
  type ExitPlan,
  type ExitStep,
  type StepState,
  withFrozenBatch,
} from "./plan.js";

/**
 * Where a user stands on the chain, for an exit plan: the exchange's and verifier's view functions
 * read with `eth_call`, and each step simulated from the owner's Ethereum address to say whether it
 * can be sent now or why it would revert. `call` is any eth_call (viem in Node, an EIP-1193
 * provider in the browser): it resolves to the return data and rejects on a revert, with the
 * revert data somewhere in the error (`data`, `cause.data`, …) or its message. Browser-safe.
 */

/** An eth_call at the latest block. */
export type EthCall = (request: { to: Hex; data: Hex; from?: Hex }) => Promise<Hex>;

/** The asset as read; `kind` absent when getAssetInfo could not say (the contract lacks it). */
export interface ChainAsset extends Omit<ExitAsset, "kind"> {
  kind?: AssetKind;
  /** getAssetInfo's bytes; absent when it reverts. */
  info?: Hex;
  /** The token's decimals() (18 for ETH), when readable. */
  decimals?: number;
}

/** What the chain says, for the plan's `chain` field: uint256s as decimal strings. */
export interface ExitChainState {
  frozen: boolean | null;
  /** FREEZE_GRACE_PERIOD(), seconds. */
  freeze_grace_period: string | null;
  /** getLastBatchId(): once frozen, the frozen batch. */
  last_batch_id: number | null;
  /** getEthKey(ownerKey); the zero address when unregistered. */
  eth_key: Hex | null;
  /** The pending request's time (unix seconds); "0" when there is none. */
  request_time: string | null;
  /** request_time + FREEZE_GRACE_PERIOD: when freezeRequest stops reverting. */
  freeze_possible_at: string | null;
  /** getWithdrawalBalance(ownerKey, assetId): in the asset's base units (wei, token units), and quantized. */
  withdrawal_balance: string | null;
  withdrawal_balance_quantized: string | null;
  /** Spot: the vault's asset; perpetual: the collateral (getSystemAssetType()). */
  asset: ChainAsset | null;
  /** The plan's quantized amount times the quantum (base units), and in whole units when the decimals are known. */
  amount_base_units: string | null;
  amount_units: string | null;
  /** Reads that failed (a function the contract lacks, a node error), one line each. */
  unread: string[];
}

/** Nothing read yet; `unread` says why when nothing will be. */
export function emptyChainState(unread: string[] = []): ExitChainState {
  return {
    frozen: null,
    freeze_grace_period: null,
    last_batch_id: null,
    eth_key: null,
    request_time: null,
    freeze_possible_at: null,
    withdrawal_balance: null,
    withdrawal_balance_quantized: null,
    asset: null,
    amount_base_units: null,
    amount_units: null,
    unread,
  };
}

export type PlanWithState = ExitPlan & { chain: ExitChainState };

export interface ReadExitOptions {
  /** The address steps are simulated from when the key has none registered (e.g. the wallet's). */
  from?: Hex;
  /** The chain's time (unix seconds), to tell how long until freezeRequest; without it, only the simulation speaks. */
  now?: bigint;
}

const VIEWS = parseAbi([
  "function isFrozen() view returns (bool)",
  "function FREEZE_GRACE_PERIOD() view returns (uint256)",
  "function getLastBatchId() view returns (uint256)",
  "function getEthKey(uint256 ownerKey) view returns (address)",
  "function getFullWithdrawalRequest(uint256 ownerKey, uint256 vaultId) view returns (uint256)",
  "function getForcedWithdrawalRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount) view returns (uint256)",
  "function getWithdrawalBalance(uint256 ownerKey, uint256 assetId) view returns (uint256)",
  "function getAssetInfo(uint256 assetType) view returns (bytes)",
  "function getQuantum(uint256 presumedAssetType) view returns (uint256)",
  "function getSystemAssetType() view returns (uint256)",
  "function isValid(bytes32 fact) view returns (bool)",
  "function decimals() view returns (uint8)",
]);

/** StarkEx's asset info starts with the selector of its kind's signature (TokenAssetData). */
const ASSET_KINDS: ReadonlyMap<string, AssetKind> = new Map(
  (
    [
      ["ETH()", "eth"],
      ["ERC20Token(address)", "erc20"],
      ["ERC721Token(address,uint256)", "erc721"],
      ["ERC1155Token(address,uint256)", "erc1155"],
      ["MintableERC20Token(address)", "mintable_erc20"],
      ["MintableERC721Token(address,uint256)", "mintable_erc721"],
    ] as const
  ).map(([sig, kind]) => [toFunctionSelector(sig), kind]),
);

/** The kind and token contract of getAssetInfo's bytes; undefined for an unknown selector. */
export function decodeAssetInfo(info: Hex): { kind: AssetKind; token?: Hex } | undefined {
  const kind = ASSET_KINDS.get(info.slice(0, 10).toLowerCase());
  if (kind === undefined) return undefined;
  if (kind === "eth") return { kind };
  // The selector, then the token's address as a 32-byte word.
  const word = info.slice(10, 74);
  return word.length === 64 ? { kind, token: `0x${word.slice(24)}` } : { kind };
}

const ERROR_STRING = "0x08c379a0";
const NO_REASON = "reverted without a reason";
const PANIC = "0x4e487b71";

/** The revert reason in an eth_call's error: Error(string) decoded, a panic's code, or the node's message. */
export function revertReason(err: unknown): string {
  return readRevert(err).reason;
}

/** The reason, and whether the error is a revert at all (not a time-out or a node that cannot be reached). */
function readRevert(err: unknown): { reason: string; reverted: boolean } {
  const seen = new Set<unknown>();
  const hexes: string[] = [];
  const messages: string[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (e === null || e === undefined || depth > 6 || seen.has(e)) return;
    seen.add(e);
    if (typeof e === "string") {
      if (/^0x[0-9a-fA-F]*$/.test(e)) hexes.push(e);
      else messages.push(e);
      return;
    }
    if (typeof e !== "object") return;
    const o = e as Record<string, unknown>;
    for (const k of ["data", "cause", "error", "details", "shortMessage", "message", "reason"])
      visit(o[k], depth + 1);
  };
  visit(err, 0);
  for (const h of hexes) {
    if (h.toLowerCase().startsWith(ERROR_STRING) && h.length >= 10 + 128) {
      try {
        return { reason: decodeAbiParameters([{ type: "string" }], `0x${h.slice(10)}`)[0], reverted: true };
      } catch {
        // A malformed Error(string): try the next candidate.
      }
    }
    if (h.toLowerCase().startsWith(PANIC) && h.length === 10 + 64)
      return { reason: `panic 0x${BigInt(`0x${h.slice(10)}`).toString(16)}`, reverted: true };
  }
  for (const m of messages) {
    const quoted = /reverted with reason string '([^']*)'/.exec(m) ?? /execution reverted: ([^\n]+)/.exec(m);
    if (quoted) return { reason: quoted[1]!.trim(), reverted: true };
  }
  if (hexes.length > 0 || messages.some((m) => /revert/i.test(m)))
    return { reason: NO_REASON, reverted: true };
  return { reason: messages[0] ?? "the call failed", reverted: false };
}

/** A simulation that did not run to a verdict (a time-out, an unreachable node): the step's state is unknown. */
class SimulationFailed extends Error {}

type ViewName = (typeof VIEWS)[number]["name"];

/** One view call; its decoded result, or the reason it failed (recorded in `unread`). */
async function view<T>(
  call: EthCall,
  to: Hex,
  name: ViewName,
  args: readonly unknown[],
  unread: string[],
): Promise<T | undefined> {
  try {
    const data = encodeFunctionData({ abi: VIEWS, functionName: name, args } as never);
    const out = await call({ to, data });
    return decodeFunctionResult({ abi: VIEWS, functionName: name, data: out } as never) as T;
  } catch (err) {
    unread.push(`${name}: ${revertReason(err)}`);
    return undefined;
  }
}

/** A step's simulation: null when it would succeed, else the revert reason. */
async function simulate(call: EthCall, step: ExitStep, from: Hex | undefined): Promise<string | null> {
  if (step.data === null || step.to === null) return null;
  try {
    await call({ to: step.to, data: step.data, ...(from ? { from } : {}) });
    return null;
  } catch (err) {
    const r = readRevert(err);
    if (!r.reverted) throw new SimulationFailed(r.reason);
    return r.reason;
  }
}

const state = (
  status: StepState["status"],
  reason: string | null,
  extra: Record<string, unknown> = {},
): StepState => ({
  status,
  reason,
  revert: null,
  ...extra,
});

/** quantized × quantum in whole units of `decimals`. */
function units(baseUnits: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const whole = baseUnits / scale;
  const frac = (baseUnits % scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole.toString();
}

/**
 * The plan with each step's `state` and a `chain` summary read from the exchange and verifier at
 * `plan.exchange` and `plan.verifier`. A plan without an exchange address comes back unchanged
 * but for `chain: null`-like fields saying so. Steps the chain shows needless are kept with status
 * `done` (the register step is dropped when the key has an address: the plan's rule).
 */
export async function readExitState(
  call: EthCall,
  planIn: ExitPlan,
  options: ReadExitOptions = {},
): Promise<PlanWithState> {
  let plan = planIn;
  const unread: string[] = [];
  const chain = emptyChainState(unread);
  const exchange = plan.exchange;
  if (exchange === null) {
    unread.push("the exchange's address is not known: nothing read");
    return { ...plan, chain };
  }
  const key = BigInt(plan.owner_key);
  const id = BigInt(plan.id);
  const spot = plan.object === "vault";

  // One after another, so that `unread` lists failures in this order.
  const frozen = await view<boolean>(call, exchange, "isFrozen", [], unread);
  const grace = await view<bigint>(call, exchange, "FREEZE_GRACE_PERIOD", [], unread);
  const lastBatch = await view<bigint>(call, exchange, "getLastBatchId", [], unread);
  const ethKey = await view<Hex>(call, exchange, "getEthKey", [key], unread);
  chain.frozen = frozen ?? null;
  chain.freeze_grace_period = grace?.toString() ?? null;
  chain.last_batch_id = lastBatch === undefined ? null : Number(lastBatch);
  chain.eth_key = ethKey ?? null;

  // The asset: spot, the vault's (its id is its type for ETH and ERC-20); perpetual, the collateral.
  let assetType: bigint | undefined;
  if (spot) assetType = plan.asset_id === undefined ? undefined : BigInt(plan.asset_id);
  else {
    const withdraw = plan.steps.find((s) => s.step === "withdraw");
    const fromPlan = withdraw?.args[1];
    assetType =
      typeof fromPlan === "string"
        ? BigInt(fromPlan)
        : await view<bigint>(call, exchange, "getSystemAssetType", [], unread);
  }
  let asset: ChainAsset | undefined;
  if (assetType !== undefined) {
    const info = await view<Hex>(call, exchange, "getAssetInfo", [assetType], unread);
    const decoded = info === undefined ? undefined : decodeAssetInfo(info);
    // StarkEx's getAssetInfo refuses an id that is not a registered asset type: an NFT's or a
    // mintable asset's derived id. Another failure (no such function) leaves the kind unknown.
    const unregistered = info === undefined && unread.at(-1) === "getAssetInfo: ASSET_TYPE_NOT_REGISTERED";
    const quantum = await view<bigint>(call, exchange, "getQuantum", [assetType], unread);
    asset = {
      ...(decoded ? { kind: decoded.kind } : unregistered ? { kind: "unregistered" as const } : {}),
      ...(decoded?.token ? { token: decoded.token } : {}),
      ...(info === undefined ? {} : { info }),
      ...(quantum === undefined ? {} : { quantum: quantum.toString() }),
      ...(spot ? {} : { asset_type: `0x${assetType.toString(16)}` as Hex }),
    };
    if (info !== undefined && decoded === undefined)
      unread.push(`getAssetInfo: an unknown asset kind ${info.slice(0, 10)}`);
    if (decoded?.kind === "eth") asset.decimals = 18;
    else if (decoded?.token && (decoded.kind === "erc20" || decoded.kind === "mintable_erc20")) {
      const d = await view<number>(call, decoded.token, "decimals", [], unread);
      if (d !== undefined) asset.decimals = Number(d);
    }
    chain.asset = asset;
    if (quantum !== undefined) {
      const base = BigInt(plan.quantized_amount) * quantum;
      chain.amount_base_units = base.toString();
      if (asset.decimals !== undefined) chain.amount_units = units(base, asset.decimals);
      const balance = await view<bigint>(call, exchange, "getWithdrawalBalance", [key, assetType], unread);
      if (balance !== undefined) {
        chain.withdrawal_balance = balance.toString();
        chain.withdrawal_balance_quantized = quantum === 0n ? null : (balance / quantum).toString();
      }
    }
  }

  // The pending request (spot: per vault; perpetual: per position and amount).
  const request = plan.steps.find((s) => s.step === "request");
  let requestTime: bigint | undefined;
  if (request && key !== 0n) {
    if (spot) requestTime = await view<bigint>(call, exchange, "getFullWithdrawalRequest", [key, id], unread);
    else if (typeof request.args[2] === "string")
      requestTime = await view<bigint>(
        call,
        exchange,
        "getForcedWithdrawalRequest",
        [key, id, BigInt(request.args[2])],
        unread,
      );
  }
  chain.request_time = requestTime?.toString() ?? null;
  if (requestTime !== undefined && requestTime !== 0n && grace !== undefined)
    chain.freeze_possible_at = (requestTime + grace).toString();

  // The plan again with what the chain told: the register step goes, the withdraw step is decided.
  const planOptions: ExitOptions = {
    exchange,
    verifier: plan.verifier,
    ...(ethKey === undefined ? {} : { ethKey }),
  };
  let steps = plan.steps.filter(
    (s) => !(s.step === "register" && ethKey !== undefined && !isZeroAddress(ethKey)),
  );
  steps = steps.map((s) => {
    if (s.step !== "withdraw" || s.data !== null || asset === undefined) return s;
    if (!spot) return perpetualWithdrawStep(plan.owner_key, asset.asset_type, planOptions);
    const kind = asset.kind;
    return kind === undefined
      ? s
      : spotWithdrawStep(plan.owner_key, plan.asset_id!, { ...planOptions, asset: { ...asset, kind } });
  });
  if (chain.frozen === true && plan.frozen_batch_id === null && chain.last_batch_id !== null)
    plan = withFrozenBatch(plan, chain.last_batch_id);

  // Simulated from the key's registered address (the sender the request and withdraw need), else the caller's.
  const owner = ethKey !== undefined && !isZeroAddress(ethKey) ? ethKey : options.from;
  const ctx: StepContext = { call, chain, owner, now: options.now, requestTime, ethKey, plan };
  const withStates: ExitStep[] = [];
  for (const s of steps) {
    let st: StepState;
    try {
      st = await stepState(ctx, s, withStates);
    } catch (err) {
      if (!(err instanceof SimulationFailed)) throw err;
      st = state("unknown", `an eth_call of it did not complete: ${err.message}`);
    }
    withStates.push({ ...s, state: st });
  }
  return { ...plan, steps: withStates, chain };
}

interface StepContext {
  call: EthCall;
  chain: ExitChainState;
  owner: Hex | undefined;
  now: bigint | undefined;
  requestTime: bigint | undefined;
  ethKey: Hex | undefined;
  plan: ExitPlan;
}

const FREEZE_WAIT = new Set([
  "FULL_WITHDRAWAL_PENDING",
  "FORCED_WITHDRAWAL_PENDING",
  "FORCED_ACTION_PENDING",
]);

async function stepState(c: StepContext, s: ExitStep, before: readonly ExitStep[]): Promise<StepState> {
  const frozen = c.chain.frozen;
  const notFrozen = frozen === false ? state("waiting", "the exchange is not frozen") : null;
  const revert = async (): Promise<string | null> => simulate(c.call, s, c.owner);
  const blockedBy = (r: string, reason: string | null = null): StepState => ({
    ...state("blocked", reason ?? `an eth_call of it reverts: ${r}`),
    revert: r,
  });
  switch (s.step) {
    case "register":
      if (c.ethKey === undefined) return state("unknown", "getEthKey could not be read");
      return state(
        "ready",
        "the stark key has no Ethereum address on the exchange: register one first (with the stark key's signature)",
      );
    case "request": {
      if (frozen === true) return state("done", "the exchange is frozen: no request is needed");
      if (c.requestTime !== undefined && c.requestTime !== 0n)
        return state("done", `requested at ${c.requestTime} (unix time)`, {
          request_time: c.requestTime.toString(),
        });
      if (s.data === null) return state("blocked", s.note);
      const r = await revert();
      return r === null ? state("ready", "an eth_call of it from the owner succeeds") : blockedBy(r);
    }
    case "freeze": {
      if (frozen === true) return state("done", "the exchange is frozen");
      if (c.requestTime === 0n) return state("waiting", "no request yet: send the request step first");
      if (s.data === null) return state("blocked", s.note);
      const at = c.chain.freeze_possible_at;
      const left = at !== null && c.now !== undefined ? BigInt(at) - c.now : undefined;
      const extra = {
        freeze_possible_at: at,
        ...(left === undefined ? {} : { seconds_left: (left > 0n ? left : 0n).toString() }),
      };
      const r = await revert();
      if (r === null)
        return state("ready", "the grace period is over: anyone may freeze the exchange", extra);
      if (FREEZE_WAIT.has(r))
        return {
          ...state("waiting", `the grace period runs${at === null ? "" : ` until ${at} (unix time)`}`, extra),
          revert: r,
        };
      return { ...blockedBy(r), ...extra, revert: r };
    }
    case "verify_escape": {
      if (notFrozen) return notFrozen;
      if (s.data === null) return state("blocked", s.note);
      if (c.plan.fact !== null && s.to !== null) {
        const valid = await view<boolean>(c.call, s.to, "isValid", [c.plan.fact], c.chain.unread);
        if (valid === true)
          return state("done", "the verifier holds this proof's fact", { fact: c.plan.fact });
      }
      const r = await revert();
      return r === null ? state("ready", "an eth_call of it succeeds") : blockedBy(r);
    }
    case "escape": {
      if (notFrozen) return notFrozen;
      if (s.data === null) return state("blocked", s.note);
      const r = await revert();
      if (r === null) return state("ready", "an eth_call of it succeeds");
      if (r === "ESCAPE_ALREADY_USED")
        return { ...state("done", "this vault or position has escaped already"), revert: r };
      const verify = before.find((b) => b.step === "verify_escape");
      if (verify?.state?.status !== "done")
        return { ...state("waiting", `send verify_escape first (now it reverts: ${r})`), revert: r };
      return blockedBy(r);
    }
    case "withdraw": {
      if (s.data === null) return state("blocked", s.note);
      const balance = c.chain.withdrawal_balance;
      if (balance === "0") {
        const escape = before.find((b) => b.step === "escape");
        return escape?.state?.status === "done"
          ? state("done", "nothing is pending withdrawal: the escaped amount was withdrawn")
          : state("waiting", "nothing is pending withdrawal yet: escape first");
      }
      const r = await revert();
      return r === null
        ? state("ready", `an eth_call of it from the owner succeeds`, { withdrawal_balance: balance })
        : blockedBy(r);
    }
  }
}
