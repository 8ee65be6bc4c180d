import { DacdError } from "../../errors.js";
import { climbChains, type HashEngine } from "../../verifier/hash/engine.js";
import { packedEmpties } from "../../verifier/trees/format/merkle-edge.js";
import { bigintToBytes32, bytesEqual, toHex64 } from "../../util/bytes.js";
import type { LeafPath } from "./path-walk.js";

/**
 * The current leaf's authentication path while the leaves come in id order (path-walk.ts): a
 * stack of one entry per level, of which a leaf rewrites only the levels below where its path
 * meets the previous one. Each level keeps its node, its sibling, and the proof row they make
 * as text (the row's 512 bits as 128 hex digits), so that the rows the previous leaf's proof
 * shares are not encoded again. The nodes inside an edge record are climbed from the leaf hash,
 * for a whole block of leaves in one engine call.
 */

/** A row of two field elements: left (252 bits) ‖ right (252 bits) ‖ 8 zero bits, in hex. */
export function rowHex(left: Uint8Array, right: Uint8Array): string {
  return hex63(left) + hex63(right) + "00";
}

/** A field element's 252 bits as 63 hex digits (its top 4 bits of 256 are zero). */
export function hex63(v: Uint8Array): string {
  const hex = Buffer.from(v.buffer, v.byteOffset, 32).toString("hex");
  if (hex.charCodeAt(0) !== 48) throw new RangeError(`0x${hex} is not a field element`);
  return hex.slice(1);
}

export class PathStack {
  readonly nodes: Uint8Array[];
  readonly siblings: Uint8Array[];
  /** rows[k]: the row of level k, node and sibling ordered by bit k of the leaf id. */
  readonly rows: string[];
  private readonly packedEmpty: Uint8Array;

  constructor(
    private readonly engine: HashEngine,
    readonly height: number,
    readonly root: Uint8Array,
    /** E[0..height]: the empty subtrees' roots. */
    private readonly empty: readonly Uint8Array[],
  ) {
    this.nodes = new Array<Uint8Array>(height + 1).fill(root);
    this.siblings = new Array<Uint8Array>(height).fill(root);
    this.rows = new Array<string>(height).fill("");
    this.packedEmpty = packedEmpties(empty);
  }

  /**
   * Climbs the edge levels of a block's leaves; `apply(i)` then sets the stack to leaf i's path
   * (the leaves applied in order).
   */
  async prepare(block: readonly LeafPath[]): Promise<(i: number) => void> {
    const n = block.length;
    const starts = new Uint8Array(n * 32);
    const paths = new Uint8Array(n * 32);
    const to = new Uint8Array(n);
    let tallest = 0;
    block.forEach((leaf, i) => {
      starts.set(leaf.leafHash, i * 32);
      paths.set(bigintToBytes32(leaf.index), i * 32);
      to[i] = leaf.edge;
      tallest = Math.max(tallest, leaf.edge);
    });
    const slots = Math.max(0, tallest - 1);
    const { tops, marks } = await climbChains(this.engine, {
      starts,
      paths,
      from: new Uint8Array(n),
      to,
      empty: this.packedEmpty,
      step: 1,
      slots,
    });
    return (i) => {
      const leaf = block[i]!;
      const { edge, changed, pairs, index } = leaf;
      if (pairs.length !== (changed - edge) * 64 || edge > changed || changed > this.height)
        throw new DacdError("STORE", `leaf ${index}: a path of levels ${edge} to ${changed} is malformed`);
      // The edge's top, climbed from the leaf, is the node its parent holds (or the root).
      const top = tops.subarray(i * 32, i * 32 + 32);
      const expected = edge < changed ? pairs.subarray(0, 32) : edge === this.height ? this.root : undefined;
      if (edge > 0 && (!expected || !bytesEqual(top, expected)))
        throw new DacdError(
          "STORE",
          `leaf ${index}: its edge climbs to ${toHex64(top)}, not to its parent's node`,
        );
      for (let k = 0; k < changed; k++) {
        let node: Uint8Array;
        let sibling: Uint8Array;
        if (k < edge) {
          node = k === 0 ? leaf.leafHash : marks.subarray((i * slots + k - 1) * 32, (i * slots + k) * 32);
          sibling = this.empty[k]!;
        } else {
          const at = (k - edge) * 64;
          node = pairs.subarray(at, at + 32);
          sibling = pairs.subarray(at + 32, at + 64);
        }
        this.nodes[k] = node;
        this.siblings[k] = sibling;
        this.rows[k] = ((index >> BigInt(k)) & 1n) === 1n ? rowHex(sibling, node) : rowHex(node, sibling);
      }
      if (!bytesEqual(this.nodes[0]!, leaf.leafHash))
        throw new DacdError("STORE", `leaf ${index}: its path does not start at its leaf hash`);
    };
  }
}
