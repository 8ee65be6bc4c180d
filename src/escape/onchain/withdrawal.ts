import { encodePacked, keccak256, type Hex } from "viem";
import { B63 as BIAS } from "../../model/leaf-rules.js";
import { STATE_OFFSET, STATE_OFFSET_FUNDING } from "./shared-state.js";

/**
 * The amount `PerpetualEscapeVerifier.verifyEscape` lets a position withdraw, computed as that
 * contract computes it: its arithmetic is unchecked uint256 (Solidity 0.6), two's complement for
 * the signed quantities, so every step here is taken modulo 2^256 and only the result is read as
 * a signed number. The position is its hash chain's values (positionValues): each asset as
 * asset id << 128 | biased cached funding << 64 | biased balance, the public key, then biased
 * collateral << 16 | asset count. Prices and funding indices are fixed point with 32 fractional
 * bits; the funding owed is rounded down to a whole collateral unit before it is added.
 */

const WORD = 1n << 256n;
const LOW_64 = (1n << 64n) - 1n;
const FXP_BITS = 32n;
const N_ASSETS_BITS = 16n;
/** ~(2^32 − 1) as a uint256: clears the fractional bits. */
const WHOLE = WORD - 1n - ((1n << FXP_BITS) - 1n);

const u256 = (x: bigint): bigint => ((x % WORD) + WORD) % WORD;
const signed = (x: bigint): bigint => (x >= WORD / 2n ? x - WORD : x);

/** Why the verifier would refuse the position with this shared state (it reverts). */
export class WithdrawalError extends Error {}

/** The index of the (assetId, value) entry from `start` on, stepping by 2, as the contract's search. */
function findAssetId(assetId: bigint, state: readonly bigint[], start: number, end: number): number {
  let idx = start;
  for (;;) {
    const key = state[idx];
    if (key === undefined)
      throw new WithdrawalError(`asset 0x${assetId.toString(16)} is not in the shared state`);
    if (key === assetId) return idx;
    idx += 2;
    if (idx >= end) throw new WithdrawalError(`asset 0x${assetId.toString(16)} is not in the shared state`);
  }
}

function stateWord(state: readonly bigint[], i: number): bigint {
  const w = state[i];
  if (w === undefined) throw new WithdrawalError(`the shared state has no word ${i}`);
  return w;
}

/** The position's balance in collateral units with 32 fractional bits (computeFxpBalance), signed. */
export function fxpBalance(position: readonly bigint[], sharedState: readonly bigint[]): bigint {
  const lastWord = position[position.length - 1]!;
  const nAssets = lastWord & ((1n << N_ASSETS_BITS) - 1n);
  const biasedBalance = lastWord >> N_ASSETS_BITS;
  if (BigInt(position.length) !== nAssets + 2n) throw new WithdrawalError("bad number of assets");
  if (biasedBalance >= 1n << 64n) throw new WithdrawalError("bad collateral balance");
  let balance = u256((biasedBalance - BIAS) << FXP_BITS);

  const nFunding = stateWord(sharedState, STATE_OFFSET.nFunding);
  const fundingEnd = STATE_OFFSET_FUNDING + 2 * Number(nFunding);
  let pricesAt = fundingEnd + 2;
  const nPrices = stateWord(sharedState, pricesAt - 1);
  const pricesEnd = pricesAt + 2 * Number(nPrices);

  let fundingAt = STATE_OFFSET_FUNDING;
  let fundingTotal = 0n;
  for (let i = 0; i < Number(nAssets); i++) {
    const asset = position[i]!;
    const assetId = asset >> 128n;
    const cachedFunding = (asset >> 64n) & LOW_64;
    const assetBalance = u256((asset & LOW_64) - BIAS);
    fundingAt = findAssetId(assetId, sharedState, fundingAt, fundingEnd);
    const fundingDelta = u256(stateWord(sharedState, fundingAt + 1) - cachedFunding);
    fundingTotal = u256(fundingTotal - assetBalance * fundingDelta);
    pricesAt = findAssetId(assetId, sharedState, pricesAt, pricesEnd);
    balance = u256(balance + assetBalance * stateWord(sharedState, pricesAt + 1));
  }
  return signed(u256(balance + (fundingTotal & WHOLE)));
}

/** The whole collateral units the verifier lets the position withdraw (may be ≤ 0: then it refuses). */
export function withdrawalAmount(position: readonly bigint[], sharedState: readonly bigint[]): bigint {
  // An arithmetic shift: rounds toward −∞ as Solidity's >> on int256.
  return fxpBalance(position, sharedState) >> FXP_BITS;
}

const hashes = new WeakMap<readonly bigint[], Hex>();

/** keccak256(abi.encodePacked(sharedState)): what the exchange keeps and the fact names (kept per array: a kit asks once per leaf). */
export function sharedStateHash(sharedState: readonly bigint[]): Hex {
  const known = hashes.get(sharedState);
  if (known) return known;
  const hash = keccak256(
    encodePacked(
      sharedState.map(() => "uint256"),
      [...sharedState],
    ),
  );
  hashes.set(sharedState, hash);
  return hash;
}

/**
 * The fact the verifier registers and the exchange's `escape` looks up:
 * keccak256(abi.encodePacked(publicKey, withdrawalAmount, sharedStateHash, positionId)).
 */
export function perpetualFactHash(
  publicKey: bigint,
  amount: bigint,
  stateHash: Hex,
  positionId: bigint,
): Hex {
  return keccak256(
    encodePacked(["uint256", "int256", "bytes32", "uint256"], [publicKey, amount, stateHash, positionId]),
  );
}
