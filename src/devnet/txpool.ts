/**
 * Received transactions by caller-issued tx_id. Batches take transactions strictly in tx_id order,
 * so a gap (a missing id) holds back every later id until it is filled.
 */
export interface PooledTx<T> {
  readonly txId: number;
  readonly raw: unknown;
  readonly parsed: T;
  readonly canonical: string;
}

export class TxPool<T> {
  private readonly txs = new Map<number, PooledTx<T>>();
  /** Every id below this one exists. */
  private contiguous = 0;
  /** The next id a batch will take. */
  private nextToBatch = 0;

  /** Adds a transaction; "duplicate" when the id holds a different transaction, "same" for a resubmission. */
  add(txId: number, raw: unknown, parsed: T): "added" | "same" | "duplicate" {
    const canonical = JSON.stringify(raw);
    const old = this.txs.get(txId);
    if (old) return old.canonical === canonical ? "same" : "duplicate";
    this.txs.set(txId, { txId, raw, parsed, canonical });
    while (this.txs.has(this.contiguous)) this.contiguous++;
    return "added";
  }

  get(txId: number): PooledTx<T> | undefined {
    return this.txs.get(txId);
  }

  /** The next tx_id whose predecessors all exist (0 when none exist). */
  firstUnused(): number {
    return this.contiguous;
  }

  /** How many transactions are ready for the next batch (contiguous and not yet batched). */
  ready(): number {
    return this.contiguous - this.nextToBatch;
  }

  /** Takes up to `max` ready transactions, in tx_id order. */
  take(max: number): PooledTx<T>[] {
    const out: PooledTx<T>[] = [];
    while (out.length < max && this.nextToBatch < this.contiguous)
      out.push(this.txs.get(this.nextToBatch++)!);
    return out;
  }

  /** Number of received transactions. */
  size(): number {
    return this.txs.size;
  }
}
