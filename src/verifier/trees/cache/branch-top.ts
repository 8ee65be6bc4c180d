import { bytesEqual } from "../../../util/bytes.js";
import { childGen, firstHash, isBinaryRecord, secondHash } from "../../../storage/records/node-record.js";
import { ROOT_TOP, type BranchTop } from "../../../storage/records/node-source.js";

/**
 * Where a Merkle tree first branches. With ids given out in sequence (as exchanges hand out vault
 * and position ids) every leaf shares the ids' top bits, so the tree's top is one path of binary
 * nodes whose other child is empty, and a cache of the levels below the root would spend most of
 * its levels on that path. Counted from the first node with two non-empty children instead, the
 * same levels hold as many nodes as with ids spread over the whole range.
 */
export interface FoundTop extends BranchTop {
  /** The node there and its record's gen. */
  readonly hash: Uint8Array;
  readonly gen: number;
}

/**
 * Follows the single path down from `root` (its record's gen `rootGen`) of a Merkle tree of
 * `empty.length − 1` levels (`empty`: E[0..height]) to the first node that is not a binary node
 * with exactly one non-empty child: the root where the tree branches at once, the node above an
 * edge record, or the empty root. Reads one record per level of the path.
 */
export async function findBranchTop(
  getNodes: (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => Promise<(Uint8Array | undefined)[]>,
  empty: readonly Uint8Array[],
  root: Uint8Array,
  rootGen: number,
): Promise<FoundTop> {
  const height = empty.length - 1;
  let top: FoundTop = { ...ROOT_TOP, hash: root, gen: rootGen };
  while (top.depth < height) {
    const h = height - top.depth;
    if (bytesEqual(top.hash, empty[h]!)) return top;
    const [record] = await getNodes([top.hash], [top.gen]);
    if (record === undefined || !isBinaryRecord(record)) return top;
    const left = firstHash(record);
    const right = secondHash(record);
    const leftEmpty = bytesEqual(left, empty[h - 1]!);
    const rightEmpty = bytesEqual(right, empty[h - 1]!);
    if (leftEmpty === rightEmpty) return top;
    const side = leftEmpty ? 1 : 0;
    top = {
      depth: top.depth + 1,
      index: top.index * 2n + BigInt(side),
      hash: side ? right : left,
      gen: childGen(record, side),
    };
  }
  return top;
}
