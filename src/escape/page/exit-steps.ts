import { encodeFunctionData, parseAbi, type Hex } from "viem";

/**
 * The escape page's steps out of a frozen exchange, from a proof alone (no chain): register,
 * request, freeze, verify_escape, escape, withdraw, in the order they must be sent, with the
 * function and argument order of StarkWare's exchange contracts and the JSON shape of
 * `dacd exit --json` (docs/exit.md). Pure (viem's ABI encoder only) so that the page's bundle
 * carries it. `register` is added by the chain reads (it depends on getEthKey).
 */

export type StepName = "register" | "request" | "freeze" | "verify_escape" | "escape" | "withdraw";

export interface ExitStep {
  step: StepName;
  contract: "exchange" | "verifier";
  to: Hex | null;
  function: string;
  args: string[];
  /** The call data to send; null where a value must come from the chain first (see note). */
  data: Hex | null;
  value: "0";
  state: unknown;
  note: string | null;
}

export interface ExitPlan {
  object: "vault" | "position";
  id: string;
  batch_id: number | null;
  chain_id: number | null;
  /** The proof holds nothing to withdraw (an empty vault or position): no steps. */
  empty: boolean;
  steps: ExitStep[];
}

export interface ExitContracts {
  readonly exchange?: string | null;
  readonly verifier?: string | null;
}

/** The proof JSON of `dacd proof … --format starkex` (src/escape/onchain), the fields read here. */
export interface PageProof {
  format: string;
  batch_id?: number;
  empty: boolean;
  vault_id?: string;
  stark_key?: Hex;
  asset_id?: Hex;
  quantized_amount?: string;
  vault_root?: Hex;
  claim_hash?: Hex;
  escape_proof?: Hex[];
  position_id?: string;
  public_key?: Hex;
  collateral_balance?: string;
  position_root?: Hex;
  n_assets?: number;
  withdrawal_amount?: string;
  fact_hash?: Hex;
  system_asset_type?: Hex;
  calldata?: { verify_escape: Hex; escape: Hex; withdraw?: Hex };
  note?: string;
}

export const SPOT_FORMAT = "starkex-escape-spot/1";
export const PERPETUAL_FORMAT = "starkex-escape-perpetual/1";

export const EXIT_ABI = parseAbi([
  "function registerEthAddress(address ethKey, uint256 starkKey, bytes starkSignature)",
  "function fullWithdrawalRequest(uint256 ownerKey, uint256 vaultId)",
  "function forcedWithdrawalRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount, bool premiumCost)",
  "function freezeRequest(uint256 ownerKey, uint256 vaultId)",
  "function freezeRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)",
  "function withdraw(uint256 ownerKey, uint256 assetType)",
  "function withdrawWithTokenId(uint256 ownerKey, uint256 assetType, uint256 tokenId)",
]);

function address(a: string | null | undefined): Hex | null {
  return a && /^0x[0-9a-fA-F]{40}$/.test(a) ? (a as Hex) : null;
}

function call(
  step: StepName,
  contract: "exchange" | "verifier",
  to: Hex | null,
  signature: string,
  args: string[],
  data: Hex | null,
  note: string | null = null,
): ExitStep {
  return { step, contract, to, function: signature, args, data, value: "0", state: null, note };
}

/** Whether the proof is a spot vault's (else a perpetual position's); throws on anything else. */
export function isSpotProof(proof: PageProof): boolean {
  if (proof.format === SPOT_FORMAT) return true;
  if (proof.format === PERPETUAL_FORMAT) return false;
  throw new Error(`not an escape proof (format ${JSON.stringify(proof.format)})`);
}

