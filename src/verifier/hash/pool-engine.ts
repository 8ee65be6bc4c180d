import os from "node:os";
import { Worker } from "node:worker_threads";
import { workerScript } from "../../util/worker-script.js";
import {
  chainHashes,
  checkChainClimb,
  checkPackedValues,
  type ChainClimb,
  type ClimbedChains,
  type HashEngine,
} from "./engine.js";
import { isBelowPrime } from "../../model/field.js";
import { nativeAddonPath } from "../../native/addon.js";
import { loadNativePedersen, NativeEngine, type NativePedersen } from "./native-engine.js";

export interface PoolEngineOptions {
  /** Worker threads; default os.availableParallelism(). */
  threads?: number;
  /** hashMany and hashConst calls with fewer pairs than this stay on the calling thread; default 256. */
  threshold?: number;
  /** Chain climbs of fewer hashes than this stay on the calling thread; default 2048. */
  climbThreshold?: number;
  /** Force a native kernel (default: the best this CPU runs). */
  kernel?: string;
}

/**
 * A slice for one worker, as offsets into the shared buffer: pairs (`x`, `y`), or one-sided pairs
 * (`x` the values, `c` the constant's offset, `cIsY` its side; see HashEngine.hashConst). What is
 * posted to the worker (pedersen-worker.ts); its reply names the id, with an error if it failed.
 */
export interface WorkerJob {
  id: number;
  sab: SharedArrayBuffer;
  x: number;
  y: number;
  c?: number;
  cIsY?: boolean;
  o: number;
  n: number;
  /** A slice of a chain climb instead (HashEngine.climbChains): where its parts are. */
  climb?: ClimbSlice;
  kernel: string;
}

/** A slice waiting for its worker, and how to settle its call. */
interface Job extends WorkerJob {
  resolve(): void;
  reject(err: Error): void;
}

/**
 * Offsets in the shared buffer of a slice of chains: starts and paths (32 bytes per chain), from and
 * to (1 byte), tops (32) and marks (32 · slots), each at the slice's first chain; E[0..] at `empty`.
 */
export interface ClimbSlice {
  starts: number;
  paths: number;
  from: number;
  to: number;
  empty: number;
  emptyBytes: number;
  step: number;
  slots: number;
  tops: number;
  marks: number;
}

/**
 * A call is cut into at most one slice per worker, and into no slices smaller than this (pairs or
 * chains): a smaller slice costs a worker more in its round trip than it spares.
 */
const MIN_SLICE = 2048;

/** Concurrent calls (one per tree) each hold a buffer; a few spares cover them. */
const MAX_SPARE = 4;
/**
 * Larger buffers are not kept: a bulk load's chain climbs take buffers of 32 MiB, which would
 * otherwise stay resident for the life of the process (a batch's calls need a few MiB).
 */
const MAX_SPARE_BYTES = 8 << 20;

interface Slot {
  worker: Worker;
  busy: Job | null;
}

/**
 * Spreads large hashMany calls over worker threads that each run the native addon (the addon and
 * its tables are loaded once per process and shared). Inputs are copied once into a
 * SharedArrayBuffer, each worker hashes a contiguous slice in place, and the result is copied out
 * into an ordinary Uint8Array. Small calls run synchronously on the calling thread.
 * Workers start on the first large call; idle workers do not keep the process alive.
 */
export class PoolEngine implements HashEngine {
  readonly name = "native-pool";
  readonly kernel: string;
  readonly threads: number;
  readonly threshold: number;
  readonly climbThreshold: number;
  private readonly local: NativeEngine;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Shared buffers of finished calls, for the next ones (at most MAX_SPARE kept). */
  private readonly spare: SharedArrayBuffer[] = [];

