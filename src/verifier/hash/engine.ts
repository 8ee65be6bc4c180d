import { isBelowPrime } from "../../model/field.js";
import { bitAt } from "../../util/bytes.js";

/**
 * The seam between the trees and whatever computes StarkWare's Pedersen hash.
 *
 * Values travel as 32-byte big-endian field elements packed back to back, so an engine can take a
 * whole tree level in one call without per-hash conversions. Every engine must refuse an input at or
 * above the field prime (never reduce it silently): the trees only ever feed it values they parsed
 * and range-checked, so such an input is a bug or hostile data.
 */
export interface HashEngine {
  /** Short name shown in logs and benchmarks, e.g. "wasm", "js", "native". */
  readonly name: string;
  /**
   * Hashes n pairs. `xs` and `ys` each hold n values of 32 bytes; the result holds the n hashes.
   * May return synchronously or a promise (worker-pool engines), so callers always `await`.
   */
  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array | Promise<Uint8Array>;
  /**
   * Hashes n one-sided pairs: H(v_i, c) when `constantIsY`, else H(c, v_i), with `vs` holding the n
   * values and `c` one 32-byte value. A tree's lone-leaf chains are such pairs (c is the empty
   * subtree's root at that level), and an engine can add the constant's share of the hash once
   * instead of per pair. Optional: `hashWithConstant` falls back to `hashMany`.
   */
  hashConst?(vs: Uint8Array, c: Uint8Array, constantIsY: boolean): Uint8Array | Promise<Uint8Array>;
  /**
   * Climbs chains of one-sided pairs to their ends in one call (see ChainClimb). Optional:
   * `climbChains` falls back to one `hashWithConstant` call per height and side.
   */
  climbChains?(job: ChainClimb): ClimbedChains | Promise<ClimbedChains>;
  /** Releases threads or native resources; optional. */
  close?(): Promise<void> | void;
}

/** One-sided pairs (see `HashEngine.hashConst`), through `hashMany` for engines without it. */
export function hashWithConstant(
  engine: HashEngine,
  vs: Uint8Array,
  c: Uint8Array,
  constantIsY: boolean,
): Uint8Array | Promise<Uint8Array> {
  if (engine.hashConst) return engine.hashConst(vs, c, constantIsY);
  const repeated = new Uint8Array(vs.length);
  for (let off = 0; off < vs.length; off += 32) repeated.set(c, off);
  return constantIsY ? engine.hashMany(vs, repeated) : engine.hashMany(repeated, vs);
}

/**
 * n chains of one-sided pairs, as a tree's lone leaves climb to where their chains end: chain i
 * starts with the value `starts[i]` at height `from[i]` and ends at `to[i]` (≥ from[i]); at each
 * height k on the way it is paired with E[k] (`empty`, packed E[0..]), on the left when bit k of
 * `paths[i]` (32 bytes, big-endian) is 0: H(v, E[k]), else H(E[k], v).
 */
export interface ChainClimb {
  readonly starts: Uint8Array;
  readonly paths: Uint8Array;
  readonly from: Uint8Array;
  readonly to: Uint8Array;
  readonly empty: Uint8Array;
  /** The values at heights that are multiples of `step` (strictly between from and to) are kept… */
  readonly step: number;
  /** …in `slots` places per chain: the value at height k in place k / step − 1. */
  readonly slots: number;
}

export interface ClimbedChains {
  /** Each chain's value at its end (its start when from = to), n × 32 bytes. */
  readonly tops: Uint8Array;
  /** The values at multiples of step: chain i's at height k at (i · slots + k / step − 1) · 32. */
  readonly marks: Uint8Array;
}

/** How many hashes a climb takes: every chain's height gain. */
export function chainHashes(job: ChainClimb): number {
  let n = 0;
  for (let i = 0; i < job.from.length; i++) n += Math.max(0, job.to[i]! - job.from[i]!);
  return n;
}

/**
 * Throws a RangeError unless the job is well formed: the shapes the native addon checks (climbChains
 * in pedersen_napi.c), with the same messages, and every start and every E[k] below the field prime.
 */
