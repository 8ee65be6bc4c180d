import { storeProfile } from "../inspect/inspect.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import { asStoreError } from "../storage/store-errors.js";
import { addSmall, bytesEqual, hexToBytes32, toHex64 } from "../util/bytes.js";
import { emptyRoots } from "../verifier/trees/update/compute-roots.js";
import { type HashEngine } from "../verifier/hash/engine.js";
import { isBelowPrime } from "../model/field.js";
import {
  decodeLeafRecord,
  hashLeaves,
  hashPairs,
  isLeafRecordLength,
} from "../verifier/trees/format/leaves.js";
import {
  isMerkleEdge,
  recomputeMerkleEdges,
  type MerkleEdgeCheck,
} from "../verifier/trees/format/merkle-edge.js";
import type { TreeSpec } from "../model/profile.js";
import type { LoadedBatchRecord } from "../escape/common.js";
import { isPruned } from "../storage/prune-info.js";
import {
  edgeLength,
  firstHash,
  isBinaryRecord,
  isEdgeRecord,
  secondHash,
} from "../storage/records/node-record.js";
import {
  walkLeaves,
  type WalkNode,
  type WalkProblem,
  type WalkTask,
} from "../verifier/trees/read/walk-leaves.js";

export interface CheckOptions {
  /** Re-hash every reachable node and leaf record of the deep-checked batches. */
  readonly deep?: boolean;
  /** Batches to check deeply (default: the latest stored batch). */
  readonly deepBatches?: readonly number[];
  readonly chunk?: number;
  readonly progress?: (batchId: number, tree: string, nodes: number) => void;
  /** Awaited before each read of a deep walk (the daemon: yield to a batch being verified). */
  readonly pace?: () => Promise<void>;
  /**
   * Read every record of the store once, so that a damaged table is found wherever it lies, not
   * only where the batch records or the deep-checked trees are (`dacd check`).
   */
  readonly readAll?: boolean;
}

export interface CheckProblem {
  readonly batch_id?: number;
  readonly tree?: string;
  readonly problem: string;
  readonly height?: number;
  readonly index?: string;
  readonly hash?: string;
}

export interface CheckReport {
  ok: boolean;
  profile: string | null;
  first_batch_id: number | null;
  last_batch_id: number | null;
  batches: number;
  skipped: number[];
  pruned: number[];
  loaded_from_dump: number[];
  deep?: { batch_id: number; trees: Record<string, { nodes: number; leaves: number }> }[];
  /** With readAll: how many records were read (all of them, unless a problem says otherwise). */
  records_read?: number;
  problems: CheckProblem[];
}

/**
 * Integrity of the store. Shallow: the chain of batch records from the first stored to the cursor
 * (or the newest) is complete, each sequence number follows its predecessor's, and every kept tree
 * has a root. Deep: every node reachable from the chosen batches' roots is present and hashes to
 * its key, and every leaf record hashes to its leaf hash.
 */
