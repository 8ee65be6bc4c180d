import { bitAt, bytesToBigint, writeBigint32 } from "../../../util/bytes.js";

/**
 * Leaf ids packed 32 bytes each (big-endian) in one buffer, with their bits read from the bytes.
 * A BigInt per path node per level would be over a million heap objects for 20,000 leaves of a
 * 64-high tree, each one for the garbage collector to move; instead the nodes of a level are
 * described by their first leaf's position in here, and a node's side, index and meeting height
 * with its neighbour are read off these bytes.
 */
export class PackedIds {
  readonly bytes: Uint8Array;
  readonly length: number;

  constructor(ids: readonly bigint[]) {
    this.length = ids.length;
    this.bytes = new Uint8Array(ids.length * 32);
    for (let i = 0; i < ids.length; i++) writeBigint32(ids[i]!, this.bytes, i * 32);
  }

  at(i: number): bigint {
    return bytesToBigint(this.bytes, i * 32);
  }

  /** Bit k (0: least significant) of id i. */
  bit(i: number, k: number): number {
    return bitAt(this.bytes, i * 32, k);
  }

  /** Bits [from, from + count) of id i as a number (count ≤ 48): id i >> from, `count` bits of it. */
  bits(i: number, from: number, count: number): number {
    let v = 0;
    for (let k = from + count - 1; k >= from; k--) v = v * 2 + this.bit(i, k);
    return v;
  }

  /**
   * The height at which the leaves with ids i − 1 and i first share an ancestor: the bit length of
   * their XOR (ids must differ). Below it they sit in different subtrees.
   */
  meetHeight(i: number): number {
    const meet = this.meetHeightOf(i - 1, i);
    if (meet === 0) throw new RangeError(`ids ${i - 1} and ${i} are equal`);
    return meet;
  }

  /** The bit length of id i XOR id j (0 when they are equal): where leaves i and j meet. */
  meetHeightOf(i: number, j: number): number {
    const a = i * 32;
    const b = j * 32;
    for (let k = 0; k < 32; k++) {
      const x = this.bytes[a + k]! ^ this.bytes[b + k]!;
      if (x !== 0) return (31 - k) * 8 + 32 - Math.clz32(x);
    }
    return 0;
  }
}
