import { toChecksumAddress, type HashEngine, type ProfileName } from "./shared.js";

export interface DevnetOptions {
  readonly variant: "P" | "G";
  /** Defaults: perpetual for P, spot for G ("spot-v4.0" also possible). */
  readonly profile?: ProfileName | undefined;
  readonly gatewayPort?: number | undefined;
  readonly feederPort?: number | undefined;
  readonly availabilityPort?: number | undefined;
  /** Committee addresses; when absent, any correctly recovered signer is accepted. */
  readonly committee?: readonly string[] | undefined;
  /** Distinct signatures per batch for quorum; default: the committee's size, or 1 without committee. */
  readonly quorum?: number | undefined;
  /** Transactions per batch at most (default 10); a full batch is cut at once. */
  readonly batchSize?: number | undefined;
  /** Ready transactions are cut into a batch this often (default 1000; 0 = only by size or /devnet/cut). */
  readonly batchIntervalMs?: number | undefined;
  /** Traffic generator rate in transactions per second (0 or absent: off). */
  readonly traffic?: number | undefined;
  readonly replay?: string | undefined;
  readonly expected?: string | undefined;
  readonly allowDynamicConfig?: boolean | undefined;
  readonly seed?: number | undefined;
  /** Variant P transaction filter: types refused by add_transaction. */
  readonly blockedTxTypes?: readonly string[] | undefined;
  readonly contractAddress?: string | undefined;
  readonly blockchainType?: string | undefined;
  readonly engine?: HashEngine | undefined;
  /** Clock in ms (tests). */
  readonly now?: (() => number) | undefined;
  /**
   * Settle on a local Ethereum node (started here, on 127.0.0.1): deploy the exchange contract
   * and commit each batch's roots once the quorum has signed it.
   */
  readonly baseChain?: boolean | undefined;
  /** The local node's port (0 or absent picks a free one). */
  readonly baseChainPort?: number | undefined;
  /**
   * Seconds between a user's forced request and the freeze it allows (the contract's
   * FREEZE_GRACE_PERIOD(); default StarkEx's 7 days; the node's time can be moved on).
   */
  readonly freezeGracePeriodS?: number | undefined;
}

export const DEFAULT_CONTRACT_ADDRESS = toChecksumAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3");

/** The options checked, with their defaults filled in. */
export interface DevnetSettings {
  /** Lower-case committee addresses; undefined: any recovered signer is accepted. */
  readonly committee: string[] | undefined;
  readonly quorum: number;
  readonly batchSize: number;
  readonly intervalMs: number;
}

/** Checks the options a devnet needs before it starts anything; a RangeError names the one at fault. */
export function devnetSettings(opts: DevnetOptions): DevnetSettings {
  if (opts.variant !== "P" && opts.variant !== "G") throw new RangeError("variant must be P or G");
  const committee = opts.committee?.map((a) => {
    if (!/^0x[0-9a-fA-F]{40}$/.test(a))
      throw new RangeError(`committee address ${a} is not a 0x-prefixed 20-byte address`);
    return a.toLowerCase();
  });
  const quorum = opts.quorum ?? (committee?.length || 1);
  if (!Number.isInteger(quorum) || quorum < 1) throw new RangeError("quorum must be a positive integer");
  const batchSize = opts.batchSize ?? 10;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError("batch size must be a positive integer");
  const intervalMs = opts.batchIntervalMs ?? 1000;
  if (!Number.isInteger(intervalMs) || intervalMs < 0)
    throw new RangeError("batch interval must be a non-negative integer");
  return { committee, quorum, batchSize, intervalMs };
}

/** A port option: 0 (or absent) picks a free port. */
export function checkPort(name: string, v: number | undefined): number {
  const p = v ?? 0;
  if (!Number.isInteger(p) || p < 0 || p > 65535)
    throw new RangeError(`${name} must be a port number (0 picks a free one)`);
  return p;
}
