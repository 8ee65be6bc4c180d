import { B63 } from "../../model/leaf-rules.js";
/**
 * The devnet operator's perpetual state update as StarkEx perpetual's `updateState` takes it: the
 * shared state after a batch (roots and heights, global funding indices, oracle prices, system
 * time) inside a program output, laid out as StarkEx's ProgramOutputOffsets name it. The devnet
 * has no Cairo program: the output carries no asset configs, modifications, forced actions or
 * conditions.
 */

/** Funding indices are biased by 2^63 in the program output, as positions' are in their leaves. */
const FUNDING_BIAS = B63;

export interface PerpetualSharedState {
  readonly positionRoot: bigint;
  readonly positionHeight: number;
  readonly orderRoot: bigint;
  readonly orderHeight: number;
  /** Global funding index per synthetic asset (signed, 32 fractional bits), ascending by asset id. */
  readonly funding: ReadonlyMap<bigint, bigint>;
  readonly fundingTimestamp: bigint;
  /** Oracle price per synthetic asset (32 fractional bits), ascending by asset id. */
  readonly prices: ReadonlyMap<bigint, bigint>;
  readonly systemTime: bigint;
}

const ascending = (m: ReadonlyMap<bigint, bigint>): [bigint, bigint][] =>
  [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** The shared state's words; funding indices biased by 2^63 as the Cairo program outputs them. */
export function sharedStateWords(s: PerpetualSharedState): bigint[] {
  const funding = ascending(s.funding);
  const prices = ascending(s.prices);
  return [
    s.positionRoot,
    BigInt(s.positionHeight),
    s.orderRoot,
    BigInt(s.orderHeight),
    BigInt(funding.length),
    ...funding.flatMap(([asset, index]) => [asset, index + FUNDING_BIAS]),
    s.fundingTimestamp,
    BigInt(prices.length),
    ...prices.flat(),
    s.systemTime,
  ];
}

/**
 * The program output of a batch from `prev` to `next` (shared state words): general config hash,
 * validium mode, no asset configs, the two states, an expiration timestamp, then empty
 * modification, forced action and condition sections.
 */
export function programOutput(
  prev: readonly bigint[],
  next: readonly bigint[],
  expiration: bigint,
): bigint[] {
  return [0n, 0n, 0n, BigInt(prev.length), ...prev, BigInt(next.length), ...next, expiration, 0n, 0n, 0n, 0n];
}

/**
 * The application data: the batch id, the previous batch id (none, −1, as the uint256 of all
 * ones), no conditional transfers.
 */
export function applicationData(batchId: number, prevBatchId: number): bigint[] {
  const prev = prevBatchId < 0 ? (1n << 256n) - 1n : BigInt(prevBatchId);
  return [BigInt(batchId), prev, 0n];
}

/**
 * Devnet rule: the oracle price of a synthetic asset, in collateral units with 32 fractional bits
 * (the devnet has no oracle): 1 to 8 units, by the asset id's low bits.
 */
export function devnetPrice(assetId: bigint): bigint {
  return ((assetId & 7n) + 1n) << 32n;
}
