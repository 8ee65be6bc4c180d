import type { NodeWrites } from "./records/node-writes.js";
import type { BatchRecord } from "./batch-record.js";
import { TreeKind } from "./keys.js";

/**
 * A verified batch whose write to LevelDB is under way (BatchCommits.start, batch-commits.ts), with the records
 * it writes at hand by hash: the next batch's verification reads records of this batch's gen
 * before LevelDB holds them. Each list's index is built on its first lookup, since a batch asks
 * for few (often none) of the records the batch before it wrote.
 */
export class UnwrittenBatch {
  private readonly nodeIndex: HashIndex;
  private readonly leafIndex: HashIndex;

  constructor(
    readonly record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    /** Resolves once the batch is durably written; rejects if the write failed. */
    readonly durable: Promise<void>,
  ) {
    this.nodeIndex = new HashIndex(nodes);
    this.leafIndex = new HashIndex(leaves);
  }

  /** The record of a node (TreeKind.node) or leaf (TreeKind.leaf) this batch writes, by hash. */
  find(kind: number, hash: Uint8Array): Uint8Array | undefined {
    return (kind === TreeKind.leaf ? this.leafIndex : this.nodeIndex).get(hash);
  }
}

/** Open addressing over a NodeWrites' hashes, keyed by a hash's last four bytes. */
class HashIndex {
  /** Slot → record index + 1 (0: empty), and the hashes it indexes; built on the first get. */
  private built: { slots: Int32Array; mask: number; hashes: Uint8Array } | undefined;

  constructor(private readonly writes: NodeWrites) {}

  get(hash: Uint8Array): Uint8Array | undefined {
    const { slots, mask, hashes } = this.built ?? (this.built = this.build());
    for (let s = slotOf(hash, 0) & mask; ; s = (s + 1) & mask) {
      const entry = slots[s]!;
      if (entry === 0) return undefined;
      if (sameHash(hashes, (entry - 1) * 32, hash, 0)) return this.writes.record(entry - 1);
    }
  }

  /** The lists are complete by then: a batch's write is queued once its trees are done. */
  private build(): { slots: Int32Array; mask: number; hashes: Uint8Array } {
    const n = this.writes.length;
    let size = 16;
    while (size < n * 2) size *= 2;
    const slots = new Int32Array(size);
    const mask = size - 1;
    const hashes = this.writes.packed().hashes;
    for (let i = 0; i < n; i++) {
      let s = slotOf(hashes, i * 32) & mask;
      // A hash written twice in one batch has the same record both times: the first one answers.
      while (slots[s] !== 0 && !sameHash(hashes, (slots[s]! - 1) * 32, hashes, i * 32)) s = (s + 1) & mask;
      if (slots[s] === 0) slots[s] = i + 1;
    }
    return { slots, mask, hashes };
  }
}

/** The hash's last four bytes: the low bits of a field element, spread evenly (the top ones are 0). */
function slotOf(bytes: Uint8Array, at: number): number {
  return ((bytes[at + 28]! << 24) | (bytes[at + 29]! << 16) | (bytes[at + 30]! << 8) | bytes[at + 31]!) >>> 0;
}

function sameHash(a: Uint8Array, aAt: number, b: Uint8Array, bAt: number): boolean {
  for (let k = 31; k >= 0; k--) if (a[aAt + k] !== b[bAt + k]) return false;
  return true;
}
