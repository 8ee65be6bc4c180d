/**
 * Cuts received transactions into batches (by size and by time), applies them to the state machine,
 * computes each batch's roots with dacd's own `computeRoots`, and keeps the chain of batches,
 * including rejection (the head batch's state is rolled back; the next batch names its predecessor).
 */
import { EventEmitter } from "node:events";
import type { BatchView, ChainView, TxRecord } from "./chain.js";
import { corruptRoot, type Faults } from "./faults.js";
import { ordersJson, positionsJson, vaultsJson } from "./serialize.js";
import {
  computeClaimHash,
  computeRoots,
  keptTrees,
  MemoryNodeStore,
  type HashEngine,
  type LeafChanges,
  type Profile,
  type Roots,
  type TreeName,
} from "./shared.js";
import type { StateMachine } from "./state/machine.js";
import { ApplyError, Journal } from "./state/tables.js";
import type { TxPool } from "./txpool.js";
import { toHex64 } from "../util/bytes.js";

export interface Batch extends BatchView {
  readonly changes: Partial<Record<TreeName, LeafChanges>>;
  readonly roots: Roots;
  readonly journal: Journal;
  rejected: boolean;
  stated: Partial<Record<TreeName, string>>;
}

export interface BatcherOptions {
  readonly batchSize: number;
  readonly intervalMs: number;
  readonly now?: () => number;
}

function statedOf(roots: Roots): Partial<Record<TreeName, string>> {
  const out: Partial<Record<TreeName, string>> = {};
  for (const [k, v] of Object.entries(roots) as [TreeName, Uint8Array][]) out[k] = toHex64(v);
  return out;
}

export class Batcher<T> extends EventEmitter implements ChainView {
  readonly batches: Batch[] = [];
  genesis: Partial<Record<TreeName, string>> = {};
  private readonly store = new MemoryNodeStore();
  private headId = -1;
  private timer: NodeJS.Timeout | undefined;
  /** Serializes batch cuts: root computation is asynchronous. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly now: () => number;

  constructor(
    readonly profile: Profile,
    private readonly machine: StateMachine<T>,
    private readonly pool: TxPool<T>,
    private readonly engine: HashEngine,
    private readonly faults: Faults,
    private readonly opts: BatcherOptions,
  ) {
    super();
    this.now = opts.now ?? Date.now;
  }

  /** The trees the devnet computes: all of the profile's, rollup included. */
  get trees(): ReturnType<typeof keptTrees> {
    return keptTrees(this.profile, true);
  }

  async init(): Promise<void> {
    const { roots } = await computeRoots(this.engine, this.store, this.trees, null, {}, 0);
    this.genesis = statedOf(roots);
  }

