/**
 * The shared state of a perpetual exchange's frozen batch, read from the base chain: the
 * `updateState` transaction that committed the batch (named by its LogUpdateState) carries the
 * program output, whose new shared state is what the exchange keeps the hash of and what a user's
 * escape is verified against.
 */
import { decodeFunctionData, type Hex, type PublicClient } from "viem";
import { DacdError } from "../errors.js";
import { newSharedState, readSharedState } from "../escape/onchain/shared-state.js";
import type { FrozenSharedState, OnchainBatch } from "../storage/onchain-record.js";
import { EXCHANGE_ABI, PERPETUAL_UPDATE_STATE_ABI } from "./exchange-abi.js";

const APP_DATA_BATCH_ID_OFFSET = 0;

const hex64 = (v: bigint): string => "0x" + v.toString(16).padStart(64, "0");

/** Decodes an updateState call's input into the new shared state; `what` names it in errors. */
export function sharedStateOfCall(input: Hex, batchId: number, what: string): bigint[] {
  let args: readonly [readonly bigint[], readonly bigint[]];
  try {
    const call = decodeFunctionData({ abi: PERPETUAL_UPDATE_STATE_ABI, data: input });
    args = call.args;
  } catch {
    throw new DacdError("BAD_INPUT", `${what} is not a call of updateState(uint256[],uint256[])`);
  }
  const [programOutput, applicationData] = args;
  const named = applicationData[APP_DATA_BATCH_ID_OFFSET];
  if (named !== BigInt(batchId))
    throw new DacdError(
      "BAD_INPUT",
      `${what}: its application data names batch ${String(named)}, not ${batchId}`,
    );
  try {
    const words = newSharedState(programOutput);
    readSharedState(words);
    return words;
  } catch (err) {
    throw new DacdError("BAD_INPUT", `${what}: ${(err as Error).message}`);
  }
}

/**
 * Reads the shared state of `update` (the frozen batch's LogUpdateState) from its transaction.
 * RPC failures are thrown as viem's errors (the watch retries them); a transaction that is not a
 * direct updateState call on the exchange is a DacdError.
 */
export async function readSharedStateOf(
  client: PublicClient,
  exchange: `0x${string}`,
  update: OnchainBatch,
): Promise<FrozenSharedState> {
  const what = `the updateState transaction ${update.tx_hash} of batch ${update.batch_id}`;
  const tx = await client.getTransaction({ hash: update.tx_hash as Hex });
  if (tx.to?.toLowerCase() !== exchange)
    throw new DacdError(
      "BAD_INPUT",
      `${what} was sent to ${String(tx.to)}, not to the exchange: its program output is not the transaction's input`,
    );
  const words = sharedStateOfCall(tx.input, update.batch_id, what);
  return { batch_id: update.batch_id, tx_hash: update.tx_hash, words: words.map(hex64) };
}

/** The exchange's collateral asset type at `block` (what `withdraw` takes). */
export async function readSystemAssetType(
  client: PublicClient,
  exchange: `0x${string}`,
  block: number,
): Promise<string> {
  const v = await client.readContract({
    address: exchange,
    abi: EXCHANGE_ABI,
    functionName: "getSystemAssetType",
    blockNumber: BigInt(block),
  });
  return hex64(v);
}
