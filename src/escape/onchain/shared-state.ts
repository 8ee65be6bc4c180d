/**
 * The perpetual exchange's shared state: the words its `updateState` program output carries for
 * the state after a batch, whose keccak the contract keeps and `PerpetualEscapeVerifier` checks
 * an escape against (docs/escape-formats.md, "Perpetual"). Offsets are StarkEx perpetual's
 * ProgramOutputOffsets.
 */

/** Shared state offsets: position (vaults) root and height, order root and height, funding count. */
export const STATE_OFFSET = { positionRoot: 0, positionHeight: 1, orderRoot: 2, orderHeight: 3, nFunding: 4 };
/** The funding entries start here, (asset id, biased index) pairs, then a timestamp word. */
export const STATE_OFFSET_FUNDING = 5;

/** Program output: general config hash, availability mode, asset config count, its (id, hash) pairs. */
const PROG_OUT_N_ASSET_CONFIGS = 2;
const PROG_OUT_ASSET_CONFIG_HASHES = 3;
const PROG_OUT_N_WORDS_PER_ASSET_CONFIG = 2;

export interface SharedStateView {
  readonly positionRoot: bigint;
  readonly positionHeight: bigint;
  readonly orderRoot: bigint;
  readonly orderHeight: bigint;
  /** (asset id, funding index biased by 2^63), in the state's order. */
  readonly funding: readonly (readonly [bigint, bigint])[];
  readonly fundingTimestamp: bigint;
  /** (asset id, price: fixed point with 32 fractional bits), in the state's order. */
  readonly prices: readonly (readonly [bigint, bigint])[];
  /** The last word: the system time. */
  readonly systemTime: bigint;
}

function at(words: readonly bigint[], i: number, what: string): bigint {
  const w = words[i];
  if (w === undefined) throw new RangeError(`the shared state ends before its ${what} (word ${i})`);
  return w;
}

function count(words: readonly bigint[], i: number, what: string): number {
  const n = at(words, i, what);
  if (n > BigInt(words.length)) throw new RangeError(`the shared state's ${what} (${n}) exceeds its size`);
  return Number(n);
}

function pairs(words: readonly bigint[], from: number, n: number, what: string): [bigint, bigint][] {
  return Array.from({ length: n }, (_, k) => [
    at(words, from + 2 * k, what),
    at(words, from + 2 * k + 1, what),
  ]);
}

/** The fields of a shared state; a state too short for the counts it states is refused. */
export function readSharedState(words: readonly bigint[]): SharedStateView {
  const nFunding = count(words, STATE_OFFSET.nFunding, "funding index count");
  const fundingEnd = STATE_OFFSET_FUNDING + 2 * nFunding;
  const nPrices = count(words, fundingEnd + 1, "price count");
  const pricesEnd = fundingEnd + 2 + 2 * nPrices;
  if (words.length < pricesEnd + 1)
    throw new RangeError(
      `the shared state has ${words.length} words: its counts need at least ${pricesEnd + 1}`,
    );
  return {
    positionRoot: at(words, STATE_OFFSET.positionRoot, "position root"),
    positionHeight: at(words, STATE_OFFSET.positionHeight, "position tree height"),
    orderRoot: at(words, STATE_OFFSET.orderRoot, "order root"),
    orderHeight: at(words, STATE_OFFSET.orderHeight, "order tree height"),
    funding: pairs(words, STATE_OFFSET_FUNDING, nFunding, "funding indices"),
    fundingTimestamp: at(words, fundingEnd, "funding timestamp"),
    prices: pairs(words, fundingEnd + 2, nPrices, "prices"),
    systemTime: words[words.length - 1]!,
  };
}

/**
 * The new shared state in a perpetual `updateState(programOutput, applicationData)`'s program
 * output: after the asset configs come the previous state (its size, then its words) and the new
 * state (likewise).
 */
export function newSharedState(programOutput: readonly bigint[]): bigint[] {
  const word = (i: number, what: string): bigint => {
    const w = programOutput[i];
    if (w === undefined) throw new RangeError(`the program output ends before its ${what} (word ${i})`);
    return w;
  };
  const size = (i: number, what: string): number => {
    const n = word(i, what);
    if (n > BigInt(programOutput.length))
      throw new RangeError(`the program output's ${what} (${n}) exceeds it`);
    return Number(n);
  };
  const nConfigs = size(PROG_OUT_N_ASSET_CONFIGS, "asset config count");
  let offset = PROG_OUT_ASSET_CONFIG_HASHES + nConfigs * PROG_OUT_N_WORDS_PER_ASSET_CONFIG;
  offset += 1 + size(offset, "previous shared state size");
  const newSize = size(offset, "new shared state size");
  offset += 1;
  if (programOutput.length < offset + newSize)
    throw new RangeError(
      `the program output ends inside its new shared state (${newSize} words from ${offset})`,
    );
  return programOutput.slice(offset, offset + newSize);
}
