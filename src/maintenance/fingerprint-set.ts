/**
 * A set of 96-bit fingerprints of records (the low 12 bytes of a hash, the record's gen folded into
 * the first 4: the same node written by two batches is two records): 12 bytes a slot instead of a
 * string per node. The mark uses it to skip subtrees already marked, so a collision could skip a
 * subtree; with 96 bits that takes ~2^48 nodes to become likely.
 */
export class FingerprintSet {
  private slots = new Uint32Array(3 * 1024);
  private count = 0;

  get size(): number {
    return this.count;
  }

  private static fp(h: Uint8Array, gen: number): [number, number, number] {
    const w = (o: number): number => ((h[o]! << 24) | (h[o + 1]! << 16) | (h[o + 2]! << 8) | h[o + 3]!) >>> 0;
    const o = h.length - 12;
    const a = (w(o) ^ gen) >>> 0;
    const b = w(o + 4);
    const c = w(o + 8);
    return a === 0 && b === 0 && c === 0 ? [0, 0, 1] : [a, b, c];
  }

  private find(a: number, b: number, c: number): { slot: number; found: boolean } {
    const cap = this.slots.length / 3;
    for (let i = c & (cap - 1); ; i = (i + 1) & (cap - 1)) {
      const x = this.slots[3 * i]!;
      const y = this.slots[3 * i + 1]!;
      const z = this.slots[3 * i + 2]!;
      if (x === a && y === b && z === c) return { slot: i, found: true };
      if (x === 0 && y === 0 && z === 0) return { slot: i, found: false };
    }
  }

  /** Adds the record of hash `h` written by batch `gen`; returns false when already present. */
  add(h: Uint8Array, gen: number): boolean {
    if ((this.count + 1) * 2 > this.slots.length / 3) this.grow();
    const [a, b, c] = FingerprintSet.fp(h, gen);
    const { slot, found } = this.find(a, b, c);
    if (found) return false;
    this.slots.set([a, b, c], 3 * slot);
    this.count++;
    return true;
  }

  has(h: Uint8Array, gen: number): boolean {
    return this.find(...FingerprintSet.fp(h, gen)).found;
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 3) {
      const [a, b, c] = [old[i]!, old[i + 1]!, old[i + 2]!];
      if (a !== 0 || b !== 0 || c !== 0) this.slots.set([a, b, c], 3 * this.find(a, b, c).slot);
    }
  }
}
