/** Distinct committee-member signatures per batch, counted toward a quorum. */
export interface QuorumState {
  readonly batch_id: number;
  readonly signers: string[];
  readonly count: number;
  readonly quorum: number;
  readonly reached: boolean;
}

export class Approvals {
  private readonly byBatch = new Map<number, Map<string, string>>();
  private readonly waiters: { batchId: number; resolve: () => void }[] = [];

  constructor(
    readonly quorum: number,
    /** Lower-case committee addresses; null accepts any correctly recovered signer. */
    readonly committee: ReadonlySet<string> | null,
  ) {}

  inCommittee(address: string): boolean {
    return this.committee === null || this.committee.has(address.toLowerCase());
  }

  /** Records a signature; returns false when this member had already signed the batch. */
  record(batchId: number, address: string, signature: string): boolean {
    let m = this.byBatch.get(batchId);
    if (!m) this.byBatch.set(batchId, (m = new Map()));
    const fresh = !m.has(address);
    if (fresh) m.set(address, signature);
    if (this.reached(batchId)) {
      for (let i = this.waiters.length - 1; i >= 0; i--) {
        const w = this.waiters[i]!;
        if (w.batchId === batchId) {
          this.waiters.splice(i, 1);
          w.resolve();
        }
      }
    }
    return fresh;
  }

  count(batchId: number): number {
    return this.byBatch.get(batchId)?.size ?? 0;
  }

  reached(batchId: number): boolean {
    return this.count(batchId) >= this.quorum;
  }

  state(batchId: number): QuorumState {
    const signers = [...(this.byBatch.get(batchId)?.keys() ?? [])];
    return {
      batch_id: batchId,
      signers,
      count: signers.length,
      quorum: this.quorum,
      reached: signers.length >= this.quorum,
    };
  }

  /** Resolves once the batch has reached quorum. */
  wait(batchId: number): Promise<void> {
    if (this.reached(batchId)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ batchId, resolve }));
  }
}
