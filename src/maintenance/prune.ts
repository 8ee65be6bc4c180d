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

/**
 * A set of 96-bit fingerprints of records (the low 12 bytes of a hash, the record's gen folded into
 * the first 4: the same node written by two batches is two records): 12 bytes a slot instead of a
 * string per node. The mark uses it to skip subtrees already marked, so a collision could skip a
 * subtree; with 96 bits that takes ~2^48 nodes to become likely.
 */
class FingerprintSet {
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

const keyHex = (k: Uint8Array): string => Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString("hex");

/** A tree record's identity as a string: node or leaf, gen, hash. */
const recordKey = (node: boolean, gen: number, hash: Uint8Array): string =>
  (node ? "n" : "l") + gen + ":" + keyHex(hash);

export async function pruneStore(store: LevelStore, opts: PruneOptions): Promise<PruneReport> {
  const started = performance.now();
  if (!Number.isInteger(opts.keepBatches) || opts.keepBatches < 1) {
    throw new DacdError("CONFIG", `keep-batches must be an integer >= 1, got ${opts.keepBatches}`);
  }
  const engine = opts.engine ?? new WasmEngine();
  const { trees, profile } = await storeProfile(store);

  // 1. Protect whatever commits write from now on.
  const protectedKeys = new Set<string>();
  const committed: { id: number; prev: number }[] = [];
  // A commit's records are written under its batch's id (storage/keys.ts).
  const listener = (record: BatchRecord, nodes: NodeWrites, leaves: NodeWrites): void => {
    const gen = record.batch_id;
    for (let i = 0; i < nodes.length; i++) protectedKeys.add(recordKey(true, gen, nodes.hash(i)));
    for (let i = 0; i < leaves.length; i++) protectedKeys.add(recordKey(false, gen, leaves.hash(i)));
    committed.push({ id: record.batch_id, prev: record.prev_batch_id });
  };
  store.commits.listeners.add(listener);
  const snapshot = store.snapshot();
  let report: PruneReport;
  try {
    // 2. Which batches keep their trees, from the snapshot.
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
    const keptIds = [...kept].sort((a, b) => a - b);
    const upTo = ids.length > 0 ? ids[ids.length - 1]! : -1;

    // Mark everything the kept batches reach.
    const nodes = new FingerprintSet();
    const leaves = new FingerprintSet();
    const getNodes = (
      hs: readonly Uint8Array[],
      gens: ArrayLike<number>,
    ): Promise<(Uint8Array | undefined)[]> => snapshot.getNodes(hs, gens);
    for (const id of keptIds) {
      const record = (await snapshot.getBatch(id))!;
      for (const spec of trees) {
        opts.signal?.throwIfAborted();
        const root = hexToBytes32(record.roots[spec.name] ?? "");
        if (!root) throw new DacdError("STORE", `batch ${id} has no ${spec.name} root; not pruning`);
        const rootGen = record.root_gens[spec.name];
        if (rootGen === undefined) {
          if (spec.name === profile.order.name) continue; // an unchecked order tree: only its stated root exists
          throw new DacdError("STORE", `batch ${id} names no gen for its ${spec.name} root; not pruning`);
        }
        const walk = walkLeaves(engine, spec, root, rootGen, {
          getNodes,
          enter: (t) => (t.height === 0 ? true : nodes.add(t.hash, t.gen)),
        });
        for await (const block of walk) {
          if (spec.leaf !== "order") for (const t of block) leaves.add(t.hash, t.gen);
        }
      }
    }

    // From here on dump and proof refuse the batches whose trees are being swept.
    const info: PruneInfo = { up_to: upTo, kept: keptIds, at: new Date().toISOString() };
    await store.batches.setPruneInfo(info);

    // 3. Sweep in chunks from the snapshot.
    report = {
      kept_batches: keptIds,
      pruned_batches: [],
      nodes_marked: nodes.size,
      leaves_marked: leaves.size,
      nodes_scanned: 0,
      nodes_deleted: 0,
      leaves_deleted: 0,
      protected_kept: 0,
      duration_ms: 0,
    };
    const chunkSize = opts.chunk ?? 4096;
    let chunk: TreeRecordKey[] = [];
    const flush = async (): Promise<boolean> => {
      if (chunk.length === 0) return true;
      const candidates = chunk;
      chunk = [];
      await opts.betweenChunks?.();
      opts.signal?.throwIfAborted();
      return store.commits.withWriteLock(async () => {
        const bad = committed.find((c) => c.prev !== -1 && c.prev <= upTo && !kept.has(c.prev));
        if (bad) {
          report.aborted = `batch ${bad.id} was committed on top of batch ${bad.prev}, whose trees are being pruned; sweep stopped`;
          return false;
        }
        const doomed: TreeRecordKey[] = [];
        for (const r of candidates) {
          if (protectedKeys.has(recordKey(r.node, r.gen, r.hash))) {
            report.protected_kept++;
            continue;
          }
          doomed.push(r);
          if (r.node) report.nodes_deleted++;
          else report.leaves_deleted++;
        }
        await store.trees.delete(doomed);
        return true;
      });
    };
    let go = true;
    for await (const r of snapshot.trees.keys()) {
      if (r.node) {
        report.nodes_scanned++;
        if (nodes.has(r.hash, r.gen)) continue;
      } else if (leaves.has(r.hash, r.gen)) continue;
      chunk.push(r);
      if (chunk.length >= chunkSize) {
        go = await flush();
        if (!go) break;
        await new Promise((r) => setImmediate(r));
      }
    }
    if (go) await flush();
    report.pruned_batches = [];
    for await (const id of store.batches.ids()) if (isPruned(info, id)) report.pruned_batches.push(id);
  } finally {
    store.commits.listeners.delete(listener);
    await snapshot.close();
  }
  // After the snapshot is closed: LevelDB keeps whatever an open snapshot can still see.
  if (opts.compact) await store.compact("trees");
  report.duration_ms = Math.round(performance.now() - started);
  return report;
}
