import { DacdError } from "../../../errors.js";
import { bytesEqual } from "../../../util/bytes.js";
import { emptyRoots } from "../update/compute-roots.js";
import type { HashEngine } from "../../hash/engine.js";
import { ancestorsAt, edgeLeafGen, edgeLeafIndex, isMerkleEdge } from "../format/merkle-edge.js";
import {
  childGen,
  edgeLength,
  edgePath,
  firstHash,
  isBinaryRecord,
  secondHash,
} from "../../../storage/records/node-record.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
import type { TreeSpec } from "../../../model/profile.js";

/** One step of a Patricia authentication path, from the root down. */
export type PatriciaStep =
  | {
      readonly kind: "binary";
      readonly height: number;
      readonly left: Uint8Array;
      readonly right: Uint8Array;
    }
  | {
      readonly kind: "edge";
      readonly height: number;
      readonly bottom: Uint8Array;
      readonly path: bigint;
      readonly length: number;
    };

export interface LeafLookup {
  /** The leaf's value at the bottom of the tree (its hash; the amount itself for orders). */
  readonly leafHash: Uint8Array;
  /** The gen of the leaf's record (node-record.ts; 0 for an empty leaf). */
  readonly leafGen: number;
  /** True when the leaf is empty (never set, or set back to empty). */
  readonly empty: boolean;
  /** Merkle: sibling hashes bottom-up. */
  readonly siblings?: Uint8Array[];
  /** Patricia: the nodes from the root down to the leaf, or to where the leaf's path leaves the tree. */
  readonly steps?: PatriciaStep[];
}

/**
 * Finds a leaf under `root` (its record's gen `rootGen`) by walking the stored nodes; also returns
 * its authentication path.
 */
export async function readLeaf(
  engine: HashEngine,
  nodes: NodeSource,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  index: bigint,
): Promise<LeafLookup> {
  if (index < 0n || index >= 1n << BigInt(spec.height)) {
    throw new DacdError(
      "BAD_INPUT",
      `leaf id ${index} is outside the ${spec.name} tree of height ${spec.height}`,
    );
  }
  return spec.kind === "merkle"
    ? readMerkleLeaf(engine, nodes, spec, root, rootGen, index)
    : readPatriciaLeaf(nodes, spec, root, rootGen, index);
}

async function fetchNode(
  nodes: NodeSource,
  hash: Uint8Array,
  gen: number,
  what: string,
): Promise<Uint8Array> {
  const [rec] = await nodes.getNodes([hash], [gen]);
  if (!rec)
    throw new DacdError("STORE", `${what}: node ${Buffer.from(hash).toString("hex")} is not in the store`);
  return rec;
}

async function readMerkleLeaf(
  engine: HashEngine,
  nodes: NodeSource,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  index: bigint,
): Promise<LeafLookup> {
  const empty = await emptyRoots(engine, spec.leaf, spec.height);
  const siblingsTopDown: Uint8Array[] = [];
  let hash = root;
  let gen = rootGen;
  for (let h = spec.height; h >= 1; h--) {
    const right = ((index >> BigInt(h - 1)) & 1n) === 1n;
    if (bytesEqual(hash, empty[h]!)) {
      siblingsTopDown.push(empty[h - 1]!);
      hash = empty[h - 1]!;
      gen = 0;
      continue;
    }
    const rec = await fetchNode(nodes, hash, gen, `${spec.name} tree at height ${h}`);
    if (isMerkleEdge(rec, h)) {
      // One leaf below: every sibling further down is empty, except where the paths part, where it
      // is the lone leaf's ancestor (climbed from the edge's checkpoint below it).
      const lone = edgeLeafIndex(rec, h, index >> BigInt(h));
      const parting: number[] = [];
      for (let k = h - 1; k >= 0; k--) if (lone >> BigInt(k) === ((index >> BigInt(k)) ^ 1n)) parting.push(k);
      const [ancestor] = await ancestorsAt(
        engine,
        empty,
        parting.map(() => rec),
        parting,
      );
      for (let k = h - 1; k >= 0; k--) siblingsTopDown.push(k === parting[0] ? ancestor! : empty[k]!);
      hash = lone === index ? firstHash(rec) : empty[0]!;
      gen = lone === index ? edgeLeafGen(rec) : 0;
      break;
    }
    if (!isBinaryRecord(rec)) {
      throw new DacdError("STORE", `${spec.name} tree at height ${h}: node record of ${rec.length} bytes`);
    }
    siblingsTopDown.push(right ? firstHash(rec) : secondHash(rec));
    hash = right ? secondHash(rec) : firstHash(rec);
    gen = childGen(rec, right ? 1 : 0);
  }
  const isEmpty = bytesEqual(hash, empty[0]!);
  return { leafHash: hash, leafGen: isEmpty ? 0 : gen, empty: isEmpty, siblings: siblingsTopDown.reverse() };
}

async function readPatriciaLeaf(
  nodes: NodeSource,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  index: bigint,
): Promise<LeafLookup> {
  const steps: PatriciaStep[] = [];
  const zero = new Uint8Array(32);
  let hash = root;
  let gen = rootGen;
  let h = spec.height;
  while (h > 0) {
    if (bytesEqual(hash, zero)) return { leafHash: zero, leafGen: 0, empty: true, steps };
    const rec = await fetchNode(nodes, hash, gen, `${spec.name} tree at height ${h}`);
    if (isBinaryRecord(rec)) {
      const left = firstHash(rec);
      const right = secondHash(rec);
      steps.push({ kind: "binary", height: h, left, right });
      const side = ((index >> BigInt(h - 1)) & 1n) === 1n ? 1 : 0;
      hash = side === 1 ? right : left;
      gen = childGen(rec, side);
      h -= 1;
    } else {
      const bottom = firstHash(rec);
      const path = edgePath(rec);
      const length = edgeLength(rec);
      steps.push({ kind: "edge", height: h, bottom, path, length });
      const bits = (index >> BigInt(h - length)) & ((1n << BigInt(length)) - 1n);
      if (bits !== path) return { leafHash: zero, leafGen: 0, empty: true, steps };
      hash = bottom;
      gen = childGen(rec, 0);
      h -= length;
    }
  }
  const isEmpty = bytesEqual(hash, zero);
  return { leafHash: hash, leafGen: isEmpty ? 0 : gen, empty: isEmpty, steps };
}
