import { decodeFunctionResult, encodeFunctionData, formatUnits, parseAbi, type Hex } from "viem";
import type { ExitAsset, ExitPlan, ExitProof, ExitStepName } from "../exit/plan.js";
import { revertInWords } from "./revert.js";

/**
 * Where a user stands, read from the chain through any `eth_call` (the wallet's EIP-1193 provider
 * on the page): frozen or not, the grace period and when freezeRequest becomes possible, the
 * Ethereum address registered to the key, the withdrawable balance in the asset's units, and for
 * each step whether it is done, next, or would revert and why. A read a contract does not answer
 * is left null rather than guessed.
 */

export type EthCall = (request: { to: Hex; data: Hex; from?: Hex }) => Promise<Hex>;

const READ_ABI = parseAbi([
  "function isFrozen() view returns (bool)",
  "function FREEZE_GRACE_PERIOD() view returns (uint256)",
  "function getFullWithdrawalRequest(uint256 ownerKey, uint256 vaultId) view returns (uint256)",
  "function getForcedWithdrawalRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount) view returns (uint256)",
  "function getEthKey(uint256 ownerKey) view returns (address)",
  "function getWithdrawalBalance(uint256 ownerKey, uint256 assetId) view returns (uint256)",
  "function getQuantum(uint256 presumedAssetType) view returns (uint256)",
  "function getAssetInfo(uint256 assetType) view returns (bytes)",
  "function getValidiumVaultRoot() view returns (uint256)",
  "function getSystemAssetType() view returns (uint256)",
  "function isValid(bytes32 fact) view returns (bool)",
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
]);

type ReadName = (typeof READ_ABI)[number]["name"];

/** What StarkEx's asset info starts with: the selector of its asset kind. */
const ASSET_KINDS: Record<string, ExitAsset["kind"]> = {
  "0x8322fff2": "eth",
  "0xf47261b0": "erc20",
  "0x02571792": "erc721",
  "0x3348691d": "erc1155",
  "0x68646e2d": "mintable_erc20",
  "0xb8b86672": "mintable_erc721",
};

export interface AssetUnits {
  kind: ExitAsset["kind"] | null;
  token: Hex | null;
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
  vaultRoot: bigint | null;
  factValid: boolean | null;
  /** The exchange refuses this escape as already used (an eth_call of it reverts ESCAPE_ALREADY_USED). */
  escaped: boolean;
  withdrawable: bigint | null;
  asset: AssetUnits | null;
  status: Partial<Record<ExitStepName, StepStatus>>;
}

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

export async function readChainView(
  call: EthCall,
  latestTime: () => Promise<bigint>,
  proof: ExitProof,
  exchange: Hex | null,
  verifier: Hex | null,
): Promise<ChainView> {
  const view: ChainView = {
    frozen: null,
    gracePeriodS: null,
    requestTime: null,
    freezeAt: null,
    now: null,
    ethKey: null,
    vaultRoot: null,
    factValid: null,
    escaped: false,
    withdrawable: null,
    asset: null,
    status: {},
  };
  const read = async <T>(
    to: Hex | null,
    name: ReadName,
    args: readonly unknown[] = [],
  ): Promise<T | null> => {
    if (!to) return null;
    try {
      const data = encodeFunctionData({ abi: READ_ABI, functionName: name, args } as never);
      const out = await call({ to, data });
      return decodeFunctionResult({ abi: READ_ABI, functionName: name, data: out } as never) as T;
    } catch {
      return null;
    }
  };
  const spot = proof.format === "starkex-escape-spot/1";
  const key = BigInt(spot ? proof.stark_key : proof.public_key);
  const id = BigInt(spot ? proof.vault_id : proof.position_id);
  const amount = BigInt(
    spot ? proof.quantized_amount : (proof.withdrawal_amount ?? proof.collateral_balance),
  );
  view.now = await latestTime().catch(() => null);
  view.frozen = await read<boolean>(exchange, "isFrozen");
  view.gracePeriodS = await read<bigint>(exchange, "FREEZE_GRACE_PERIOD");
  view.requestTime = spot
    ? await read<bigint>(exchange, "getFullWithdrawalRequest", [key, id])
    : await read<bigint>(exchange, "getForcedWithdrawalRequest", [key, id, amount]);
  if (view.requestTime && view.gracePeriodS !== null) view.freezeAt = view.requestTime + view.gracePeriodS;
  view.ethKey = await read<Hex>(exchange, "getEthKey", [key]);
  if (spot) view.vaultRoot = await read<bigint>(exchange, "getValidiumVaultRoot");
  const fact = spot ? proof.claim_hash : proof.fact_hash;
  if (fact) view.factValid = await read<boolean>(verifier, "isValid", [fact]);
  const escapeData = proof.calldata?.escape;
  if (exchange && escapeData)
    view.escaped = await call({ to: exchange, data: escapeData }).then(
      () => false,
      (e: unknown) => revertInWords(e).startsWith("ESCAPE_ALREADY_USED"),
    );
  const assetType = spot
    ? BigInt(proof.asset_id)
    : proof.system_asset_type
      ? BigInt(proof.system_asset_type)
      : await read<bigint>(exchange, "getSystemAssetType");
  if (assetType !== null) {
    view.withdrawable = await read<bigint>(exchange, "getWithdrawalBalance", [key, assetType]);
    view.asset = await assetUnits(read, exchange, assetType);
  }
  return view;
}

