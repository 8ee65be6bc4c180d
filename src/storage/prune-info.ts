/**
 * The prune marker (meta record `prune`, written by the prune before it sweeps): every batch id up
 * to `up_to` that is not in `kept` had its tree nodes swept; its batch record is kept.
 */
export interface PruneInfo {
  readonly up_to: number;
  readonly kept: number[];
  readonly at: string;
}

/** Whether batch `batchId` lost its trees to a prune. */
export function isPruned(info: PruneInfo | undefined, batchId: number): boolean {
  return info !== undefined && batchId <= info.up_to && !info.kept.includes(batchId);
}