export function checkChainClimb(job: ChainClimb): void {
  const { starts, paths, from, to, empty, step, slots } = job;
  const n = from.length;
  if (starts.length !== n * 32 || paths.length !== n * 32 || to.length !== n || empty.length % 32 !== 0)
    throw new RangeError("climbChains needs n*32 bytes of starts and paths, n heights each in from and to");
  if (!(step >= 1)) throw new RangeError("climbChains needs a step of at least 1");
  const empties = empty.length / 32;
  for (let i = 0; i < n; i++) {
    if (from[i]! > to[i]! || (from[i]! < to[i]! && to[i]! > empties))
      throw new RangeError(`chain ${i} climbs from height ${from[i]} to ${to[i]} with E[0..${empties})`);
    if (Math.floor((to[i]! - 1) / step) > slots)
      throw new RangeError(`marks has no room for chain ${i}'s values up to height ${to[i]}`);
  }
  checkPackedValues(starts, "starts");
  checkPackedValues(empty, "empty");
}

/** Climbs chains (see ChainClimb) with the engine's own climb, or a height at a time through it. */
export async function climbChains(engine: HashEngine, job: ChainClimb): Promise<ClimbedChains> {
  if (engine.climbChains) return engine.climbChains(job);
  checkChainClimb(job);
  const { starts, paths, from, to, empty, step, slots } = job;
  const n = from.length;
  const tops = starts.slice();
  const marks = new Uint8Array(n * slots * 32);
  let lo = 255;
  let hi = 0;
  for (let i = 0; i < n; i++) {
    if (from[i]! < to[i]! && from[i]! < lo) lo = from[i]!;
    hi = Math.max(hi, to[i]!);
  }
  for (let h = lo; h < hi; h++) {
    for (const side of [0, 1]) {
      const climbing: number[] = [];
      for (let i = 0; i < n; i++)
        if (from[i]! <= h && h < to[i]! && bitAt(paths, i * 32, h) === side) climbing.push(i);
      if (climbing.length === 0) continue;
      const vs = new Uint8Array(climbing.length * 32);
      climbing.forEach((i, t) => vs.set(tops.subarray(i * 32, i * 32 + 32), t * 32));
      const up = await hashWithConstant(engine, vs, empty.subarray(h * 32, h * 32 + 32), side === 0);
      climbing.forEach((i, t) => {
        const v = up.subarray(t * 32, t * 32 + 32);
        tops.set(v, i * 32);
        const at = h + 1;
        if (at < to[i]! && at % step === 0) marks.set(v, (i * slots + at / step - 1) * 32);
      });
    }
  }
  return { tops, marks };
}

export class FieldRangeError extends RangeError {
  constructor(which: string, index: number) {
    super(`Pedersen input ${which}[${index}] is not below the field prime`);
  }
}

/** Validates one side's packed values; throws FieldRangeError naming the first bad one as `which`. */
export function checkPackedValues(vs: Uint8Array, which: string): void {
  if (vs.length % 32 !== 0)
    throw new RangeError(`Pedersen inputs must be multiples of 32 bytes (${vs.length})`);
  for (let i = 0; i < vs.length / 32; i++) if (!isBelowPrime(vs, i * 32)) throw new FieldRangeError(which, i);
}

/** Validates a packed input pair of n values each; throws FieldRangeError naming the first bad one. */
export function checkPackedInputs(xs: Uint8Array, ys: Uint8Array): number {
  if (xs.length !== ys.length || xs.length % 32 !== 0) {
    throw new RangeError(`Pedersen inputs must be equal multiples of 32 bytes (${xs.length}, ${ys.length})`);
  }
  const n = xs.length / 32;
  for (let i = 0; i < n; i++) {
    if (!isBelowPrime(xs, i * 32)) throw new FieldRangeError("x", i);
    if (!isBelowPrime(ys, i * 32)) throw new FieldRangeError("y", i);
  }
  return n;
}
