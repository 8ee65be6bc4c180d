import { nativeJob } from "../../native/addon.js";
import type { ChainClimb, ClimbedChains, HashEngine } from "./engine.js";

/** What the C addon's Pedersen engine (native/pedersen/pedersen_napi.c) exports. */
export interface NativePedersen {
  /** Hashes n packed pairs into `out`; throws a RangeError naming the first input >= p. */
  hashMany(xs: Uint8Array, ys: Uint8Array, out: Uint8Array, kernel?: string): void;
  /** One-sided pairs into `out` (HashEngine.hashConst); the same range checks. */
  hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean, out: Uint8Array, kernel?: string): void;
  /** Chains of one-sided pairs climbed in one call (HashEngine.climbChains); the same range checks. */
  climbChains(
    starts: Uint8Array,
    paths: Uint8Array,
    from: Uint8Array,
    to: Uint8Array,
    empty: Uint8Array,
    step: number,
    slots: number,
    tops: Uint8Array,
    marks: Uint8Array,
    kernel?: string,
  ): void;
  /** The range check alone (same errors as hashMany). */
  checkInputs(xs: Uint8Array, ys: Uint8Array): void;
  /** Kernels this CPU can run, fastest first. */
  kernels(): string[];
  readonly bestKernel: string;
  readonly windowBits: number;
}

/** The addon's Pedersen functions, or null when the addon is not built (or does not load). */
export function loadNativePedersen(): NativePedersen | null {
  return nativeJob<NativePedersen>("hashMany", "hashConst", "climbChains", "checkInputs", "kernels");
}

/**
 * Native engine: the C addon, one call per batch, Buffers end to end (no hex or BigInt per hash).
 * Range checks happen in C and name the offending index, as `checkPackedInputs` does.
 */
export class NativeEngine implements HashEngine {
  readonly name = "native";
  /** The kernel in use, e.g. "adx" or "portable". */
  readonly kernel: string;

  constructor(
    private readonly addon: NativePedersen,
    kernel?: string,
  ) {
    const available = addon.kernels();
    if (kernel !== undefined && !available.includes(kernel)) {
      throw new Error(`Pedersen kernel "${kernel}" is not available here (have: ${available.join(", ")})`);
    }
    this.kernel = kernel ?? addon.bestKernel;
  }

  /** Kernels this CPU can run, fastest first. */
  kernels(): string[] {
    return this.addon.kernels();
  }

  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array {
    const out = new Uint8Array(xs.length);
    this.addon.hashMany(xs, ys, out, this.kernel);
    return out;
  }

  hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean): Uint8Array {
    const out = new Uint8Array(vs.length);
    this.addon.hashConst(vs, c, constantIsY, out, this.kernel);
    return out;
  }

  climbChains(job: ChainClimb): ClimbedChains {
    const n = job.from.length;
    const tops = new Uint8Array(n * 32);
    const marks = new Uint8Array(n * job.slots * 32);
    const { starts, paths, from, to, empty, step, slots } = job;
    this.addon.climbChains(starts, paths, from, to, empty, step, slots, tops, marks, this.kernel);
    return { tops, marks };
  }

  /** Hashes into a caller-provided buffer (n*32 bytes), saving an allocation per call. */
  hashInto(xs: Uint8Array, ys: Uint8Array, out: Uint8Array): void {
    this.addon.hashMany(xs, ys, out, this.kernel);
  }
}

/**
 * The native engine, or null when the addon is not built (or does not load). A named kernel that
 * this CPU cannot run is an error, not a silent fallback.
 */
export function loadNativeEngine(kernel?: string): NativeEngine | null {
  const addon = loadNativePedersen();
  return addon ? new NativeEngine(addon, kernel) : null;
}
