import { DacdError } from "../errors.js";
import { storeProfile } from "../inspect/inspect.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { TreeRecordKey } from "../storage/tree-record-repository.js";
import { isPruned, type PruneInfo } from "../storage/prune-info.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { NodeWrites } from "../storage/records/node-writes.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { WasmEngine } from "../verifier/hash/wasm-engine.js";
import { walkLeaves } from "../verifier/trees/read/walk-leaves.js";
import type { Profile, TreeSpec } from "../model/profile.js";
import { FingerprintSet } from "./fingerprint-set.js";

/**
 * Retention: deletes tree nodes and leaf records that no kept batch reaches.
 *
 * Safe against the daemon committing while it runs. A commit writes its records under its own
 * batch's id (storage/keys.ts), so a batch that re-creates a node identical to one being swept
 * writes a record of its own; the protection below matters only should a batch id be written again:
 * 1. a commit listener is registered first: every node and leaf key any commit writes from then on
 *    is protected and never deleted;
 * 2. the kept batches are read and their trees marked from one LevelDB snapshot;
 * 3. candidates are enumerated from that snapshot and deleted in chunks, each chunk under the
 *    store's write lock (the one commitBatch holds), after dropping protected keys.
 * A batch committed meanwhile on top of a kept batch shares only marked nodes with it, and its own
 * new nodes are protected. One committed on top of a batch not kept would share swept nodes: the
 * sweep then stops at once and reports it (`aborted`).
 */

export interface PruneOptions {
  /** Keep the trees of the newest K batches (K >= 1). */
  readonly keepBatches: number;
  /** Batch ids whose trees are kept as well. */
  readonly checkpoints?: readonly number[];
  readonly signal?: AbortSignal;
  /** Only for the empty-subtree hashes E[k] (default: WASM). */
  readonly engine?: HashEngine;
  /** Keys per sweep chunk (default 4096). */
  readonly chunk?: number;
  /** Compact the key ranges afterwards so the space is returned (default false). */
  readonly compact?: boolean;
  /** Called between sweep chunks, outside the lock. */
  readonly betweenChunks?: () => Promise<void> | void;
}

export interface PruneReport {
  kept_batches: number[];
  /** Batch ids whose records are kept but whose trees are no longer (this and earlier prunes). */
  pruned_batches: number[];
  nodes_marked: number;
  leaves_marked: number;
  nodes_scanned: number;
  nodes_deleted: number;
  leaves_deleted: number;
  /** Candidates re-written by a commit during the prune, and therefore kept. */
  protected_kept: number;
  aborted?: string;
  duration_ms: number;
}

const keyHex = (k: Uint8Array): string => Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString("hex");

/** A tree record's identity as a string: node or leaf, gen, hash. */
const recordKey = (node: boolean, gen: number, hash: Uint8Array): string =>
  (node ? "n" : "l") + gen + ":" + keyHex(hash);

const DEFAULT_CHUNK = 4096;

export async function pruneStore(store: LevelStore, opts: PruneOptions): Promise<PruneReport> {
  const started = performance.now();
  if (!Number.isInteger(opts.keepBatches) || opts.keepBatches < 1) {
    throw new DacdError("CONFIG", `keep-batches must be an integer >= 1, got ${opts.keepBatches}`);
  }
  const engine = opts.engine ?? new WasmEngine();
  const { trees, profile } = await storeProfile(store);

  // 1. Protect whatever commits write from now on.
  const guard = new CommitGuard(store);
  const snapshot = store.snapshot();
  let report: PruneReport;
  try {
    // 2. Which batches keep their trees, and what they reach, from the snapshot.
    const retention = await keptBatches(store, snapshot, opts);
    const marks = await markReachable(snapshot, engine, trees, profile, retention.keptIds, opts.signal);

    // From here on dump and proof refuse the batches whose trees are being swept.
    const info: PruneInfo = { up_to: retention.upTo, kept: retention.keptIds, at: new Date().toISOString() };
    await store.batches.setPruneInfo(info);

    // 3. Sweep in chunks from the snapshot.
    report = {
      kept_batches: retention.keptIds,
      pruned_batches: [],
      nodes_marked: marks.nodes.size,
      leaves_marked: marks.leaves.size,
      nodes_scanned: 0,
      nodes_deleted: 0,
      leaves_deleted: 0,
      protected_kept: 0,
      duration_ms: 0,
    };
    await new Sweep(store, guard, retention, report, opts).run(snapshot, marks);
    report.pruned_batches = [];
    for await (const id of store.batches.ids()) if (isPruned(info, id)) report.pruned_batches.push(id);
  } finally {
    guard.close();
    await snapshot.close();
  }
  // After the snapshot is closed: LevelDB keeps whatever an open snapshot can still see.
  if (opts.compact) await store.compact("trees");
  report.duration_ms = Math.round(performance.now() - started);
  return report;
}

