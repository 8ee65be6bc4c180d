import { DacdError } from "../../../errors.js";
import { bytesEqual, toHex64 } from "../../../util/bytes.js";
import { emptyRoots } from "../update/compute-roots.js";
import type { HashEngine } from "../../hash/engine.js";
import { isMerkleEdge } from "../format/merkle-edge.js";
import {
  childGen,
  edgeLength,
  edgePath,
  firstHash,
  isBinaryRecord,
  isEdgeRecord,
  secondHash,
} from "../../../storage/records/node-record.js";
import type { TreeSpec } from "../../../model/profile.js";

/**
 * Walks a stored tree in leaf-index order with bounded memory: depth first, but each step takes a
 * chunk of up to `chunk` pending subtrees from the front of the walk and reads all their nodes with
 * one getMany. The pending subtrees form a stack of lists, at most one list per height, each
 * holding at most 2·chunk entries, so memory never depends on the number of leaves. Empty subtrees
 * (E[k] in a Merkle tree, 0 in a Patricia tree) are never read.
 */

export interface WalkTask {
  readonly hash: Uint8Array;
  /** The gen of the subtree's record (of the leaf's record at height 0: node-record.ts). */
  readonly gen: number;
  /** Height of the subtree (0: a leaf). */
  readonly height: number;
  /** Index of the subtree among those of its height (a leaf's id at height 0). */
  readonly index: bigint;
}

/** An inner node read by the walk, with its record (node-record.ts). */
export interface WalkNode extends WalkTask {
  readonly record: Uint8Array;
}

export interface WalkProblem {
  readonly tree: string;
  readonly height: number;
  readonly index: string;
  readonly hash: string;
  readonly problem: string;
}

export interface WalkOptions {
  /** Subtrees read per getMany (default 4096). */
  readonly chunk?: number;
  /** Node lookup (default: the store's); a snapshot reader for pruning. */
  readonly getNodes: (
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ) => Promise<(Uint8Array | undefined)[]>;
  /** Return false to skip a non-empty subtree (its leaves are then not yielded either). */
  readonly enter?: (task: WalkTask) => boolean;
  /** Sees every chunk of inner nodes read, before their children are walked (deep check). */
  readonly onNodes?: (nodes: WalkNode[]) => Promise<void> | void;
  /** Reports a missing or malformed node and skips it; without it such a node is an error. */
  readonly onProblem?: (p: WalkProblem) => void;
}

/** Yields the non-empty leaves of the tree under `root` (its record's gen `rootGen`), in id order, in arrays. */
export async function* walkLeaves(
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  opts: WalkOptions,
): AsyncGenerator<WalkTask[]> {
  const chunk = opts.chunk ?? 4096;
  const empty = spec.kind === "merkle" ? await emptyRoots(engine, spec.leaf, spec.height) : undefined;
  const zero = new Uint8Array(32);
  const isEmpty = (hash: Uint8Array, h: number): boolean => bytesEqual(hash, empty ? empty[h]! : zero);

  const problem = (t: WalkTask, what: string): void => {
    const p: WalkProblem = {
      tree: spec.name,
      height: t.height,
      index: t.index.toString(),
      hash: toHex64(t.hash),
      problem: what,
    };
    if (!opts.onProblem) {
      throw new DacdError(
        "STORE",
        `${spec.name} tree: node ${p.hash} at height ${p.height}, index ${p.index}: ${what}`,
      );
    }
    opts.onProblem(p);
  };

  // The walk's frontier: lists in index order; every entry of a higher list precedes the lists below.
  const stack: { tasks: WalkTask[]; pos: number }[] = [];
  const start: WalkTask = { hash: root, gen: rootGen, height: spec.height, index: 0n };
  if (!isEmpty(root, spec.height) && (opts.enter?.(start) ?? true)) stack.push({ tasks: [start], pos: 0 });

  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.pos >= top.tasks.length) {
      stack.pop();
      continue;
    }
    // Leaves at the front are next in index order.
    if (top.tasks[top.pos]!.height === 0) {
      const leaves: WalkTask[] = [];
      while (top.pos < top.tasks.length && top.tasks[top.pos]!.height === 0)
        leaves.push(top.tasks[top.pos++]!);
      yield leaves;
      continue;
    }
    const taken = top.tasks.slice(top.pos, top.pos + chunk);
    top.pos += taken.length;
    const inner = taken.filter((t) => t.height > 0);
    const records = await opts.getNodes(
      inner.map((t) => t.hash),
      inner.map((t) => t.gen),
    );
    const read: WalkNode[] = [];
    const byHash = new Map<WalkTask, Uint8Array>();
    inner.forEach((t, i) => {
      const rec = records[i];
      if (rec === undefined) return problem(t, "missing");
      // Merkle: binary, or an edge down to its one leaf (merkle-edge.ts); Patricia: binary or edge.
      const ok =
        isBinaryRecord(rec) || (spec.kind === "merkle" ? isMerkleEdge(rec, t.height) : isEdgeRecord(rec));
      if (!ok) return problem(t, `record of ${rec.length} bytes`);
      if (!isBinaryRecord(rec) && (edgeLength(rec) < 1 || edgeLength(rec) > t.height))
        return problem(t, `edge length ${edgeLength(rec)}`);
      byHash.set(t, rec);
      read.push({ ...t, record: rec });
    });
    if (opts.onNodes && read.length > 0) await opts.onNodes(read);

    const next: WalkTask[] = [];
    const push = (t: WalkTask): void => {
      if (isEmpty(t.hash, t.height)) return;
      if (opts.enter && !opts.enter(t)) return;
      next.push(t);
    };
    for (const t of taken) {
      if (t.height === 0) {
        next.push(t);
        continue;
      }
      const rec = byHash.get(t);
      if (!rec) continue;
      if (isBinaryRecord(rec)) {
        push({ hash: firstHash(rec), gen: childGen(rec, 0), height: t.height - 1, index: t.index * 2n });
        push({
          hash: secondHash(rec),
          gen: childGen(rec, 1),
          height: t.height - 1,
          index: t.index * 2n + 1n,
        });
      } else {
        const length = edgeLength(rec);
        const path = edgePath(rec);
        if (path >> BigInt(length) !== 0n) {
          problem(t, `edge path longer than its length ${length}`);
          continue;
        }
        push({
          hash: firstHash(rec),
          gen: childGen(rec, 0),
          height: t.height - length,
          index: (t.index << BigInt(length)) | path,
        });
      }
    }
    if (next.length > 0) stack.push({ tasks: next, pos: 0 });
  }
}
