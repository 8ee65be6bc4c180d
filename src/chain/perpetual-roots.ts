/**
 * A perpetual exchange's root update names no roots (LogUpdateState logs only the batch): its
 * position and order roots come from its updateState transaction's program output, or else from
 * the contract's views.
 */
import { BaseError } from "viem";
import { STATE_OFFSET } from "../escape/onchain/shared-state.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import type { RootUpdateLog } from "./root-update.js";
import { MalformedAnswer } from "./rpc.js";
import { sharedStateOfCall } from "./shared-state.js";
import type { WatchReport } from "./watch-report.js";

export interface PerpetualRoots {
  readonly vault: bigint;
  readonly order: bigint;
}

/**
 * The roots of the new shared state in `update`'s updateState transaction; when that is not a
 * direct call on the exchange, the contract's views, which show the state after the block, so
 * only for the block's last update (`lastInBlock`).
 */
export async function perpetualRoots(
  endpoint: ExchangeEndpoint,
  report: WatchReport,
  update: RootUpdateLog,
  lastInBlock: boolean,
  block: bigint,
): Promise<PerpetualRoots | undefined> {
  try {
    const tx = await endpoint.transaction(update.transactionHash);
    if (tx.to?.toLowerCase() === endpoint.address) {
      const words = sharedStateOfCall(tx.input, Number(update.args.batchId ?? 0n), "updateState");
      return { vault: words[STATE_OFFSET.positionRoot]!, order: words[STATE_OFFSET.orderRoot]! };
    }
  } catch (err) {
    if (err instanceof BaseError || err instanceof MalformedAnswer) throw err;
    // Not an updateState call this watch can read: the views below.
  }
  return lastInBlock ? viewRoots(endpoint, report, block) : undefined;
}

/** The contract's roots after block `block`. */
async function viewRoots(
  endpoint: ExchangeEndpoint,
  report: WatchReport,
  block: bigint,
): Promise<PerpetualRoots | undefined> {
  try {
    const [vault, order] = await Promise.all([
      endpoint.rootAt("getValidiumVaultRoot", block),
      endpoint.rootAt("getOrderRoot", block),
    ]);
    return { vault, order };
  } catch (err) {
    // A node without the state of old blocks: the update is recorded without roots.
    report.viewRootsFailed(err, block);
    return undefined;
  }
}
