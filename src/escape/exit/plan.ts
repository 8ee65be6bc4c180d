import { encodeFunctionData, parseAbi, type Hex } from "viem";
import type { PerpetualEscape } from "../onchain/perpetual.js";
import type { SpotEscape } from "../onchain/spot.js";

/**
 * The exit from a frozen (or about to be frozen) StarkEx exchange as data: the transactions a user
 * sends, in order, with the call data where the committee's data and the options are enough, and
 * `data: null` with a note where a value only the chain holds is missing. Built from the on-chain
 * escape proof (`dacd proof … --format starkex`). Browser-safe: viem's ABI encoder and types only,
 * so the escape page's bundle imports it as the CLI, the control socket and the API do.
 *
 * Functions and argument order are StarkWare's exchange contracts' (docs/escape.md, "Exit").
 */

export type ExitObject = "vault" | "position";
export type ExitStepName = "register" | "request" | "freeze" | "verify_escape" | "escape" | "withdraw";
export type ExitProof = SpotEscape | PerpetualEscape;

/** A step's argument: a uint256 as 0x hex (keys, asset ids, words) or decimal (ids, amounts), an array, a bool, or null when unknown. */
export type ExitArg = string | readonly string[] | boolean | null;

/** What the chain says about a step (filled by readExitState; null in a plan made without the chain). */
export interface StepState {
  /**
   * done: already carried out (registered, requested, frozen, escaped, withdrawn); ready: it can be
   * sent now (a simulation from the owner passed); waiting: not yet (the grace period runs, the
   * exchange is not frozen); blocked: it would revert for another reason; unknown: not read.
   */
  status: "done" | "ready" | "waiting" | "blocked" | "unknown";
  /** Why, in words. */
  reason: string | null;
  /** The revert reason of an eth_call of the step's data (StarkEx's strings, e.g. ESCAPE_ALREADY_USED), when simulated. */
  revert: string | null;
  /** Step-specific values read (request time, freeze time, balances, …): strings for uint256s. */
  [key: string]: unknown;
}

export interface ExitStep {
  step: ExitStepName;
  contract: "exchange" | "verifier";
  /** The contract's address, when known (options.exchange / options.verifier). */
  to: Hex | null;
  /** Solidity's canonical signature, as the selector is computed from it. */
  function: string;
  /** The parameter names, one per arg. */
  inputs: string[];
  args: ExitArg[];
  /** The full call data; null where an argument needs the chain or the user (the note says which). */
  data: Hex | null;
  /** Wei sent with the call (none of these take any). */
  value: "0";
  /** Who may send it: the stark key's registered Ethereum address, or anyone. */
  sender: "owner" | "anyone";
  state: StepState | null;
  note: string | null;
}

export interface ExitPlan {
  object: ExitObject;
  id: string;
  batch_id: number | null;
  chain_id: number | null;
  /** The batch the exchange froze at, when known (the base-chain watch, the kit's manifest, the chain). */
  frozen_batch_id: number | null;
  /** Whether the proof is at the frozen batch: the only batch an escape verifier accepts once frozen; null when not known. */
  at_frozen_batch: boolean | null;
  exchange: Hex | null;
  verifier: Hex | null;
  /** The stark key (spot: the vault's; perpetual: the position's public key). */
  owner_key: Hex;
  /** Spot: the vault's asset id. */
  asset_id?: Hex;
  /** Spot: the vault's quantized balance; perpetual: the amount the verifier lets the position withdraw, or its collateral when the shared state is not known. */
  quantized_amount: string;
  empty: boolean;
  /** The fact the escape verifier registers and escape looks up (spot: the claim hash; perpetual: with the shared state only). */
  fact: Hex | null;
  /** Set when there is nothing to send (empty vault, nothing to withdraw): then `steps` is empty. */
  message: string | null;
  notes: string[];
  steps: ExitStep[];
}

/** What getAssetInfo(assetId) says the vault's asset is; `unregistered` when it reverts (an NFT's or a mintable asset's derived id). */
export type AssetKind =
  "eth" | "erc20" | "erc721" | "erc1155" | "mintable_erc20" | "mintable_erc721" | "unregistered";