/**
 * Every node and leaf key a commit writes while the prune runs, and which batch each commit
 * built on, from its registration until `close`.
 */
class CommitGuard {
  private readonly protectedKeys = new Set<string>();
  private readonly committed: { id: number; prev: number }[] = [];
  // A commit's records are written under its batch's id (storage/keys.ts).
  private readonly listener = (record: BatchRecord, nodes: NodeWrites, leaves: NodeWrites): void => {
    const gen = record.batch_id;
    for (let i = 0; i < nodes.length; i++) this.protectedKeys.add(recordKey(true, gen, nodes.hash(i)));
    for (let i = 0; i < leaves.length; i++) this.protectedKeys.add(recordKey(false, gen, leaves.hash(i)));
    this.committed.push({ id: record.batch_id, prev: record.prev_batch_id });
  };

  constructor(private readonly store: LevelStore) {
    store.commits.listeners.add(this.listener);
  }

  isProtected(r: TreeRecordKey): boolean {
    return this.protectedKeys.has(recordKey(r.node, r.gen, r.hash));
  }

  /** A commit built on a batch at or below `upTo` whose trees are not kept: it may share swept nodes. */
  unsafeCommit(upTo: number, kept: ReadonlySet<number>): { id: number; prev: number } | undefined {
    return this.committed.find((c) => c.prev !== -1 && c.prev <= upTo && !kept.has(c.prev));
  }

  close(): void {
    this.store.commits.listeners.delete(this.listener);
  }
}

/** The batches whose trees are kept, and the newest batch the prune covers. */
interface Retention {
  readonly kept: ReadonlySet<number>;
  /** `kept`, ascending. */
  readonly keptIds: number[];
  readonly upTo: number;
}

/**
 * The newest `keepBatches` not yet pruned, the checkpoints (each must be stored and not pruned),
 * the cursor's batch and the exchange's frozen batch.
 */
async function keptBatches(store: LevelStore, snapshot: LevelStore, opts: PruneOptions): Promise<Retention> {
  const previous = await store.batches.pruneInfo();
  const ids: number[] = [];
  for await (const id of snapshot.batches.ids()) if (!isPruned(previous, id)) ids.push(id);
  const all = new Set(ids);
  const kept = new Set(ids.slice(-opts.keepBatches));
  for (const c of opts.checkpoints ?? []) {
    if (!all.has(c)) {
      throw new DacdError(
        "BAD_INPUT",
        isPruned(previous, c)
          ? `checkpoint batch ${c} was already pruned`
          : `checkpoint batch ${c} is not in the store`,
      );
    }
    kept.add(c);
  }
  const cursor = await store.getCursor();
  if (cursor && all.has(cursor.last_accepted_batch_id)) kept.add(cursor.last_accepted_batch_id);
  // Once the exchange froze, its frozen batch is what every user escapes with: kept whatever
  // keepBatches says (the escape at that batch needs only its own trees).
  const frozen = await store.onchain.frozenBatchId();
  if (frozen !== undefined && all.has(frozen)) kept.add(frozen);
  const keptIds = [...kept].sort((a, b) => a - b);
  const upTo = ids.length > 0 ? ids[ids.length - 1]! : -1;
  return { kept, keptIds, upTo };
}

