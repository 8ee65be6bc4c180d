import { DacdError } from "../errors.js";
import { bigintToBytes32, bytesToBigint, concatBytes, ZERO32 } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import { hashPairs } from "./leaves.js";
import type { NodeSource, NodeWrite } from "./node-source.js";

/**
 * Patricia-Merkle tree (committee-algorithms §3): empty subtrees are 0, a node with two non-empty
 * children is binary, a chain of single children collapses into an edge (bottom, path, length)
 * whose hash is H(bottom, path) + length.
 *
 * The update walks down only where leaves change. Every branch of the walk runs concurrently and
 * node lookups are gathered by a BatchedReader, so each level of the walk costs one store round
 * trip. Hashes are computed afterwards, once per new node, grouped so that each group is one engine
 * call — an edge is never hashed at the intermediate lengths it passes through while being built.
 */

type PNode =
  | { readonly t: "empty" }
  | { readonly t: "leaf"; readonly hash: Uint8Array }
  // A non-empty subtree of height > 0 known only by its hash; `edge` is filled once loaded.
  | { readonly t: "stored"; readonly hash: Uint8Array; edge?: Edge }
  | { readonly t: "binary"; readonly left: PNode; readonly right: PNode; hash?: Uint8Array }
  | Edge;

interface Edge {
  readonly t: "edge";
  readonly path: bigint;
  readonly length: number;
  readonly bottom: PNode;
  hash?: Uint8Array;
}

const EMPTY: PNode = { t: "empty" };

function isZero(h: Uint8Array): boolean {
  for (let i = 0; i < h.length; i++) if (h[i] !== 0) return false;
  return true;
}

/** A node known by hash at height h: a leaf at height 0, empty when the hash is 0. */
function fromHash(hash: Uint8Array, height: number): PNode {
  if (isZero(hash)) return EMPTY;
  return height === 0 ? { t: "leaf", hash } : { t: "stored", hash };
}

/** Coalesces the lookups issued while the walk's promises settle into one getNodes call. */
class BatchedReader {
  private pending: {
    hash: Uint8Array;
    resolve: (r: Uint8Array | undefined) => void;
    reject: (e: unknown) => void;
  }[] = [];
  private scheduled = false;

  constructor(private readonly source: NodeSource) {}

  get(hash: Uint8Array): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ hash, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    this.source.getNodes(batch.map((p) => p.hash)).then(
      (records) => batch.forEach((p, i) => p.resolve(records[i])),
      (err: unknown) => batch.forEach((p) => p.reject(err)),
    );
  }
}

export interface PatriciaUpdate {
  readonly root: Uint8Array;
  readonly newNodes: NodeWrite[];
}

