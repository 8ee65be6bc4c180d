/**
 * Where the watch reads a contract from: its stored cursor for the contract it follows, else the
 * contract's deployment block (a first start, or starkex_contract_address changed: the other
 * contract's records are dropped).
 */
import { DacdError } from "../errors.js";
import type { Logger } from "../logging.js";
import type { OnchainCursor } from "../storage/onchain-record.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import { rpcMessage } from "./rpc.js";
import type { WatchRecords } from "./watch-records.js";

export interface ContractStartDeps {
  readonly endpoint: ExchangeEndpoint;
  readonly records: WatchRecords;
  readonly log: Logger;
}

/**
 * The stored cursor for this contract; another contract's is dropped with its batches. A first
 * start begins at the contract's deployment, not at genesis.
 */
export async function contractCursor(head: number, deps: ContractStartDeps): Promise<OnchainCursor> {
  const { endpoint, records, log } = deps;
  const cursor = records.cursor;
  if (cursor?.contract === endpoint.address) return cursor;
  const fresh: OnchainCursor = { contract: endpoint.address, next_block: await deploymentBlock(head, deps) };
  if (cursor) {
    log.warn(
      { was: cursor.contract, now: endpoint.address },
      "starkex_contract_address changed: following the new contract from its deployment",
    );
    await records.record(fresh, [], { dropAll: true });
  }
  // Kept until the first range is recorded, so that the deployment is looked for once.
  records.keep(fresh);
  return fresh;
}

/**
 * The block the contract was deployed in: the first with code at its address, by bisection
 * (some 25 calls on mainnet instead of thousands of log ranges from genesis). A node that keeps
 * no old state cannot answer: then genesis. No code at the head is a wrong address: an error
 * until it is fixed.
 */
async function deploymentBlock(head: number, { endpoint, log }: ContractStartDeps): Promise<number> {
  if (!(await endpoint.hasCode(head))) {
    throw new DacdError(
      "CONFIG",
      `no contract at starkex_contract_address ${endpoint.address} on the base chain (block ${head}): check the address and base_chain_rpc_url`,
    );
  }
  let lo = 0;
  let hi = head;
  try {
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (await endpoint.hasCode(mid)) hi = mid;
      else lo = mid + 1;
    }
  } catch (err) {
    log.warn(
      `cannot find the contract's deployment block (${rpcMessage(err)}): reading its logs from block 0`,
    );
    return 0;
  }
  return hi;
}