export interface ExitAsset {
  kind: AssetKind;
  /** The token contract (ERC-20/721/1155, mintable), from the asset info. */
  token?: Hex;
  /** getQuantum(assetId), decimal. */
  quantum?: string;
  /** For withdrawWithTokenId: the asset type and token id, when the caller knows them (the vault holds only their hash). */
  asset_type?: Hex;
  token_id?: Hex;
}

export interface ExitOptions {
  chainId?: number | null;
  exchange?: Hex | null;
  verifier?: Hex | null;
  frozenBatchId?: number | null;
  /** getEthKey(ownerKey): the zero address when unregistered; undefined when not read. */
  ethKey?: Hex | null;
  /** Spot: what getAssetInfo/getQuantum say of the vault's asset; undefined when not read. */
  asset?: ExitAsset;
  /** Perpetual: getSystemAssetType(), when the proof does not carry it. */
  systemAssetType?: Hex;
}

const SIG = {
  register: "registerEthAddress(address,uint256,bytes)",
  spotRequest: "fullWithdrawalRequest(uint256,uint256)",
  spotFreeze: "freezeRequest(uint256,uint256)",
  spotVerify: "verifyEscape(uint256[])",
  spotEscape: "escape(uint256,uint256,uint256,uint256)",
  withdraw: "withdraw(uint256,uint256)",
  withdrawWithTokenId: "withdrawWithTokenId(uint256,uint256,uint256)",
  withdrawAndMint: "withdrawAndMint(uint256,uint256,bytes)",
  perpRequest: "forcedWithdrawalRequest(uint256,uint256,uint256,bool)",
  perpFreeze: "freezeRequest(uint256,uint256,uint256)",
  perpVerify: "verifyEscape(uint256[],uint256,uint256[])",
  perpEscape: "escape(uint256,uint256,uint256)",
} as const;

/** The ABI of every function a step calls (the two freezeRequest and escape overloads, one per variant). */
export const EXIT_ABI = parseAbi([
  "function registerEthAddress(address ethKey, uint256 starkKey, bytes starkSignature)",
  "function fullWithdrawalRequest(uint256 ownerKey, uint256 vaultId)",
  "function freezeRequest(uint256 ownerKey, uint256 vaultId)",
  "function verifyEscape(uint256[] escapeProof)",
  "function escape(uint256 ownerKey, uint256 vaultId, uint256 assetId, uint256 quantizedAmount)",
  "function withdraw(uint256 ownerKey, uint256 assetType)",
  "function withdrawWithTokenId(uint256 ownerKey, uint256 assetType, uint256 tokenId)",
  "function withdrawAndMint(uint256 ownerKey, uint256 assetType, bytes mintingBlob)",
  "function forcedWithdrawalRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount, bool premiumCost)",
  "function freezeRequest(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)",
  "function verifyEscape(uint256[] merkleProof, uint256 nAssets, uint256[] sharedState)",
  "function escape(uint256 starkKey, uint256 vaultId, uint256 quantizedAmount)",
]);

/** The call data of `signature` (one of EXIT_ABI's) with these arguments. */
function encode(signature: string, args: readonly unknown[]): Hex {
  const name = signature.slice(0, signature.indexOf("("));
  const types = signature.slice(name.length + 1, -1);
  const item = EXIT_ABI.find((f) => f.name === name && f.inputs.map((i) => i.type).join(",") === types);
  if (!item) throw new Error(`no ABI entry for ${signature}`);
  return encodeFunctionData({ abi: [item], functionName: name, args } as never);
}

interface StepInput {
  step: ExitStepName;
  contract: "exchange" | "verifier";
  signature: string;
  inputs: string[];
  args: ExitArg[];
  /** The values to encode; null when an argument is unknown. */
  values: readonly unknown[] | null;
  sender: "owner" | "anyone";
  note: string | null;
}

function makeStep(s: StepInput, options: ExitOptions): ExitStep {
  const to = (s.contract === "exchange" ? options.exchange : options.verifier) ?? null;
  return {
    step: s.step,
    contract: s.contract,
    to,
    function: s.signature,
    inputs: s.inputs,
    args: s.args,
    data: s.values === null ? null : encode(s.signature, s.values),
    value: "0",
    sender: s.sender,
    state: null,
    note: s.note,
  };
}

