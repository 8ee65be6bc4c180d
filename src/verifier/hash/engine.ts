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

/** The STARK field prime p = 2^251 + 17·2^192 + 1. */
export const FIELD_PRIME = 2n ** 251n + 17n * 2n ** 192n + 1n;

/** The prime as 32 big-endian bytes, for range checks on raw buffers. */
export const FIELD_PRIME_BYTES: Uint8Array = (() => {
  const out = new Uint8Array(32);
  let v = FIELD_PRIME;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
})();

/** True when the 32-byte big-endian value at `offset` is below the field prime. */
export function isBelowPrime(buf: Uint8Array, offset = 0): boolean {
  for (let i = 0; i < 32; i++) {
    const a = buf[offset + i]!;
    const b = FIELD_PRIME_BYTES[i]!;
    if (a !== b) return a < b;
  }
  return false;
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
