/**
 * One root update read from the exchange, as dacd records it: which batch, where, and the roots it
 * commits per tree (named as dacd's trees), and the comparison with the roots dacd stored.
 */
import type { BatchRecord } from "../storage/batch-record.js";
import type { OnchainBatch } from "../storage/onchain-record.js";

/** A decoded LogRootUpdate / LogUpdateState (viem's args, all uint256). */
export interface RootUpdateLog {
  readonly eventName: "LogRootUpdate" | "LogUpdateState";
  readonly args: {
    readonly sequenceNumber?: bigint;
    readonly batchId?: bigint;
    readonly validiumVaultRoot?: bigint;
    readonly rollupVaultRoot?: bigint;
    readonly vaultRoot?: bigint;
    readonly orderRoot?: bigint;
  };
  readonly blockNumber: bigint;
  readonly transactionHash: string;
}

/** A root as dacd writes it: 64 lower-case hex digits, no prefix. */
export const rootHex = (v: bigint): string => v.toString(16).padStart(64, "0");

/**
 * The roots a log commits, by dacd's tree names (`mainTree`: vault for spot, position for
 * perpetual). LogUpdateState logs none: `viewRoots` are those of its updateState transaction's
 * program output, or the contract's views at its block.
 */
export function rootsOf(
  log: RootUpdateLog,
  mainTree: string,
  viewRoots?: { vault: bigint; order: bigint },
): Record<string, string> | undefined {
  const a = log.args;
  if (log.eventName === "LogUpdateState")
    return viewRoots && { [mainTree]: rootHex(viewRoots.vault), order: rootHex(viewRoots.order) };
  if (a.validiumVaultRoot !== undefined && a.rollupVaultRoot !== undefined && a.orderRoot !== undefined)
    return {
      [mainTree]: rootHex(a.validiumVaultRoot),
      rollup_vault: rootHex(a.rollupVaultRoot),
      order: rootHex(a.orderRoot),
    };
  if (a.vaultRoot !== undefined && a.orderRoot !== undefined)
    return { [mainTree]: rootHex(a.vaultRoot), order: rootHex(a.orderRoot) };
  return undefined;
}

/**
 * Whether the on-chain roots equal the stored ones, tree by tree, for the trees both name;
 * undefined when there is nothing to compare (no roots on-chain, the batch not stored).
 */
export function rootsMatch(
  onchain: Readonly<Record<string, string>> | undefined,
  stored: BatchRecord | undefined,
): boolean | undefined {
  if (!onchain || !stored) return undefined;
  const trees = Object.keys(onchain).filter((t) => stored.roots[t] !== undefined);
  if (trees.length === 0) return undefined;
  return trees.every((t) => stored.roots[t]!.toLowerCase() === onchain[t]);
}

/** The record of a log, compared with the stored batch. */
export function onchainBatch(
  log: RootUpdateLog,
  roots: Record<string, string> | undefined,
  stored: BatchRecord | undefined,
): OnchainBatch {
  const matches = rootsMatch(roots, stored);
  return {
    batch_id: Number(log.args.batchId ?? 0n),
    sequence_number: Number(log.args.sequenceNumber ?? 0n),
    block_number: Number(log.blockNumber),
    tx_hash: log.transactionHash,
    event: log.eventName,
    ...(roots ? { roots } : {}),
    ...(matches === undefined ? {} : { matches }),
  };
}
