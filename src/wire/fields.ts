import { badInput } from "../errors.js";
import { FIELD_PRIME } from "../model/field.js";

/**
 * Field readers for gateway JSON. Each takes the batch id and a dotted path so that every refusal
 * names exactly where the bad value sits, e.g. `batch 7, field vaults.12.balance`.
 */
export interface At {
  readonly batchId: number | undefined;
  readonly path: string;
}

export const child = (at: At, key: string): At => ({
  batchId: at.batchId,
  path: at.path ? `${at.path}.${key}` : key,
});

// Decimal integers are bounded in length before BigInt parses them, so a hostile body cannot make
// us spend time on a million-digit number; 80 digits is far beyond any legal value here.
const DECIMAL = /^-?[0-9]{1,80}$/;
const HEX_0X = /^0x[0-9a-fA-F]{1,64}$/;
const HEX_PLAIN = /^[0-9a-fA-F]{1,64}$/;
const ID = /^(0|[1-9][0-9]{0,77})$/;

export function fail(at: At, message: string): never {
  throw badInput(at.batchId, at.path, message);
}

export function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}

/** A plain JSON object (not an array, not null). */
/** A JSON object (not null, not an array). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function readObject(v: unknown, at: At): Record<string, unknown> {
  if (!isPlainObject(v)) fail(at, `expected an object, got ${describe(v)}`);
  return v;
}

/** Refuses keys other than `allowed`: an unexpected field may mean we misread the format. */
export function onlyKeys(obj: Record<string, unknown>, allowed: readonly string[], at: At): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) fail(child(at, k), "unexpected field");
  }
}

export function required(obj: Record<string, unknown>, key: string, at: At): unknown {
  if (!Object.prototype.hasOwnProperty.call(obj, key) || obj[key] === undefined)
    fail(child(at, key), "missing");
  return obj[key];
}

/** A decimal string within [min, max). */
export function readDecimal(v: unknown, at: At, min: bigint, maxExclusive: bigint): bigint {
  if (typeof v !== "string" || !DECIMAL.test(v)) fail(at, `expected a decimal string, got ${describe(v)}`);
  const n = BigInt(v);
  if (n < min || n >= maxExclusive) fail(at, `${v} is out of range [${min}, ${maxExclusive})`);
  return n;
}

/** A 0x-prefixed hex string of a value below `maxExclusive` (the field prime by default). */
export function readHex(v: unknown, at: At, maxExclusive: bigint = FIELD_PRIME): bigint {
  if (typeof v !== "string" || !HEX_0X.test(v))
    fail(at, `expected a 0x-prefixed hex string, got ${describe(v)}`);
  const n = BigInt(v);
  if (n >= maxExclusive) {
    fail(
      at,
      maxExclusive === FIELD_PRIME
        ? "value is not below the field prime"
        : `value is not below ${maxExclusive}`,
    );
  }
  return n;
}

/** A tree root as the interface writes it: hex without prefix, up to 32 bytes. */
export function readRoot(v: unknown, at: At): Uint8Array {
  if (typeof v !== "string" || !HEX_PLAIN.test(v))
    fail(at, `expected a hex root without prefix, got ${describe(v)}`);
  return new Uint8Array(Buffer.from(v.padStart(64, "0"), "hex"));
}

/** A map key that is a leaf id: decimal, no sign, no leading zeros, below 2^height. */
export function readLeafId(key: string, at: At, height: number): bigint {
  if (!ID.test(key)) fail(at, `leaf id ${JSON.stringify(key)} is not a decimal integer`);
  const id = BigInt(key);
  if (id >= 1n << BigInt(height)) fail(at, `leaf id ${key} is beyond the tree of height ${height}`);
  return id;
}

export function readInteger(v: unknown, at: At, min: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(at, `expected an integer, got ${describe(v)}`);
  if (v < min) fail(at, `${v} is below ${min}`);
  return v;
}