const REQUEST_NOTE =
  "Sent from the Ethereum address registered to the stark key. The operator must serve it within the " +
  "exchange's FREEZE_GRACE_PERIOD(); skip it when the exchange is already frozen.";
const FREEZE_NOTE =
  "Anyone may send it once the request is FREEZE_GRACE_PERIOD() old and still unserved (before that it " +
  "reverts); skip it when the exchange is already frozen.";

/** The register step: its stark signature is the user's own (the committee never holds stark private keys). */
function registerStep(ownerKey: Hex, options: ExitOptions): ExitStep | null {
  const eth = options.ethKey;
  if (eth !== undefined && eth !== null && BigInt(eth) !== 0n) return null;
  return makeStep(
    {
      step: "register",
      contract: "exchange",
      signature: SIG.register,
      inputs: ["ethKey", "starkKey", "starkSignature"],
      args: [null, ownerKey, null],
      values: null,
      sender: "anyone",
      note:
        (eth === undefined
          ? "Only when getEthKey(starkKey) is the zero address (not read here: no chain state). "
          : "The stark key has no Ethereum address on the exchange. ") +
        "ethKey is the user's Ethereum address and starkSignature the stark private key's signature of it, " +
        "as the exchange defines it; neither is in the committee's data.",
    },
    options,
  );
}

function frozenLabel(
  batchId: number | null,
  options: ExitOptions,
): Pick<ExitPlan, "frozen_batch_id" | "at_frozen_batch"> & { note: string | null } {
  const frozen = options.frozenBatchId ?? null;
  if (frozen === null || batchId === null)
    return { frozen_batch_id: frozen, at_frozen_batch: null, note: null };
  const at = frozen === batchId;
  return {
    frozen_batch_id: frozen,
    at_frozen_batch: at,
    note: at ? null : frozenBatchNote(batchId, frozen),
  };
}

/** Why a proof at `batchId` does not serve an exchange frozen at `frozenBatchId`. */
export function frozenBatchNote(batchId: number, frozenBatchId: number): string {
  return (
    `This proof is at batch ${batchId}, not at batch ${frozenBatchId} where the exchange froze: the escape ` +
    `verifier checks against the frozen batch's root and refuses it. Ask for the proof at batch ${frozenBatchId}.`
  );
}

/** The plan labelled with the frozen batch learnt later (e.g. from the chain): its note first, as exitPlan puts it. */
export function withFrozenBatch(plan: ExitPlan, frozenBatchId: number): ExitPlan {
  const label = frozenLabel(plan.batch_id, { frozenBatchId });
  return {
    ...plan,
    frozen_batch_id: label.frozen_batch_id,
    at_frozen_batch: label.at_frozen_batch,
    notes: label.note ? [label.note, ...plan.notes] : plan.notes,
  };
}

/** The exit plan of a vault (spot) or a position (perpetual) from its on-chain escape proof. */
export function exitPlan(proof: ExitProof, given: ExitOptions = {}): ExitPlan {
  // A proof from a store that saw the freeze carries the frozen batch.
  const options: ExitOptions = {
    ...given,
    frozenBatchId: given.frozenBatchId ?? proof.frozen_batch_id ?? null,
  };
  return proof.format === "starkex-escape-spot/1"
    ? spotPlan(proof, options)
    : perpetualPlan(proof as PerpetualEscape, options);
}

function base(
  object: ExitObject,
  id: string,
  batchId: number | undefined,
  options: ExitOptions,
): {
  head: Omit<ExitPlan, "owner_key" | "quantized_amount" | "empty" | "fact" | "message" | "notes" | "steps">;
  notes: string[];
} {
  const batch = batchId ?? null;
  const label = frozenLabel(batch, options);
  const notes: string[] = [];
  if (label.note) notes.push(label.note);
  if (!options.exchange) notes.push("The exchange's address is not known here: `to` is null for its steps.");
  if (!options.verifier)
    notes.push("The escape verifier's address is not known here: `to` is null for verify_escape.");
  return {
    head: {
      object,
      id,
      batch_id: batch,
      chain_id: options.chainId ?? null,
      frozen_batch_id: label.frozen_batch_id,
      at_frozen_batch: label.at_frozen_batch,
      exchange: options.exchange ?? null,
      verifier: options.verifier ?? null,
    },
    notes,
  };
}

