import { B63, B64 } from "../../model/leaf-rules.js";
/**
 * Field readers for submitted transactions. Every refusal is a TxError naming the dotted path of the
 * offending field (e.g. `tx.party_a_order.amount_sell`), which the gateway turns into a 4xx answer.
 */
import { FIELD_PRIME } from "../shared.js";

export class TxError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
    readonly status = 400,
    readonly code = "MALFORMED_REQUEST",
  ) {
    super(`${field}: ${reason}`);
    this.name = "TxError";
  }
}

const DECIMAL = /^(0|[1-9][0-9]{0,79})$/;
const SIGNED_DECIMAL = /^(0|-?[1-9][0-9]{0,79})$/;
const HEX_0X = /^0x[0-9a-fA-F]{1,64}$/;
const HEX_PLAIN = /^[0-9a-fA-F]{1,64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export { B63, B64 };

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}

/** A JSON object being read, with the path it sits at. */
export class Fields {
  private constructor(
    readonly raw: Record<string, unknown>,
    readonly path: string,
  ) {}

  static of(v: unknown, path: string): Fields {
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new TxError(path, `expected an object, got ${describe(v)}`);
    }
    return new Fields(v as Record<string, unknown>, path);
  }

  at(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  fail(key: string, reason: string): never {
    throw new TxError(this.at(key), reason);
  }

  /** Refuses fields other than `allowed`. */
  only(allowed: readonly string[]): this {
    for (const k of Object.keys(this.raw)) if (!allowed.includes(k)) this.fail(k, "unexpected field");
    return this;
  }

  /** True when the field is present and not null. */
  has(key: string): boolean {
    return (
      Object.prototype.hasOwnProperty.call(this.raw, key) &&
      this.raw[key] !== null &&
      this.raw[key] !== undefined
    );
  }

  get(key: string): unknown {
    if (!Object.prototype.hasOwnProperty.call(this.raw, key) || this.raw[key] === undefined)
      this.fail(key, "missing");
    return this.raw[key];
  }

  /** A non-negative decimal string below `max`. */
  amount(key: string, max: bigint = B63): bigint {
    const v = this.get(key);
    if (typeof v !== "string" || !DECIMAL.test(v))
      this.fail(key, `expected a decimal string, got ${describe(v)}`);
    const n = BigInt(v);
    if (n >= max) this.fail(key, `${v} is out of range [0, ${max})`);
    return n;
  }

  /** A signed decimal string in [-2^63, 2^63). */
  signed(key: string): bigint {
    const v = this.get(key);
    if (typeof v !== "string" || !SIGNED_DECIMAL.test(v)) {
      this.fail(key, `expected a signed decimal string, got ${describe(v)}`);
    }
    const n = BigInt(v);
    if (n < -B63 || n >= B63) this.fail(key, `${v} is out of range [-2^63, 2^63)`);
    return n;
  }

  /** A 0x-prefixed hex string below `max` (the field prime by default). */
  hex(key: string, max: bigint = FIELD_PRIME): bigint {
    return hexValue(this.get(key), this.at(key), max);
  }

  /** Hex without prefix (a fact). */
  plainHex(key: string): string {
    const v = this.get(key);
    if (typeof v !== "string" || !HEX_PLAIN.test(v))
      this.fail(key, `expected hex without 0x prefix, got ${describe(v)}`);
    return v;
  }

  /** A 20-byte base-chain address, 0x-prefixed. */
  address(key: string): bigint {
    const v = this.get(key);
    if (typeof v !== "string" || !ADDRESS.test(v))
      this.fail(key, `expected a 0x-prefixed 20-byte address, got ${describe(v)}`);
    return BigInt(v);
  }

  /** A JSON integer in [min, max). */
  int(key: string, min: number, max: number): number {
    const v = this.get(key);
    if (typeof v !== "number" || !Number.isSafeInteger(v))
      this.fail(key, `expected an integer, got ${describe(v)}`);
    if (v < min || v >= max) this.fail(key, `${v} is out of range [${min}, ${max})`);
    return v;
  }

  /** A decimal string id below `max` (position ids). */
  decimalId(key: string, max: bigint): bigint {
    return this.amount(key, max);
  }

  str(key: string): string {
    const v = this.get(key);
    if (typeof v !== "string") this.fail(key, `expected a string, got ${describe(v)}`);
    return v;
  }

  bool(key: string): boolean {
    const v = this.get(key);
    if (typeof v !== "boolean") this.fail(key, `expected a boolean, got ${describe(v)}`);
    return v;
  }

  obj(key: string): Fields {
    return Fields.of(this.get(key), this.at(key));
  }

  arr(key: string, minLength = 0): unknown[] {
    const v = this.get(key);
    if (!Array.isArray(v)) this.fail(key, `expected an array, got ${describe(v)}`);
    if (v.length < minLength) this.fail(key, `needs at least ${minLength} element(s)`);
    return v;
  }

  /** Exactly the given string. */
  literal(key: string, value: string): void {
    if (this.get(key) !== value) this.fail(key, `must be ${JSON.stringify(value)}`);
  }

  /** Signature object {r, s}: shape only, never checked cryptographically. */
  signature(key: string): void {
    const sig: Fields = this.obj(key).only(["r", "s"]);
    for (const part of ["r", "s"]) {
      const n = sig.hex(part, 1n << 252n);
      if (n === 0n) sig.fail(part, "must not be 0");
    }
  }
}

export function hexValue(v: unknown, path: string, max: bigint = FIELD_PRIME): bigint {
  if (typeof v !== "string" || !HEX_0X.test(v))
    throw new TxError(path, `expected a 0x-prefixed hex string, got ${describe(v)}`);
  const n = BigInt(v);
  if (n >= max)
    throw new TxError(
      path,
      max === FIELD_PRIME ? "value is not below the field prime" : `value is not below ${max}`,
    );
  return n;
}