export function exitSteps(proof: PageProof, contracts: ExitContracts, chainId: number | null): ExitPlan {
  const spot = isSpotProof(proof);
  const exchange = address(contracts.exchange);
  const verifier = address(contracts.verifier);
  const base = {
    object: spot ? ("vault" as const) : ("position" as const),
    id: (spot ? proof.vault_id : proof.position_id) ?? "",
    batch_id: proof.batch_id ?? null,
    chain_id: chainId,
  };
  if (spot) {
    const key = BigInt(proof.stark_key!);
    const vault = BigInt(proof.vault_id!);
    const asset = BigInt(proof.asset_id!);
    if (proof.empty || BigInt(proof.quantized_amount ?? "0") === 0n)
      return { ...base, empty: true, steps: [] };
    const words = (proof.escape_proof ?? []).length;
    return {
      ...base,
      empty: false,
      steps: [
        call(
          "request",
          "exchange",
          exchange,
          "fullWithdrawalRequest(uint256,uint256)",
          [key.toString(), vault.toString()],
          encodeFunctionData({ abi: EXIT_ABI, functionName: "fullWithdrawalRequest", args: [key, vault] }),
        ),
        call(
          "freeze",
          "exchange",
          exchange,
          "freezeRequest(uint256,uint256)",
          [key.toString(), vault.toString()],
          encodeFunctionData({ abi: EXIT_ABI, functionName: "freezeRequest", args: [key, vault] }),
        ),
        call(
          "verify_escape",
          "verifier",
          verifier,
          "verifyEscape(uint256[])",
          [`[${words} words: the proof's escape_proof]`],
          proof.calldata!.verify_escape,
        ),
        call(
          "escape",
          "exchange",
          exchange,
          "escape(uint256,uint256,uint256,uint256)",
          [key.toString(), vault.toString(), asset.toString(), proof.quantized_amount!],
          proof.calldata!.escape,
        ),
        call(
          "withdraw",
          "exchange",
          exchange,
          "withdraw(uint256,uint256)",
          [key.toString(), asset.toString()],
          encodeFunctionData({ abi: EXIT_ABI, functionName: "withdraw", args: [key, asset] }),
          "For ETH and ERC-20 assets, whose asset type is the asset id; an NFT is withdrawn with withdrawWithTokenId.",
        ),
      ],
    };
  }
  const key = BigInt(proof.public_key!);
  const position = BigInt(proof.position_id!);
  const amountText = proof.withdrawal_amount ?? proof.collateral_balance ?? "0";
  const amount = BigInt(amountText);
  if (proof.empty || amount <= 0n) return { ...base, empty: true, steps: [] };
  const sharedNote = proof.calldata
    ? null
    : (proof.note ?? "needs the exchange's shared state from the chain");
  const withdrawData =
    proof.calldata?.withdraw ??
    (proof.system_asset_type
      ? encodeFunctionData({
          abi: EXIT_ABI,
          functionName: "withdraw",
          args: [key, BigInt(proof.system_asset_type)],
        })
      : null);
  return {
    ...base,
    empty: false,
    steps: [
      call(
        "request",
        "exchange",
        exchange,
        "forcedWithdrawalRequest(uint256,uint256,uint256,bool)",
        [key.toString(), position.toString(), amount.toString(), "false"],
        encodeFunctionData({
          abi: EXIT_ABI,
          functionName: "forcedWithdrawalRequest",
          args: [key, position, amount, false],
        }),
      ),
      call(
        "freeze",
        "exchange",
        exchange,
        "freezeRequest(uint256,uint256,uint256)",
        [key.toString(), position.toString(), amount.toString()],
        encodeFunctionData({ abi: EXIT_ABI, functionName: "freezeRequest", args: [key, position, amount] }),
      ),
      call(
        "verify_escape",
        "verifier",
        verifier,
        "verifyEscape(uint256[],uint256,uint256[])",
        [`[${(proof.n_assets ?? 0) + 0} assets]`],
        proof.calldata?.verify_escape ?? null,
        sharedNote,
      ),
      call(
        "escape",
        "exchange",
        exchange,
        "escape(uint256,uint256,uint256)",
        [key.toString(), position.toString(), amountText],
        proof.calldata?.escape ?? null,
        sharedNote,
      ),
      call(
        "withdraw",
        "exchange",
        exchange,
        "withdraw(uint256,uint256)",
        [
          key.toString(),
          proof.system_asset_type ? BigInt(proof.system_asset_type).toString() : "systemAssetType",
        ],
        withdrawData,
        withdrawData ? null : "needs the collateral's asset type (getSystemAssetType() on the exchange)",
      ),
    ],
  };
}

/**
 * The steps as a Safe Transaction Builder batch file (Safe's "Transaction Builder" app imports it),
 * for a multisig holder: every step that has call data and an address, in order.
 */
export function safeBatch(plan: ExitPlan, chainId: number | null, createdAt: number): unknown {
  return {
    version: "1.0",
    chainId: String(chainId ?? ""),
    createdAt,
    meta: {
      name: `Leave the exchange: ${plan.object} ${plan.id}`,
      description: plan.steps.map((s) => s.step).join(", "),
      txBuilderVersion: "1.16.5",
      createdFromSafeAddress: "",
      createdFromOwnerAddress: "",
    },
    transactions: plan.steps
      .filter((s) => s.data && s.to)
      .map((s) => ({ to: s.to, value: "0", data: s.data, contractMethod: null, contractInputsValues: null })),
  };
}