function spotPlan(p: SpotEscape, options: ExitOptions): ExitPlan {
  const { head, notes } = base("vault", p.vault_id, p.batch_id, options);
  const amount = BigInt(p.quantized_amount);
  const plan = {
    ...head,
    owner_key: p.stark_key,
    asset_id: p.asset_id,
    quantized_amount: p.quantized_amount,
    empty: p.empty,
    fact: p.claim_hash,
  };
  if (p.empty || amount === 0n)
    return {
      ...plan,
      message: `Vault ${p.vault_id} is ${p.empty ? "empty" : "holding nothing"} at batch ${p.batch_id ?? "?"}: there is nothing to withdraw, and no transaction to send.`,
      notes,
      steps: [],
    };
  const key = BigInt(p.stark_key);
  const vaultId = BigInt(p.vault_id);
  const steps: ExitStep[] = [];
  const register = registerStep(p.stark_key, options);
  if (register) steps.push(register);
  steps.push(
    makeStep(
      {
        step: "request",
        contract: "exchange",
        signature: SIG.spotRequest,
        inputs: ["ownerKey", "vaultId"],
        args: [p.stark_key, p.vault_id],
        values: [key, vaultId],
        sender: "owner",
        note: REQUEST_NOTE,
      },
      options,
    ),
    makeStep(
      {
        step: "freeze",
        contract: "exchange",
        signature: SIG.spotFreeze,
        inputs: ["ownerKey", "vaultId"],
        args: [p.stark_key, p.vault_id],
        values: [key, vaultId],
        sender: "anyone",
        note: FREEZE_NOTE,
      },
      options,
    ),
    {
      ...makeStep(
        {
          step: "verify_escape",
          contract: "verifier",
          signature: SIG.spotVerify,
          inputs: ["escapeProof"],
          args: [p.escape_proof],
          values: null,
          sender: "anyone",
          note: "Registers the proof's fact with the escape verifier; anyone may send it once the exchange is frozen.",
        },
        options,
      ),
      data: p.calldata.verify_escape,
    },
    {
      ...makeStep(
        {
          step: "escape",
          contract: "exchange",
          signature: SIG.spotEscape,
          inputs: ["ownerKey", "vaultId", "assetId", "quantizedAmount"],
          args: [p.stark_key, p.vault_id, p.asset_id, p.quantized_amount],
          values: null,
          sender: "anyone",
          note: "Moves the vault's balance to the owner's on-chain withdrawal balance; once per vault (then ESCAPE_ALREADY_USED).",
        },
        options,
      ),
      data: p.calldata.escape,
    },
    spotWithdrawStep(p.stark_key, p.asset_id, options),
  );
  return { ...plan, message: null, notes, steps };
}

/**
 * The spot withdraw step: `withdraw` for ETH and ERC-20 (their asset id is their asset type),
 * `withdrawWithTokenId` for ERC-721/1155 and `withdrawAndMint` for mintable assets (their asset id
 * is a hash of the asset type with the token id or minting blob, which the vault does not hold).
 */