export async function updatePatricia(
  engine: HashEngine,
  nodes: NodeSource,
  height: number,
  oldRoot: Uint8Array,
  leaves: ReadonlyMap<bigint, Uint8Array>,
  treeName: string,
): Promise<PatriciaUpdate> {
  if (leaves.size === 0) return { root: oldRoot, newNodes: [] };
  const reader = new BatchedReader(nodes);

  const load = async (node: { hash: Uint8Array }, h: number): Promise<PNode> => {
    const rec = await reader.get(node.hash);
    if (rec?.length === 64) {
      return {
        t: "binary",
        left: fromHash(rec.subarray(0, 32), h - 1),
        right: fromHash(rec.subarray(32), h - 1),
        hash: node.hash,
      };
    }
    if (rec?.length === 65) {
      const length = rec[64]!;
      if (length < 1 || length > h) throw corrupt(node.hash, h, `edge length ${length}`);
      return {
        t: "edge",
        path: bytesToBigint(rec, 32),
        length,
        bottom: fromHash(rec.subarray(0, 32), h - length),
        hash: node.hash,
      };
    }
    throw corrupt(node.hash, h, rec === undefined ? "missing" : `record of ${rec.length} bytes`);
  };
  const corrupt = (hash: Uint8Array, h: number, what: string): DacdError =>
    new DacdError(
      "STORE",
      `${treeName} tree: node ${Buffer.from(hash).toString("hex")} at height ${h}: ${what}`,
    );

  /** The two children (height h-1) of a non-empty node at height h. */
  const expand = async (node: PNode, h: number): Promise<[PNode, PNode]> => {
    if (node.t === "stored") node = await load(node, h);
    switch (node.t) {
      case "empty":
        return [EMPTY, EMPTY];
      case "binary":
        return [node.left, node.right];
      case "edge": {
        const bit = (node.path >> BigInt(node.length - 1)) & 1n;
        const rest: PNode =
          node.length === 1
            ? node.bottom
            : {
                t: "edge",
                path: node.path & ((1n << BigInt(node.length - 1)) - 1n),
                length: node.length - 1,
                bottom: node.bottom,
              };
        return bit === 0n ? [rest, EMPTY] : [EMPTY, rest];
      }
      default:
        throw new Error(`unexpected ${node.t} node above height 0`);
    }
  };

  /** A parent at height h from its children; a lone child becomes or extends an edge. */
  const combine = async (left: PNode, right: PNode, h: number): Promise<PNode> => {
    if (left.t === "empty" && right.t === "empty") return EMPTY;
    if (left.t !== "empty" && right.t !== "empty") return { t: "binary", left, right };
    const bit = left.t === "empty" ? 1n : 0n;
    let only = left.t === "empty" ? right : left;
    // An untouched stored child may itself be an edge, which must be extended rather than wrapped.
    if (only.t === "stored" && h - 1 > 0) {
      const loaded = await load(only, h - 1);
      if (loaded.t === "edge") only = loaded;
    }
    if (only.t === "edge") {
      return {
        t: "edge",
        path: (bit << BigInt(only.length)) | only.path,
        length: only.length + 1,
        bottom: only.bottom,
      };
    }
    return { t: "edge", path: bit, length: 1, bottom: only };
  };

  type Change = readonly [bigint, Uint8Array];
  const walk = async (node: PNode, h: number, changes: readonly Change[]): Promise<PNode> => {
    if (changes.length === 0) return node;
    if (h === 0) return fromHash(changes[changes.length - 1]![1], 0);
    const [l, r] = await expand(node, h);
    const bit = BigInt(h - 1);
    const split = changes.findIndex(([id]) => ((id >> bit) & 1n) === 1n);
    const lc = split === -1 ? changes : changes.slice(0, split);
    const rc = split === -1 ? [] : changes.slice(split);
    const [nl, nr] = await Promise.all([walk(l, h - 1, lc), walk(r, h - 1, rc)]);
    return combine(nl, nr, h);
  };

  const sorted = [...leaves.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const root = await walk(fromHash(oldRoot, height), height, sorted);
  const newNodes = await hashNewNodes(engine, root);
  return { root: hashOf(root), newNodes };
}

function hashOf(node: PNode): Uint8Array {
  switch (node.t) {
    case "empty":
      return ZERO32;
    case "leaf":
    case "stored":
      return node.hash;
    default:
      if (!node.hash) throw new Error("node hashed out of order");
      return node.hash;
  }
}

/** Hashes every node the walk created, deepest first, one engine call per rank. */
async function hashNewNodes(engine: HashEngine, root: PNode): Promise<NodeWrite[]> {
  const byRank: (Edge | Extract<PNode, { t: "binary" }>)[][] = [];
  const rank = (node: PNode): number => {
    if (node.t === "empty" || node.t === "leaf" || node.t === "stored" || node.hash) return 0;
    const r = 1 + (node.t === "binary" ? Math.max(rank(node.left), rank(node.right)) : rank(node.bottom));
    (byRank[r] ??= []).push(node);
    return r;
  };
  rank(root);
  const writes: NodeWrite[] = [];
  for (const group of byRank) {
    if (!group) continue;
    const xs = group.map((n) => (n.t === "binary" ? hashOf(n.left) : hashOf(n.bottom)));
    const ys = group.map((n) => (n.t === "binary" ? hashOf(n.right) : bigintToBytes32(n.path)));
    const hashes = await hashPairs(engine, xs, ys);
    group.forEach((n, i) => {
      if (n.t === "binary") {
        n.hash = hashes[i]!;
        writes.push({ hash: n.hash, record: concatBytes(xs[i]!, ys[i]!) });
      } else {
        n.hash = bigintToBytes32(bytesToBigint(hashes[i]!) + BigInt(n.length));
        writes.push({ hash: n.hash, record: concatBytes(xs[i]!, ys[i]!, Uint8Array.of(n.length)) });
      }
    });
  }
  return writes;
}