export async function checkStore(
  store: LevelStore,
  engine: HashEngine,
  opts: CheckOptions = {},
): Promise<CheckReport> {
  const problems: CheckProblem[] = [];
  const report: CheckReport = {
    ok: false,
    profile: null,
    first_batch_id: null,
    last_batch_id: null,
    batches: 0,
    skipped: [],
    pruned: [],
    loaded_from_dump: [],
    problems,
  };
  let trees: TreeSpec[];
  try {
    const sp = await storeProfile(store);
    trees = sp.trees;
    report.profile = sp.profile.name;
  } catch (err) {
    problems.push({ problem: (err as Error).message });
    return report;
  }
  const cursor = await store.getCursor();
  const prune = await store.batches.pruneInfo();
  const skipped = new Set(cursor?.skipped ?? []);
  report.skipped = [...skipped];

  const seq = new Map<number, number>();
  let expectNext: number | undefined;
  let first: number | undefined;
  let last: number | undefined;
  for await (const raw of store.batches.records()) {
    const r = raw as LoadedBatchRecord;
    const id = r.batch_id;
    first ??= id;
    last = id;
    report.batches++;
    if (expectNext !== undefined) {
      for (let missing = expectNext; missing < id; missing++) {
        if (!skipped.has(missing)) problems.push({ batch_id: missing, problem: "batch record missing" });
      }
    }
    expectNext = id + 1;
    if (r.loaded_from_dump) report.loaded_from_dump.push(id);
    if (isPruned(prune, id)) report.pruned.push(id);
    seq.set(id, r.sequence_number);
    const prevSeq = r.prev_batch_id === -1 ? -1 : seq.get(r.prev_batch_id);
    if (prevSeq === undefined) {
      // The first stored batch (a store loaded from a dump) has no stored predecessor.
      if (!(id === first && (r.loaded_from_dump || r.prev_batch_id < id))) {
        problems.push({ batch_id: id, problem: `previous batch ${r.prev_batch_id} is not stored` });
      }
    } else if (r.sequence_number !== prevSeq + 1) {
      problems.push({
        batch_id: id,
        problem: `sequence number ${r.sequence_number} does not follow ${prevSeq} of batch ${r.prev_batch_id}`,
      });
    }
    for (const t of trees) {
      if (!hexToBytes32(r.roots?.[t.name] ?? ""))
        problems.push({ batch_id: id, tree: t.name, problem: "root missing or malformed" });
    }
  }
  report.first_batch_id = first ?? null;
  report.last_batch_id = last ?? null;
  if (cursor && expectNext !== undefined) {
    for (let missing = expectNext; missing <= cursor.last_accepted_batch_id; missing++) {
      if (!skipped.has(missing))
        problems.push({ batch_id: missing, problem: "batch record missing (before the cursor)" });
    }
  }
  const frozen = (await store.onchain.cursor())?.frozen;
  if (frozen) {
    // What users escape with once the exchange froze: it must be there, trees and all.
    const where = `the exchange froze at batch ${frozen.batch_id} (block ${frozen.block_number})`;
    if (!(await store.getBatch(frozen.batch_id)))
      problems.push({
        batch_id: frozen.batch_id,
        problem: `${where}, which is not stored: users cannot escape with this member's data`,
      });
    else if (isPruned(prune, frozen.batch_id))
      problems.push({
        batch_id: frozen.batch_id,
        problem: `${where}, whose trees were pruned: users cannot escape with this member's data`,
      });
  }
  if (cursor && cursor.last_accepted_batch_id >= 0 && first === undefined) {
    problems.push({
      problem: `the cursor names batch ${cursor.last_accepted_batch_id} but no batch is stored`,
    });
  }

  if (opts.readAll) {
    try {
      report.records_read = await store.readEveryRecord(opts.pace);
    } catch (err) {
      const damaged = asStoreError(err, store.dir);
      if (!damaged) throw err;
      problems.push({ problem: damaged.message });
    }
  }

  if (opts.deep) {
    report.deep = [];
    const ids = opts.deepBatches ?? (last !== undefined ? [last] : []);
    for (const id of ids) {
      const record = await store.getBatch(id);
      if (!record) {
        problems.push({ batch_id: id, problem: "batch record missing (deep check)" });
        continue;
      }
      if (isPruned(prune, id)) {
        problems.push({ batch_id: id, problem: "batch was pruned: its trees cannot be checked" });
        continue;
      }
      report.deep.push({
        batch_id: id,
        trees: await deepCheck(store, engine, trees, record, problems, opts),
      });
    }
  }
  report.ok = problems.length === 0;
  return report;
}

async function deepCheck(
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  record: BatchRecord,
  problems: CheckProblem[],
  opts: CheckOptions,
): Promise<Record<string, TreeCount>> {
  const out: Record<string, TreeCount> = {};
  for (const spec of trees) {
    const root = hexToBytes32(record.roots[spec.name] ?? "");
    if (!root) continue;
    // The root of an unchecked order tree is stated, not computed: nothing is stored under it,
    // and the batch record names no gen for it. That is how the member was told to run
    // (validate_orders false, or a store loaded without order files), not damage.
    const rootGen = record.root_gens[spec.name];
    if (rootGen === undefined) {
      if (spec.name !== "order")
        problems.push({
          batch_id: record.batch_id,
          tree: spec.name,
          problem: "the batch record names no gen for this tree's root",
        });
      continue;
    }
    const check = new TreeCheck(store, engine, spec, record.batch_id, problems, opts);
    out[spec.name] = await check.run(root, rootGen);
  }
  return out;
}

/** What the deep check read of one tree. */
interface TreeCount {
  nodes: number;
  leaves: number;
}

/** The deep check of one tree of one batch: every node and leaf record it reaches, re-hashed. */
class TreeCheck {
  private nodes = 0;
  private leaves = 0;
  /** A Merkle tree's empty-subtree hashes (its edges are checked against them). */
  private empty: readonly Uint8Array[] | undefined;

  constructor(
    private readonly store: LevelStore,
    private readonly engine: HashEngine,
    private readonly spec: TreeSpec,
    private readonly batchId: number,
    private readonly problems: CheckProblem[],
    private readonly opts: CheckOptions,
  ) {}

  async run(root: Uint8Array, rootGen: number): Promise<TreeCount> {
    const { spec, opts } = this;
    this.empty = spec.kind === "merkle" ? await emptyRoots(this.engine, spec.leaf, spec.height) : undefined;
    for await (const block of walkLeaves(this.engine, spec, root, rootGen, {
      chunk: opts.chunk,
      getNodes: async (h, gens) => {
        await opts.pace?.();
        return this.store.getNodes(h, gens);
      },
      onNodes: (read) => this.checkNodes(read),
      onProblem: this.report,
    })) {
      this.leaves += block.length;
      if (spec.leaf !== "order") await this.checkLeaves(block);
    }
    return { nodes: this.nodes, leaves: this.leaves };
  }