export function spotWithdrawStep(ownerKey: Hex, assetId: Hex, options: ExitOptions): ExitStep {
  const asset = options.asset;
  const key = BigInt(ownerKey);
  const fungible = (note: string | null, known: boolean): ExitStep =>
    makeStep(
      {
        step: "withdraw",
        contract: "exchange",
        signature: SIG.withdraw,
        inputs: ["ownerKey", "assetType"],
        args: [ownerKey, assetId],
        values: known ? [key, BigInt(assetId)] : null,
        sender: "owner",
        note,
      },
      options,
    );
  if (asset === undefined)
    return fungible(
      "getAssetInfo(assetId) decides the function (not read here: no chain state): withdraw(ownerKey, assetType) " +
        "with the asset id as assetType for ETH and ERC-20; withdrawWithTokenId for ERC-721/1155; withdrawAndMint for mintable assets.",
      false,
    );
  switch (asset.kind) {
    case "eth":
    case "erc20":
      return fungible(
        "Pays the withdrawal balance to the Ethereum address registered to the stark key.",
        true,
      );
    case "erc721":
    case "erc1155": {
      const known = asset.asset_type !== undefined && asset.token_id !== undefined;
      return makeStep(
        {
          step: "withdraw",
          contract: "exchange",
          signature: SIG.withdrawWithTokenId,
          inputs: ["ownerKey", "assetType", "tokenId"],
          args: [ownerKey, asset.asset_type ?? null, asset.token_id ?? null],
          values: known ? [key, BigInt(asset.asset_type!), BigInt(asset.token_id!)] : null,
          sender: "owner",
          note: known
            ? null
            : "The vault's asset id is a hash of the token's asset type and token id, which are not in the committee's data: " +
              "take them from the exchange's deposit or mint records.",
        },
        options,
      );
    }
    case "mintable_erc20":
    case "mintable_erc721":
      return makeStep(
        {
          step: "withdraw",
          contract: "exchange",
          signature: SIG.withdrawAndMint,
          inputs: ["ownerKey", "assetType", "mintingBlob"],
          args: [ownerKey, asset.asset_type ?? null, null],
          values: null,
          sender: "owner",
          note:
            "A mintable asset: the minting blob (and the asset type its id is derived from) are not in the committee's data; " +
            "only the exchange's mint records hold them.",
        },
        options,
      );
    case "unregistered":
      return makeStep(
        {
          step: "withdraw",
          contract: "exchange",
          signature: SIG.withdrawWithTokenId,
          inputs: ["ownerKey", "assetType", "tokenId"],
          args: [ownerKey, null, null],
          values: null,
          sender: "owner",
          note:
            "getAssetInfo(assetId) reverts: the asset id is not an asset type, so it is an ERC-721/1155 token's id " +
            "(withdrawWithTokenId(ownerKey, assetType, tokenId)) or a mintable asset's (withdrawAndMint(ownerKey, assetType, " +
            "mintingBlob)); the asset type, token id and minting blob are not in the committee's data.",
        },
        options,
      );
  }
}