/** The node and leaf records the kept batches' trees reach. */
interface Marks {
  readonly nodes: FingerprintSet;
  readonly leaves: FingerprintSet;
}

async function markReachable(
  snapshot: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  profile: Profile,
  keptIds: readonly number[],
  signal: AbortSignal | undefined,
): Promise<Marks> {
  const marks: Marks = { nodes: new FingerprintSet(), leaves: new FingerprintSet() };
  for (const id of keptIds) {
    const record = (await snapshot.getBatch(id))!;
    for (const spec of trees) {
      signal?.throwIfAborted();
      await markTree(snapshot, engine, spec, profile, record, marks);
    }
  }
  return marks;
}

/** Marks one tree of a kept batch, skipping the subtrees already marked. */
async function markTree(
  snapshot: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  profile: Profile,
  record: BatchRecord,
  marks: Marks,
): Promise<void> {
  const id = record.batch_id;
  const root = hexToBytes32(record.roots[spec.name] ?? "");
  if (!root) throw new DacdError("STORE", `batch ${id} has no ${spec.name} root; not pruning`);
  const rootGen = record.root_gens[spec.name];
  if (rootGen === undefined) {
    if (spec.name === profile.order.name) return; // an unchecked order tree: only its stated root exists
    throw new DacdError("STORE", `batch ${id} names no gen for its ${spec.name} root; not pruning`);
  }
  const walk = walkLeaves(engine, spec, root, rootGen, {
    getNodes: (hs, gens) => snapshot.getNodes(hs, gens),
    enter: (t) => (t.height === 0 ? true : marks.nodes.add(t.hash, t.gen)),
  });
  for await (const block of walk) {
    if (spec.leaf !== "order") for (const t of block) marks.leaves.add(t.hash, t.gen);
  }
}

/** Deletes the unmarked records of the snapshot in chunks, each under the store's write lock. */
class Sweep {
  private chunk: TreeRecordKey[] = [];
  private readonly chunkSize: number;

  constructor(
    private readonly store: LevelStore,
    private readonly guard: CommitGuard,
    private readonly retention: Retention,
    private readonly report: PruneReport,
    private readonly opts: PruneOptions,
  ) {
    this.chunkSize = opts.chunk ?? DEFAULT_CHUNK;
  }

  async run(snapshot: LevelStore, marks: Marks): Promise<void> {
    for await (const r of snapshot.trees.keys()) {
      if (r.node) {
        this.report.nodes_scanned++;
        if (marks.nodes.has(r.hash, r.gen)) continue;
      } else if (marks.leaves.has(r.hash, r.gen)) continue;
      this.chunk.push(r);
      if (this.chunk.length >= this.chunkSize) {
        if (!(await this.flush())) return;
        await new Promise((r) => setImmediate(r));
      }
    }
    await this.flush();
  }

  /** Deletes the chunk; false when the sweep must stop (a commit built on a batch being pruned). */
  private async flush(): Promise<boolean> {
    if (this.chunk.length === 0) return true;
    const candidates = this.chunk;
    this.chunk = [];
    await this.opts.betweenChunks?.();
    this.opts.signal?.throwIfAborted();
    return this.store.commits.withWriteLock(async () => {
      const bad = this.guard.unsafeCommit(this.retention.upTo, this.retention.kept);
      if (bad) {
        this.report.aborted = `batch ${bad.id} was committed on top of batch ${bad.prev}, whose trees are being pruned; sweep stopped`;
        return false;
      }
      await this.store.trees.delete(this.deletable(candidates));
      return true;
    });
  }

  /** The candidates no commit has written since the prune began, counted as deleted or kept. */
  private deletable(candidates: readonly TreeRecordKey[]): TreeRecordKey[] {
    const doomed: TreeRecordKey[] = [];
    for (const r of candidates) {
      if (this.guard.isProtected(r)) {
        this.report.protected_kept++;
        continue;
      }
      doomed.push(r);
      if (r.node) this.report.nodes_deleted++;
      else this.report.leaves_deleted++;
    }
    return doomed;
  }
}