  private readonly report = (p: WalkProblem): void => {
    this.problems.push({ batch_id: this.batchId, ...p });
  };

  private async checkNodes(read: WalkNode[]): Promise<void> {
    this.nodes += read.length;
    const empty = this.empty;
    // A Merkle record that is not binary is an edge (merkle-edge.ts), even one as long as a Patricia edge.
    const edges = empty ? read.filter((n) => !isBinaryRecord(n.record)) : [];
    const pairs = empty ? read.filter((n) => isBinaryRecord(n.record)) : read;
    await this.checkPairs(pairs);
    if (empty && edges.length > 0) await this.checkMerkleEdges(empty, edges);
    this.opts.progress?.(this.batchId, this.spec.name, this.nodes);
  }

  /** Binary nodes, H(left, right), and Patricia edges, H(bottom, path) + length. */
  private async checkPairs(read: WalkNode[]): Promise<void> {
    if (read.length === 0) return;
    const xs = read.map((n) => firstHash(n.record));
    const ys = read.map((n) => secondHash(n.record));
    let hashes: Uint8Array[];
    try {
      hashes = await hashPairs(this.engine, xs, ys);
    } catch (err) {
      for (const n of read) this.report(problemOf(this.spec, n, `not hashable: ${(err as Error).message}`));
      return;
    }
    read.forEach((n, i) => {
      const h = isEdgeRecord(n.record) ? addSmall(hashes[i]!, edgeLength(n.record)) : hashes[i]!;
      if (!bytesEqual(h, n.hash)) this.report(problemOf(this.spec, n, `record hashes to ${toHex64(h)}`));
    });
  }

  /** Merkle edges: the chain climbed again from the leaf hash and path, every stored entry compared. */
  private async checkMerkleEdges(empty: readonly Uint8Array[], read: WalkNode[]): Promise<void> {
    const { spec } = this;
    const sound: WalkNode[] = [];
    for (const n of read) {
      if (!isMerkleEdge(n.record, n.height))
        this.report(problemOf(spec, n, `not an edge of height ${n.height} (${n.record.length} bytes)`));
      else if (!isBelowPrime(n.record, 0))
        this.report(problemOf(spec, n, "edge leaf hash is not below the field prime"));
      else sound.push(n);
    }
    if (sound.length === 0) return;
    let checks: MerkleEdgeCheck[];
    try {
      checks = await recomputeMerkleEdges(
        this.engine,
        empty,
        sound.map((n) => n.record),
      );
    } catch (err) {
      for (const n of sound) this.report(problemOf(spec, n, `not hashable: ${(err as Error).message}`));
      return;
    }
    sound.forEach((n, i) => {
      const { top, badChainAt } = checks[i]!;
      if (badChainAt !== undefined)
        this.report(problemOf(spec, n, `edge chain differs from its recomputation at height ${badChainAt}`));
      if (!bytesEqual(top, n.hash)) this.report(problemOf(spec, n, `record hashes to ${toHex64(top)}`));
    });
  }

  /** A block of leaves: each record present, of a leaf record's length, and hashing to the leaf. */
  private async checkLeaves(block: readonly WalkTask[]): Promise<void> {
    const { spec } = this;
    const recs = await this.store.getLeafRecords(
      block.map((t) => t.hash),
      block.map((t) => t.gen),
    );
    const present: { t: WalkTask; rec: Uint8Array }[] = [];
    block.forEach((t, i) => {
      const rec = recs[i];
      if (!rec) this.report(problemOf(spec, t, "leaf record missing"));
      else if (!isLeafRecordLength(spec.leaf, rec.length)) {
        this.report(problemOf(spec, t, `leaf record of ${rec.length} bytes`));
      } else present.push({ t, rec });
    });
    let hs: Uint8Array[];
    try {
      hs = await hashLeaves(
        this.engine,
        spec.leaf,
        present.map((p) => decodeLeafRecord(spec.leaf, p.rec)),
      );
    } catch (err) {
      for (const p of present)
        this.report(problemOf(spec, p.t, `leaf record not hashable: ${(err as Error).message}`));
      return;
    }
    present.forEach((p, i) => {
      if (!bytesEqual(hs[i]!, p.t.hash))
        this.report(problemOf(spec, p.t, `leaf record hashes to ${toHex64(hs[i]!)}`));
    });
  }
}

function problemOf(
  spec: TreeSpec,
  t: { hash: Uint8Array; height: number; index: bigint },
  problem: string,
): WalkProblem {
  return { tree: spec.name, height: t.height, index: t.index.toString(), hash: toHex64(t.hash), problem };
}
