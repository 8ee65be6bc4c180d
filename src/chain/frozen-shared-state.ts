/**
 * Perpetual: the frozen batch's shared state (what a user's escape is verified against), read
 * from the updateState transaction its LogUpdateState names and stored with the freeze. The watch
 * tries again at each poll until it is read.
 */
import { DacdError } from "../errors.js";
import type { Logger } from "../logging.js";
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainCursor } from "../storage/onchain-record.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import { rpcMessage } from "./rpc.js";
import type { WatchRecords } from "./watch-records.js";

export interface FrozenSharedStateDeps {
  readonly store: LevelStore;
  readonly endpoint: ExchangeEndpoint;
  readonly records: WatchRecords;
  readonly log: Logger;
}

/** Reads and records the shared state of `cursor`'s freeze (which must be set). */
export async function recordFrozenSharedState(
  cursor: OnchainCursor,
  deps: FrozenSharedStateDeps,
): Promise<void> {
  const { store, endpoint, records, log } = deps;
  const frozen = cursor.frozen!;
  const update = await store.onchain.batch(frozen.batch_id);
  if (!update)
    throw new DacdError(
      "STORE",
      `the exchange froze at batch ${frozen.batch_id}, whose LogUpdateState was not read: its shared state cannot be located`,
    );
  const shared = await endpoint.sharedStateOf(update);
  let assetType: string | undefined;
  try {
    assetType = await endpoint.systemAssetTypeAt(frozen.block_number);
  } catch (err) {
    log.warn(
      `cannot read the exchange's getSystemAssetType(): ${rpcMessage(err)}; escapes are given without the withdraw call`,
    );
  }
  const root = update.roots?.position;
  if (root !== undefined && BigInt(shared.words[0]!) !== BigInt(`0x${root}`))
    log.error(
      {
        batch_id: frozen.batch_id,
        tx_hash: update.tx_hash,
        shared_state_root: shared.words[0],
        recorded_root: root,
      },
      `the shared state of batch ${frozen.batch_id} names another position root than the one recorded for its update`,
    );
  const withShared: OnchainCursor = {
    ...cursor,
    frozen: {
      ...frozen,
      shared_state: { ...shared, ...(assetType ? { system_asset_type: assetType } : {}) },
    },
  };
  await records.record(withShared, []);
  log.info(
    { batch_id: frozen.batch_id, tx_hash: update.tx_hash, words: shared.words.length },
    `read the frozen batch ${frozen.batch_id}'s shared state from its updateState transaction: perpetual escapes carry it`,
  );
}
