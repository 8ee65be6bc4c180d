import type { Hex } from "viem";
import {
  ASSET_ID,
  assetWord,
  collateralWord,
  inRange,
  isSigned64,
  MAX_ASSETS,
} from "../../model/leaf-rules.js";
import type { PositionLeaf } from "../../model/state-update.js";
import { perpetualEscapeCalldata, perpetualVerifyEscapeCalldata, withdrawCalldata } from "./abi.js";
import { INDEX_LIMIT, pathRows, rowsToWords, word0x, type MerklePath, type Row } from "./rows.js";
import { sourceFields, type EscapeSource } from "./source.js";
import { STATE_OFFSET } from "./shared-state.js";
import { perpetualFactHash, sharedStateHash, withdrawalAmount, WithdrawalError } from "./withdrawal.js";

/**
 * The perpetual escape (docs/escape-formats.md, "Perpetual"): the `merkleProof` words
 * `PerpetualEscapeVerifier.verifyEscape(merkleProof, nAssets, sharedState)` takes for a position.
 * The position's leaf is a hash chain, which the proof spells out as its first rows.
 */

export const PERPETUAL_ESCAPE_FORMAT = "starkex-escape-perpetual/1";

export const SHARED_STATE_NOTE =
  "verifyEscape(uint256[] merkleProof, uint256 nAssets, uint256[] sharedState) also takes sharedState: " +
  "the exchange's last accepted state on the base chain (position root and tree height, funding indices, " +
  "oracle prices). It is not part of the batch data a committee member holds: read it from the chain.";

export interface PerpetualEscape {
  format: typeof PERPETUAL_ESCAPE_FORMAT;
  profile?: string;
  batch_id?: number;
  sequence_number?: number;
  /** The empty position (key 0, collateral 0, no assets): valid, nothing to withdraw. */
  empty: boolean;
  position_id: string;
  public_key: Hex;
  collateral_balance: string;
  /** Ascending by asset id. */
  assets: { asset_id: Hex; balance: string; cached_funding_index: string }[];
  n_assets: number;
  position_root: Hex;
  tree_height: number;
  /** The `uint256[] merkleProof` argument: 2·(n_assets + 2 + tree_height + 1) words. */
  merkle_proof: Hex[];
  /** With the frozen batch's shared state (read from the base chain) only: */
  shared_state?: Hex[];
  /** keccak256(abi.encodePacked(shared_state)). */
  shared_state_hash?: Hex;
  /** The updateState transaction the shared state was read from. */
  shared_state_tx?: string;
  /** What the verifier computes the position may withdraw (collateral units, signed); absent when it refuses the position. */
  withdrawal_amount?: string;
  /** keccak256(abi.encodePacked(public_key, withdrawal_amount, shared_state_hash, position_id)), when the amount is positive. */
  fact_hash?: Hex;
  /** The collateral's asset type, which `withdraw` takes. */
  system_asset_type?: Hex;
  /** When the amount is positive: the three transactions (withdraw when the asset type is known). */
  calldata?: { verify_escape: Hex; escape: Hex; withdraw?: Hex };
  note: string;
  /** Only in a proof at another batch than the frozen one, from a store that saw the freeze (makeOnchainProof). */
  frozen_batch_id?: number;
  at_frozen_batch?: false;
  frozen_batch_note?: string;
}

/** The frozen batch's shared state as an escape takes it. */
export interface EscapeSharedState {
  readonly words: readonly bigint[];
  readonly txHash: string;
  readonly systemAssetType?: bigint;
}

/** The fields a shared state adds to a position's escape (in their JSON order), and its note. */
export type SharedStateFields = Pick<
  PerpetualEscape,
  | "shared_state"
  | "shared_state_hash"
  | "shared_state_tx"
  | "withdrawal_amount"
  | "fact_hash"
  | "system_asset_type"
  | "calldata"
  | "note"
>;

const STEPS =
  "Send calldata.verify_escape to the exchange's PerpetualEscapeVerifier, then calldata.escape to the frozen " +
  "exchange (it checks the fact the verifier registered), then calldata.withdraw from the owner's account.";

/**
 * What the shared state adds: the amount as the verifier computes it, the fact, and the call data
 * (`verifyCalldata` builds the verifyEscape call, which the kit writes without viem).
 */
