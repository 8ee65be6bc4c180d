/**
 * The batch ids and sequence numbers dacd takes. The exchange's contract counts both in uint256,
 * far beyond what a member will ever see; dacd holds them as JavaScript numbers, and signs batch
 * N + 1 with sequence number S + 1 after N with S, so the largest it takes is the one whose successor
 * is still exact: 2^53 − 2. A larger one (a lying file or gateway) is refused where it enters,
 * rather than accepted and then failing at every batch after it.
 */
export const MAX_BATCH_NUMBER = Number.MAX_SAFE_INTEGER - 1;

/** Whether `n` is a batch id or sequence number dacd takes: an integer in [0, MAX_BATCH_NUMBER]. */
export function inBatchRange(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= MAX_BATCH_NUMBER;
}