  private constructor(
    private readonly addon: NativePedersen,
    private readonly addonPath: string,
    private readonly workerPath: string,
    opts: PoolEngineOptions,
  ) {
    this.local = new NativeEngine(addon, opts.kernel);
    this.kernel = this.local.kernel;
    this.threads = Math.max(1, Math.floor(opts.threads ?? os.availableParallelism()));
    // The calling thread reads the store while the trees hash (compute-roots.ts), so even
    // mid-sized calls go to a worker; larger thresholds cost batch time and CPU with every kernel
    // (docs/performance.md, "Tried and left out").
    this.threshold = Math.max(1, Math.floor(opts.threshold ?? 256));
    this.climbThreshold = Math.max(1, Math.floor(opts.climbThreshold ?? 2048));
  }

  /** A pool engine, or null when the native addon is not available. */
  static create(opts: PoolEngineOptions = {}): PoolEngine | null {
    const addon = loadNativePedersen();
    const addonPath = nativeAddonPath();
    if (!addon || !addonPath) return null;
    const workerPath = workerScript(import.meta.url, "pedersen-worker.js");
    if (!workerPath) throw new Error("the Pedersen pool's worker script is missing (run npm run build)");
    return new PoolEngine(addon, addonPath, workerPath, opts);
  }

  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array | Promise<Uint8Array> {
    if (this.closed) throw new Error("PoolEngine is closed");
    const n = xs.length / 32;
    if (n < this.threshold || this.threads < 2) return this.local.hashMany(xs, ys);
    // Validate here so the error names the index in the caller's arrays, not a worker's slice.
    this.addon.checkInputs(xs, ys);
    return this.runPooled([xs, ys], n, (start) => ({ x: start * 32, y: xs.length + start * 32 }));
  }

  hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean): Uint8Array | Promise<Uint8Array> {
    if (this.closed) throw new Error("PoolEngine is closed");
    const n = vs.length / 32;
    if (n < this.threshold || this.threads < 2) return this.local.hashConst(vs, c, constantIsY);
    checkPackedValues(vs, constantIsY ? "x" : "y");
    if (c.length !== 32 || !isBelowPrime(c))
      throw new RangeError("Pedersen constant input is not below the field prime");
    return this.runPooled([vs, c], n, (start) => ({ x: start * 32, y: 0, c: n * 32, cIsY: constantIsY }));
  }

  /**
   * Climbs a large set of chains (HashEngine.climbChains) in contiguous slices of chains, one per
   * worker, each slice whole: chains are independent, so a call is one round trip per worker.
   */
  climbChains(job: ChainClimb): ClimbedChains | Promise<ClimbedChains> {
    if (this.closed) throw new Error("PoolEngine is closed");
    const n = job.from.length;
    if (chainHashes(job) < this.climbThreshold || this.threads < 2 || n < 2)
      return this.local.climbChains(job);
    // Checked whole here, so that errors name chains and values as the caller numbers them.
    checkChainClimb(job);
    return this.climbPooled(job, n);
  }

  private async climbPooled(job: ChainClimb, n: number): Promise<ClimbedChains> {
    const { starts, paths, from, to, empty, step, slots } = job;
    const markBytes = n * slots * 32;
    const sab = this.acquire(starts.length + paths.length + 2 * n + empty.length + n * 32 + markBytes);
    const u8 = new Uint8Array(sab);
    let at = 0;
    const place = (b: Uint8Array): number => {
      u8.set(b, at);
      at += b.length;
      return at - b.length;
    };
    const offsets = {
      starts: place(starts),
      paths: place(paths),
      from: place(from),
      to: place(to),
      empty: place(empty),
      tops: at,
      marks: at + n * 32,
    };
    u8.fill(0, offsets.marks, offsets.marks + markBytes);
    await this.runSlices(sab, n, (start) => ({
      x: 0,
      y: 0,
      o: 0,
      climb: {
        starts: offsets.starts + start * 32,
        paths: offsets.paths + start * 32,
        from: offsets.from + start,
        to: offsets.to + start,
        empty: offsets.empty,
        emptyBytes: empty.length,
        step,
        slots,
        tops: offsets.tops + start * 32,
        marks: offsets.marks + start * slots * 32,
      },
    }));
    return {
      tops: u8.slice(offsets.tops, offsets.tops + n * 32),
      marks: u8.slice(offsets.marks, offsets.marks + markBytes),
    };
  }

  /**
   * Copies `inputs` back to back into a shared buffer, with room for n hashes after them, and has
   * the workers hash contiguous slices: `slice(start)` gives a slice's input offsets.
   */
  private async runPooled(
    inputs: readonly Uint8Array[],
    n: number,
    slice: (start: number) => Pick<Job, "x" | "y" | "c" | "cIsY">,
  ): Promise<Uint8Array> {
    let at = 0;
    const outAt = inputs.reduce((sum, b) => sum + b.length, 0);
    const sab = this.acquire(outAt + n * 32);
    const u8 = new Uint8Array(sab);
    for (const b of inputs) {
      u8.set(b, at);
      at += b.length;
    }
    await this.runSlices(sab, n, (start) => ({ ...slice(start), o: outAt + start * 32 }));
    return u8.slice(outAt, outAt + n * 32);
  }

  /**
   * Has the workers process n items of `sab` in contiguous slices (`slice(start)` gives a slice's
   * offsets), then keeps the buffer for later calls.
   */
  private async runSlices(
    sab: SharedArrayBuffer,
    n: number,
    slice: (start: number) => Pick<Job, "x" | "y" | "c" | "cIsY" | "o" | "climb">,
  ): Promise<void> {
    const parts = Math.min(this.threads, Math.ceil(n / MIN_SLICE));
    const per = Math.ceil(n / parts);
    const jobs: Promise<void>[] = [];
    for (let start = 0; start < n; start += per) {
      const count = Math.min(per, n - start);
      jobs.push(
        new Promise<void>((resolve, reject) => {
          this.queue.push({
            id: this.nextId++,
            sab,
            ...slice(start),
            n: count,
            kernel: this.kernel,
            resolve,
            reject,
          });
        }),
      );
    }
    this.pump();
    try {
      await Promise.all(jobs);
    } finally {
      if (this.spare.length < MAX_SPARE && sab.byteLength <= MAX_SPARE_BYTES) this.spare.push(sab);
    }
  }

  /**
   * A shared buffer of at least `bytes`, reused from earlier calls: allocating one per call (a
   * batch makes one call per tree level) leaves hundreds of MiB of dead buffers between garbage
   * collections, and each large allocation nudges V8 towards a full collection.
   */
  private acquire(bytes: number): SharedArrayBuffer {
    let best = -1;
    this.spare.forEach((b, i) => {
      if (b.byteLength >= bytes && (best < 0 || b.byteLength < this.spare[best]!.byteLength)) best = i;
    });
    if (best >= 0) return this.spare.splice(best, 1)[0]!;
    return new SharedArrayBuffer(Math.max(1 << 20, 2 ** Math.ceil(Math.log2(bytes))));
  }

  private spawn(): Slot {
    const worker = new Worker(this.workerPath, { workerData: { addonPath: this.addonPath } });
    const slot: Slot = { worker, busy: null };
    worker.unref();
    worker.on("message", (msg: { id: number; error?: string }) => {
      const job = slot.busy;
      if (!job || job.id !== msg.id) return;
      slot.busy = null;
      worker.unref();
      if (msg.error) job.reject(new Error(msg.error));
      else job.resolve();
      this.pump();
    });
    const fail = (err: Error) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      const job = slot.busy;
      slot.busy = null;
      if (job) job.reject(err);
      if (!this.closed) this.pump();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`Pedersen worker exited (code ${code})`)));
    this.slots.push(slot);
    return slot;
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot = this.slots.find((s) => s.busy === null);
      if (!slot && this.slots.length < this.threads) slot = this.spawn();
      if (!slot) return;
      const job = this.queue.shift()!;
      slot.busy = job;
      slot.worker.ref();
      const { resolve: _r, reject: _j, ...msg } = job;
      slot.worker.postMessage(msg);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const err = new Error("PoolEngine closed");
    for (const job of this.queue.splice(0)) job.reject(err);
    const slots = this.slots.splice(0);
    for (const s of slots) {
      s.busy?.reject(err);
      s.busy = null;
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