  start(): void {
    if (this.opts.intervalMs > 0) {
      this.timer = setInterval(() => {
        if (this.pool.ready() > 0) void this.cut().catch((e: unknown) => this.emit("error", e));
      }, this.opts.intervalMs);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Called after a transaction is added: cuts as soon as a full batch is ready. */
  onAdded(): void {
    if (this.pool.ready() >= this.opts.batchSize)
      void this.cut().catch((e: unknown) => this.emit("error", e));
  }

  /** Cuts a batch from the ready transactions (resolves to null when none is ready, unless `allowEmpty`). */
  cut(allowEmpty = false): Promise<Batch | null> {
    const next = this.chain.then(() => this.cutNow(allowEmpty));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Waits for all cuts in progress. */
  idle(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  private async cutNow(allowEmpty: boolean): Promise<Batch | null> {
    if (this.pool.ready() === 0 && !allowEmpty) return null;
    const taken = this.pool.take(this.opts.batchSize);
    const journal = new Journal();
    const nowMs = this.now();
    const txs: TxRecord[] = taken.map((p) => {
      try {
        this.machine.apply(p.parsed, journal, nowMs);
        return { txId: p.txId, tx: p.raw, wasReplaced: false, altTxs: [] };
      } catch (e) {
        if (!(e instanceof ApplyError)) throw e;
        return {
          txId: p.txId,
          tx: p.raw,
          wasReplaced: true,
          altTxs: [this.machine.alternative(p.raw, e.message)],
          reason: e.message,
        };
      }
    });
    const changes = this.machine.changes(journal);
    const prev = this.headId >= 0 ? this.batches[this.headId]! : undefined;
    let result;
    try {
      // The devnet's store finds a node by its hash alone (memory-store.ts), so the gens the walks
      // look nodes up with do not matter here; its records are written under the batch's id.
      const start = prev ? { roots: prev.roots, gens: {} } : null;
      result = await computeRoots(this.engine, this.store, this.trees, start, changes, this.batches.length);
    } catch (e) {
      journal.undo(); // keep the state consistent with the chain
      throw e;
    }
    this.store.putNodes(result.newNodes);
    const stated = statedOf(result.roots);
    const wrong = this.faults.takeWrongRoot();
    if (wrong && stated[wrong] !== undefined) stated[wrong] = corruptRoot(stated[wrong]);
    const batchId = this.batches.length;
    const sequenceNumber = prev ? prev.sequenceNumber + 1 : 0;
    const roots = result.roots;
    const profile = this.profile;
    const batch: Batch = {
      batchId,
      prevBatchId: this.headId,
      sequenceNumber,
      timeCreated: Math.floor(nowMs / 1000),
      txs,
      rejected: false,
      stated,
      changes,
      roots,
      journal,
      expectedClaim: computeClaimHash(profile, roots, sequenceNumber),
      update(validateRollup: boolean): Record<string, unknown> {
        return updateJson(profile, this, validateRollup);
      },
    };
    this.batches.push(batch);
    this.headId = batchId;
    this.emit("batch", batch);
    return batch;
  }

  /**
   * Rejects the head batch (as if the base chain refused it): its state changes are undone and the
   * next batch builds on its predecessor. Only the head can be rejected; returns the new head id.
   */
  async reject(batchId: number = this.headId): Promise<number> {
    await this.idle();
    const b = this.batches[batchId];
    if (!b || b.rejected) throw new RangeError(`batch ${batchId} does not exist or is already rejected`);
    if (batchId !== this.headId) throw new RangeError(`only the head batch (${this.headId}) can be rejected`);
    b.journal.undo();
    b.rejected = true;
    this.headId = b.prevBatchId;
    return this.headId;
  }

  /** Makes an existing batch's published root wrong. */
  corrupt(batchId: number, tree: TreeName): void {
    const b = this.batches[batchId];
    if (!b) throw new RangeError(`batch ${batchId} does not exist`);
    const h = b.stated[tree];
    if (h === undefined) throw new RangeError(`batch ${batchId} has no ${tree} tree`);
    b.stated = { ...b.stated, [tree]: corruptRoot(h) };
  }

  head(): number {
    return this.headId;
  }

  lastBatchId(): number {
    return this.batches.length - 1;
  }

  batch(id: number): Batch | undefined {
    return Number.isInteger(id) ? this.batches[id] : undefined;
  }
}

function updateJson(profile: Profile, b: Batch, validateRollup: boolean): Record<string, unknown> {
  if (profile.variant === "P") {
    return {
      prev_batch_id: b.prevBatchId,
      positions: positionsJson(b.changes.position),
      orders: ordersJson(b.changes.order),
      position_root: b.stated.position,
      order_root: b.stated.order,
    };
  }
  const out: Record<string, unknown> = {
    prev_batch_id: b.prevBatchId,
    vaults: vaultsJson(b.changes.vault),
    vault_root: b.stated.vault,
    orders: ordersJson(b.changes.order),
    order_root: b.stated.order,
  };
  if (validateRollup && profile.rollup) {
    out.rollup_vaults = vaultsJson(b.changes.rollup_vault);
    out.rollup_vault_root = b.stated.rollup_vault;
  }
  return out;
}