function perpetualPlan(p: PerpetualEscape, options: ExitOptions): ExitPlan {
  const { head, notes } = base("position", p.position_id, p.batch_id, options);
  const withdrawal = p.withdrawal_amount === undefined ? undefined : BigInt(p.withdrawal_amount);
  const collateral = BigInt(p.collateral_balance);
  // The verifier's amount when the shared state is known; else the collateral, which a request names.
  const amount = withdrawal ?? collateral;
  const plan = {
    ...head,
    owner_key: p.public_key,
    quantized_amount: amount.toString(),
    empty: p.empty,
    fact: p.fact_hash ?? null,
  };
  const nothing = p.empty
    ? `Position ${p.position_id} is empty at batch ${p.batch_id ?? "?"}`
    : withdrawal !== undefined && withdrawal <= 0n
      ? `Position ${p.position_id} may withdraw ${withdrawal} at batch ${p.batch_id ?? "?"} (its collateral with its assets at the frozen prices and funding)`
      : withdrawal === undefined && p.n_assets === 0 && collateral <= 0n
        ? `Position ${p.position_id} holds no assets and a collateral balance of ${collateral}`
        : null;
  if (nothing !== null)
    return {
      ...plan,
      message: `${nothing}: there is nothing to withdraw, and no transaction to send.`,
      notes,
      steps: [],
    };
  if (withdrawal === undefined)
    notes.push(
      "The shared state (the exchange's last accepted state: funding indices, oracle prices) is not known here: " +
        "verify_escape and escape need it, and quantized_amount is the collateral balance, not the amount the verifier computes.",
    );
  const key = BigInt(p.public_key);
  const positionId = BigInt(p.position_id);
  const requestAmount = amount > 0n ? amount : null;
  const steps: ExitStep[] = [];
  const register = registerStep(p.public_key, options);
  if (register) steps.push(register);
  const amountNote =
    requestAmount === null
      ? "The amount is not positive without the shared state: name the collateral amount to withdraw. "
      : "";
  steps.push(
    makeStep(
      {
        step: "request",
        contract: "exchange",
        signature: SIG.perpRequest,
        inputs: ["starkKey", "vaultId", "quantizedAmount", "premiumCost"],
        args: [p.public_key, p.position_id, requestAmount?.toString() ?? null, false],
        values: requestAmount === null ? null : [key, positionId, requestAmount, false],
        sender: "owner",
        note: amountNote + REQUEST_NOTE,
      },
      options,
    ),
    makeStep(
      {
        step: "freeze",
        contract: "exchange",
        signature: SIG.perpFreeze,
        inputs: ["starkKey", "vaultId", "quantizedAmount"],
        args: [p.public_key, p.position_id, requestAmount?.toString() ?? null],
        values: requestAmount === null ? null : [key, positionId, requestAmount],
        sender: "anyone",
        note: amountNote + FREEZE_NOTE + " The amount is the request's.",
      },
      options,
    ),
  );
  const calldata = p.calldata;
  steps.push(
    {
      ...makeStep(
        {
          step: "verify_escape",
          contract: "verifier",
          signature: SIG.perpVerify,
          inputs: ["merkleProof", "nAssets", "sharedState"],
          args: [p.merkle_proof, String(p.n_assets), p.shared_state ?? null],
          values: null,
          sender: "anyone",
          note: calldata
            ? "Registers the proof's fact with the perpetual escape verifier; anyone may send it once the exchange is frozen."
            : "Needs the shared state, from the chain (the program output of the frozen batch's updateState transaction).",
        },
        options,
      ),
      data: calldata?.verify_escape ?? null,
    },
    {
      ...makeStep(
        {
          step: "escape",
          contract: "exchange",
          signature: SIG.perpEscape,
          inputs: ["starkKey", "vaultId", "quantizedAmount"],
          args: [p.public_key, p.position_id, withdrawal?.toString() ?? null],
          values: null,
          sender: "anyone",
          note: calldata
            ? "Credits the amount to the owner's withdrawal balance; once per position (then ESCAPE_ALREADY_USED)."
            : "Needs the amount the verifier computes from the shared state, from the chain.",
        },
        options,
      ),
      data: calldata?.escape ?? null,
    },
  );
  steps.push(perpetualWithdrawStep(p.public_key, p.system_asset_type ?? options.systemAssetType, options));
  return { ...plan, message: null, notes, steps };
}

/** The perpetual withdraw step: `withdraw(ownerKey, assetType)` with the collateral's asset type (getSystemAssetType()). */
export function perpetualWithdrawStep(
  ownerKey: Hex,
  assetType: Hex | undefined,
  options: ExitOptions,
): ExitStep {
  return makeStep(
    {
      step: "withdraw",
      contract: "exchange",
      signature: SIG.withdraw,
      inputs: ["ownerKey", "assetType"],
      args: [ownerKey, assetType ?? null],
      values: assetType === undefined ? null : [BigInt(ownerKey), BigInt(assetType)],
      sender: "owner",
      note:
        assetType === undefined
          ? "assetType is the exchange's getSystemAssetType() (the collateral), from the chain."
          : "Pays the collateral to the Ethereum address registered to the stark key.",
    },
    options,
  );
}

/** A plan for an id the store or kit does not have: no transactions, and why. */
export function noExitPlan(
  object: ExitObject,
  id: string,
  message: string,
  options: ExitOptions = {},
): ExitPlan {
  return {
    object,
    id,
    batch_id: null,
    chain_id: options.chainId ?? null,
    frozen_batch_id: options.frozenBatchId ?? null,
    at_frozen_batch: null,
    exchange: options.exchange ?? null,
    verifier: options.verifier ?? null,
    owner_key: `0x${"0".repeat(64)}`,
    quantized_amount: "0",
    empty: true,
    fact: null,
    message,
    notes: [],
    steps: [],
  };
}

/** Whether an address is the zero address (getEthKey's answer for an unregistered key). */
export const isZeroAddress = (a: Hex): boolean => BigInt(a) === 0n;