async function assetUnits(
  read: <T>(to: Hex | null, name: ReadName, args?: readonly unknown[]) => Promise<T | null>,
  exchange: Hex | null,
  assetType: bigint,
): Promise<AssetUnits | null> {
  const quantum = await read<bigint>(exchange, "getQuantum", [assetType]);
  if (quantum === null) return null;
  const info = await read<Hex>(exchange, "getAssetInfo", [assetType]);
  const kind = info ? (ASSET_KINDS[info.slice(0, 10).toLowerCase()] ?? null) : null;
  if (kind === "eth") return { kind, token: null, symbol: "ETH", decimals: 18, quantum };
  const token = info && info.length >= 10 + 64 ? (("0x" + info.slice(10 + 24, 10 + 64)) as Hex) : null;
  const decimals = token ? await read<number>(token, "decimals") : null;
  const symbol = token ? await read<string>(token, "symbol") : null;
  return { kind, token, symbol: symbol ?? "units", decimals: decimals ?? 0, quantum };
}

/** Which steps are done, which one is next, and which must wait (the grace period). */
export function stepStatus(plan: ExitPlan, v: ChainView): Partial<Record<ExitStepName, StepStatus>> {
  const done: Partial<Record<ExitStepName, boolean>> = {};
  done.register = v.ethKey !== null && v.ethKey !== ZERO_ADDRESS;
  done.request = v.frozen === true || (v.requestTime ?? 0n) > 0n;
  done.freeze = v.frozen === true;
  const credited = v.withdrawable !== null && v.withdrawable > 0n;
  const escaped = v.escaped || credited;
  done.verify_escape = v.factValid === true || escaped;
  done.escape = escaped;
  // Escaped and nothing left to withdraw: paid out.
  done.withdraw = v.escaped && v.withdrawable === 0n;
  const status: Partial<Record<ExitStepName, StepStatus>> = {};
  let nextFound = false;
  for (const s of plan.steps) {
    if (done[s.step]) {
      status[s.step] = "done";
    } else if (!nextFound) {
      nextFound = true;
      const waiting = s.step === "freeze" && v.freezeAt !== null && v.now !== null && v.now < v.freezeAt;
      status[s.step] = waiting ? "waiting" : "next";
    } else status[s.step] = "later";
  }
  return status;
}

/** The asset as the exit plan takes it (getAssetInfo's kind, getQuantum's quantum). */
export function exitAsset(a: AssetUnits | null): ExitAsset | undefined {
  if (!a || !a.kind) return undefined;
  return { kind: a.kind, quantum: a.quantum.toString(), ...(a.token ? { token: a.token } : {}) };
}

/** An amount in the asset's units: quantized × quantum, shown with the token's decimals. */
export function inUnits(quantized: bigint, asset: AssetUnits): string {
  return `${formatUnits(quantized * asset.quantum, asset.decimals)} ${asset.symbol}`;
}

/** An un-quantized amount (getWithdrawalBalance's) in the asset's units. */
export function rawInUnits(amount: bigint, asset: AssetUnits): string {
  return `${formatUnits(amount, asset.decimals)} ${asset.symbol}`;
}
