import type { HashEngine } from "./engine.js";

interface Pending {
  readonly xs: Uint8Array;
  readonly ys: Uint8Array;
  readonly resolve: (out: Uint8Array) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Merges the hashMany calls issued while the trees of a batch advance concurrently (the same level
 * of the vault, rollup and order trees, say) into one call of the inner engine, so that a worker
 * pool sees large levels it can split, and a native engine pays its call overhead once per round.
 * Calls are collected until the event loop has run every pending continuation (setImmediate).
 */
export class CoalescingEngine implements HashEngine {
  private pending: Pending[] = [];
  private scheduled = false;

  constructor(private readonly inner: HashEngine) {}

  get name(): string {
    return this.inner.name;
  }

  /** The inner engine, e.g. to read its kernel. */
  get engine(): HashEngine {
    return this.inner;
  }

  hashMany(xs: Uint8Array, ys: Uint8Array): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.pending.push({ xs, ys, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const calls = this.pending;
    this.pending = [];
    this.scheduled = false;
    if (calls.length === 1) {
      const only = calls[0]!;
      try {
        only.resolve(await this.inner.hashMany(only.xs, only.ys));
      } catch (err) {
        only.reject(err);
      }
      return;
    }
    let total = 0;
    for (const c of calls) total += c.xs.length;
    const xs = new Uint8Array(total);
    const ys = new Uint8Array(total);
    let offset = 0;
    for (const c of calls) {
      xs.set(c.xs, offset);
      ys.set(c.ys, offset);
      offset += c.xs.length;
    }
    try {
      const out = await this.inner.hashMany(xs, ys);
      offset = 0;
      for (const c of calls) {
        c.resolve(out.subarray(offset, offset + c.xs.length));
        offset += c.xs.length;
      }
    } catch {
      // One bad input must not fail the other callers' hashes: retry them one by one.
      for (const c of calls) {
        try {
          c.resolve(await this.inner.hashMany(c.xs, c.ys));
        } catch (e) {
          c.reject(e);
        }
      }
    }
  }

  close(): Promise<void> | void {
    return this.inner.close?.();
  }
}