export function sharedStateFields(
  values: readonly bigint[],
  root: bigint,
  height: number,
  positionId: bigint,
  shared: EscapeSharedState,
  verifyCalldata: () => Hex,
): SharedStateFields {
  const words = shared.words;
  const stateHash = sharedStateHash(words);
  const base = {
    shared_state: words.map(word0x),
    shared_state_hash: stateHash,
    shared_state_tx: shared.txHash,
  };
  const from = `sharedState is the frozen exchange's, from the program output of its updateState transaction ${shared.txHash}.`;
  const assetType =
    shared.systemAssetType === undefined ? {} : { system_asset_type: word0x(shared.systemAssetType) };
  if (words[STATE_OFFSET.positionRoot] !== root || words[STATE_OFFSET.positionHeight] !== BigInt(height))
    return {
      ...base,
      note: `${from} Its position root or tree height is not this proof's: the verifier refuses the proof against it.`,
    };
  let amount: bigint;
  try {
    amount = withdrawalAmount(values, words);
  } catch (err) {
    if (!(err instanceof WithdrawalError)) throw err;
    return { ...base, note: `${from} The verifier refuses this position with it: ${err.message}.` };
  }
  if (amount <= 0n)
    return {
      ...base,
      withdrawal_amount: amount.toString(),
      note: `${from} The verifier refuses a withdrawal amount that is not positive: this position has nothing to escape.`,
    };
  const publicKey = values[values.length - 2]!;
  return {
    ...base,
    withdrawal_amount: amount.toString(),
    fact_hash: perpetualFactHash(publicKey, amount, stateHash, positionId),
    ...assetType,
    calldata: {
      verify_escape: verifyCalldata(),
      escape: perpetualEscapeCalldata(publicKey, positionId, amount),
      ...(shared.systemAssetType === undefined
        ? {}
        : { withdraw: withdrawCalldata(publicKey, shared.systemAssetType) }),
    },
    note:
      `${from} ${STEPS}` +
      (shared.systemAssetType === undefined
        ? " The exchange's getSystemAssetType() could not be read: withdraw(ownerKey, assetType) takes it as assetType."
        : ""),
  };
}

/**
 * The values the position's leaf chains: each asset as asset id << 128 | biased funding << 64 |
 * biased balance (ascending by id), the public key, then biased collateral << 16 | asset count.
 */
export function positionValues(p: PositionLeaf): bigint[] {
  if (!isSigned64(p.collateral))
    throw new RangeError("collateral_balance is outside the signed 64-bit range");
  if (p.assets.length >= MAX_ASSETS) throw new RangeError("a position holds fewer than 2^16 assets");
  let previous = -1n;
  const values = p.assets.map((a) => {
    if (a.assetId <= previous) throw new RangeError("a position's assets must be ascending by id");
    if (!inRange(a.assetId, ASSET_ID)) throw new RangeError("an asset id is not below 2^120");
    if (!isSigned64(a.balance) || !isSigned64(a.fundingIndex))
      throw new RangeError(`asset 0x${a.assetId.toString(16)}: a value is outside the signed 64-bit range`);
    previous = a.assetId;
    return assetWord(a);
  });
  values.push(p.publicKey, collateralWord(p));
  return values;
}

/**
 * The rows: state_i ‖ value_i for the chain (states[0] = 0, states[i+1] = H(states[i], values[i]),
 * the last state the leaf), the path, then root ‖ position id << chain length.
 */
export function perpetualEscapeRows(
  values: readonly bigint[],
  states: readonly bigint[],
  path: MerklePath,
): Row[] {
  if (states.length !== values.length + 1 || states[0] !== 0n)
    throw new RangeError("a hash chain of n values has n + 1 states, from 0");
  if (states[values.length] !== path.nodes[0])
    throw new RangeError("the position's hash chain does not end at the path's leaf");
  const nodeIndex = path.index << BigInt(values.length);
  if (nodeIndex >= INDEX_LIMIT)
    throw new RangeError(`a position with ${values.length - 2} assets does not fit the proof's index`);
  return [...values.map((v, i): Row => [states[i]!, v]), ...pathRows(path, nodeIndex)];
}

/** The on-chain JSON of a position's escape; `states` as perpetualEscapeRows takes them. */
export function perpetualEscape(
  position: PositionLeaf,
  states: readonly bigint[],
  path: MerklePath,
  source?: EscapeSource,
  shared?: EscapeSharedState,
): PerpetualEscape {
  const values = positionValues(position);
  const words = rowsToWords(perpetualEscapeRows(values, states, path));
  const root = path.nodes[path.nodes.length - 1]!;
  const escape: PerpetualEscape = {
    format: PERPETUAL_ESCAPE_FORMAT,
    ...sourceFields(source),
    empty: position.publicKey === 0n && position.collateral === 0n && position.assets.length === 0,
    position_id: path.index.toString(),
    public_key: word0x(position.publicKey),
    collateral_balance: position.collateral.toString(),
    assets: position.assets.map((a) => ({
      asset_id: word0x(a.assetId),
      balance: a.balance.toString(),
      cached_funding_index: a.fundingIndex.toString(),
    })),
    n_assets: position.assets.length,
    position_root: word0x(root),
    tree_height: path.siblings.length,
    merkle_proof: words.map(word0x),
    note: SHARED_STATE_NOTE,
  };
  if (!shared) return escape;
  const withShared = sharedStateFields(values, root, path.siblings.length, path.index, shared, () =>
    perpetualVerifyEscapeCalldata(words, position.assets.length, shared.words),
  );
  // The note goes last, after what the shared state adds.
  const { note: _, ...rest } = escape;
  return { ...rest, ...withShared };
}
