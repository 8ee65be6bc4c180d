import { DacdError } from "../errors.js";
import { inBatchRange, MAX_BATCH_NUMBER } from "../model/batch-range.js";
import { FIELD_PRIME } from "../model/field.js";
import { MAX_DECIMAL_DIGITS, VAULT_BALANCE } from "../model/leaf-rules.js";

/**
 * The reference member's state archive (what its `dump_state` writes and `load_state` reads): a
 * bzip2-compressed tar holding, flat, `info.json`, `vaults.csv` and `orders_<k>.csv` for k in
 * [n, 2n), n being the number of order subtree roots. Rows have no header, decimal fields, and
 * end in CRLF; empty leaves are left out. The reference member's own `dump_state` writes only
 * vaults.csv (its info and order steps fail): such an archive is read with the batch stated
 * outside it (StatedBatch). See docs/reference-member.md.
 */

export const INFO_FILE = "info.json";
export const VAULTS_FILE = "vaults.csv";
export const ordersFile = (k: number): string => `orders_${k}.csv`;
/** Order subtrees an export writes unless told otherwise (what the reference member writes). */
export const DEFAULT_ORDER_SUBTREES = 4;
/** More order subtrees than this is not an archive anyone writes: refused, not allocated. */
export const MAX_ORDER_SUBTREES = 1 << 16;

export interface ReferenceInfo {
  readonly batch_id: number;
  readonly batch_info: {
    readonly merkle_roots: { vault: string; order: string; rollup_vault?: string };
    readonly sequence_number: number;
  };
  readonly order_subtree_roots: string[];
}

/** What a file name in the archive is: info, vaults, the orders of subtree k, or none of these. */
export function classifyName(
  name: string,
): { kind: "info" } | { kind: "vaults" } | { kind: "orders"; k: number } | undefined {
  if (name === INFO_FILE) return { kind: "info" };
  if (name === VAULTS_FILE) return { kind: "vaults" };
  const m = /^orders_([1-9][0-9]{0,9})\.csv$/.exec(name);
  if (!m) return undefined;
  const k = Number(m[1]);
  return k < 2 * MAX_ORDER_SUBTREES ? { kind: "orders", k } : undefined;
}

/** The number of order subtrees n that subtree file k belongs to (k in [n, 2n), n a power of two). */
export function subtreeCountOf(k: number): number {
  return 2 ** Math.floor(Math.log2(k));
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** Parses and checks info.json; every problem names the field. */
export function parseInfo(text: string, orderHeight: number): ReferenceInfo {
  const bad = (field: string, what: string): never => {
    throw new DacdError("BAD_INPUT", `${INFO_FILE}, field ${field}: ${what}`);
  };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (err) {
    return bad("(whole file)", `not JSON (${(err as Error).message})`);
  }
  const obj = (v: unknown, field: string): Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : bad(field, "missing or not an object");
  const count = (v: unknown, field: string): number =>
    inBatchRange(v) ? v : bad(field, `${JSON.stringify(v)} is not an integer in 0 … ${MAX_BATCH_NUMBER}`);
  const hex = (v: unknown, field: string): string =>
    typeof v === "string" && HEX64.test(v)
      ? v.toLowerCase()
      : bad(field, `${JSON.stringify(v)} is not 64 hex digits`);
  const root = obj(o, "(whole file)");
  const info = obj(root.batch_info, "batch_info");
  const roots = obj(info.merkle_roots, "batch_info.merkle_roots");
  for (const k of Object.keys(roots))
    if (k !== "vault" && k !== "order" && k !== "rollup_vault")
      bad(`batch_info.merkle_roots.${k}`, "not a tree of a spot member");
  const subtrees = root.order_subtree_roots;
  if (!Array.isArray(subtrees)) return bad("order_subtree_roots", "missing or not a list");
  const n = subtrees.length;
  if (n < 1 || n > MAX_ORDER_SUBTREES || (n & (n - 1)) !== 0 || Math.log2(n) > orderHeight)
    bad(
      "order_subtree_roots",
      `${n} entries; the count must be a power of two, at most 2^${Math.min(16, orderHeight)}`,
    );
  return {
    batch_id: count(root.batch_id, "batch_id"),
    batch_info: {
      merkle_roots: {
        vault: hex(roots.vault, "batch_info.merkle_roots.vault"),
        order: hex(roots.order, "batch_info.merkle_roots.order"),
        ...(roots.rollup_vault === undefined
          ? {}
          : { rollup_vault: hex(roots.rollup_vault, "batch_info.merkle_roots.rollup_vault") }),
      },
      sequence_number: count(info.sequence_number, "batch_info.sequence_number"),
    },
    order_subtree_roots: subtrees.map((r, i) => hex(r, `order_subtree_roots[${i}]`)),
  };
}

/**
 * A batch's state as stated outside the archive (the reference member's own archive has no
 * info.json): its id, its roots and its sequence number, and where they were read (named in a
 * refusal).
 */
export interface StatedBatch {
  readonly batch_id: number;
  readonly batch_info: ReferenceInfo["batch_info"];
  /** Where the values come from, for messages: `--batch-info FILE`, `the gateway`. */
  readonly source: string;
}

const ROOT = /^(0x)?[0-9a-fA-F]{1,64}$/;

/**
 * Parses a `--batch-info` file: the reference member's batch info for the batch (what it stores per
 * batch and its info.json holds under `batch_info`):
 * `{"merkle_roots": {"vault": R, "order": R, "rollup_vault": R}, "sequence_number": N}`, the roots
 * hex as the gateway writes them (rollup_vault optional); a `batch_id`, if present, must be `batchId`.
 */
export function parseBatchInfo(text: string, file: string, batchId: number): StatedBatch {
  const bad = (field: string, what: string): never => {
    throw new DacdError("BAD_INPUT", `${file}, field ${field}: ${what}`);
  };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (err) {
    return bad("(whole file)", `not JSON (${(err as Error).message})`);
  }
  const obj = (v: unknown, field: string): Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : bad(field, "missing or not an object");
  const root = (v: unknown, field: string): string =>
    typeof v === "string" && ROOT.test(v)
      ? v.replace(/^0x/, "").toLowerCase().padStart(64, "0")
      : bad(field, `${JSON.stringify(v)} is not a root (up to 64 hex digits)`);
  const top = obj(o, "(whole file)");
  for (const k of Object.keys(top))
    if (k !== "batch_id" && k !== "merkle_roots" && k !== "sequence_number") bad(k, "unexpected field");
  if (top.batch_id !== undefined && top.batch_id !== batchId)
    bad("batch_id", `${JSON.stringify(top.batch_id)}, but --batch is ${batchId}`);
  const roots = obj(top.merkle_roots, "merkle_roots");
  for (const k of Object.keys(roots))
    if (k !== "vault" && k !== "order" && k !== "rollup_vault")
      bad(`merkle_roots.${k}`, "not a tree of a spot member");
  const seq = top.sequence_number;
  if (!inBatchRange(seq))
    bad("sequence_number", `${JSON.stringify(seq)} is not an integer in 0 … ${MAX_BATCH_NUMBER}`);
  return {
    batch_id: batchId,
    batch_info: {
      merkle_roots: {
        vault: root(roots.vault, "merkle_roots.vault"),
        order: root(roots.order, "merkle_roots.order"),
        ...(roots.rollup_vault === undefined
          ? {}
          : { rollup_vault: root(roots.rollup_vault, "merkle_roots.rollup_vault") }),
      },
      sequence_number: seq as number,
    },
    source: file,
  };
}

const DECIMAL = new RegExp(`^[0-9]{1,${MAX_DECIMAL_DIGITS}}$`);

/** A row's fields, each range-checked; an error names the file, the line and the field. */
export class RowParser {
  private readonly idLimit: bigint;
  constructor(
    readonly file: string,
    readonly idName: string,
    height: number,
  ) {
    this.idLimit = 1n << BigInt(height);
  }

  fail(line: number, field: string | undefined, what: string): never {
    throw new DacdError(
      "BAD_INPUT",
      `${this.file} line ${line}${field === undefined ? "" : `, field ${field}`}: ${what}`,
    );
  }

  fields(line: number, row: string, names: readonly string[]): string[] {
    const f = row.split(",");
    if (f.length !== names.length)
      this.fail(line, undefined, `${f.length} fields, expected ${names.length} (${names.join(",")})`);
    for (let i = 0; i < f.length; i++)
      if (f[i]!.length > MAX_FIELD_BYTES) this.fail(line, names[i], `longer than ${MAX_FIELD_BYTES} bytes`);
    return f;
  }

  /** A decimal field below `limit` (`limitText` says which bound in a message). */
  decimal(line: number, name: string, s: string, limit: bigint, limitText: string): bigint {
    if (!DECIMAL.test(s)) this.fail(line, name, `${JSON.stringify(s.slice(0, 90))} is not a decimal number`);
    const v = BigInt(s);
    if (v >= limit) this.fail(line, name, `${s} is out of range (must be below ${limitText})`);
    return v;
  }

  id(line: number, s: string): bigint {
    return this.decimal(line, this.idName, s, this.idLimit, `2^height = ${this.idLimit}`);
  }

  fieldElement(line: number, name: string, s: string): bigint {
    return this.decimal(line, name, s, FIELD_PRIME, "the field prime p");
  }

  amount(line: number, name: string, s: string): bigint {
    return this.decimal(line, name, s, VAULT_BALANCE.max, "2^63");
  }
}

export const VAULT_FIELDS = ["vault_id", "stark_key", "token", "balance"] as const;
export const ORDER_FIELDS = ["order_id", "fulfilled_amount"] as const;

/**
 * The longest row and field a reference archive may hold, in bytes. The longest legitimate field
 * is a number below the field prime p (a stark key, a token, an id under a tree of height 251): 76
 * decimal digits; the parser takes at most 80 (leading zeros). The longest legitimate row is a
 * vault's (three such numbers, a balance below 2^63 of 19 digits, three commas): 250 bytes. The caps
 * leave room beyond what the parser accepts (4 × 80 + 3 = 323 bytes) yet keep what is held of an
 * unfinished row at a few kilobytes whatever the archive (a row that never ends is refused within
 * its first kilobyte, not when it ends).
 */
export const MAX_ROW_BYTES = 1024;
export const MAX_FIELD_BYTES = 128;

/**
 * Splits a stream of bytes into rows (CRLF, or LF alone), counting lines. A last row without a
 * line end is a row too; an empty row is refused by the caller (it has the wrong field count). A
 * row or a field over its cap is refused as its bytes arrive: the unfinished row held between
 * chunks is never longer than MAX_ROW_BYTES.
 */
export class RowSplitter {
  private rest = "";
  line = 0;
  bytes = 0;

  constructor(
    private readonly parser: RowParser,
    private readonly names: readonly string[],
  ) {}

  /** The complete rows of this chunk; the first is on line `line + 1`. */
  push(chunk: Uint8Array): string[] {
    this.bytes += chunk.length;
    const text = this.rest + Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
    const rows = text.split("\n");
    this.rest = rows.pop()!;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (r.endsWith("\r")) rows[i] = r.slice(0, -1);
      if (rows[i]!.length > MAX_ROW_BYTES) this.tooLong(this.line + i + 1);
    }
    this.checkUnfinished(this.line + rows.length + 1);
    return rows;
  }

  /** The last row when the data did not end with a line end. */
  end(): string[] {
    const last = this.rest;
    this.rest = "";
    return last === "" ? [] : [last.endsWith("\r") ? last.slice(0, -1) : last];
  }

  /** The row still arriving: its length so far, and each of its fields so far (a CR, if come, not counted). */
  private checkUnfinished(line: number): void {
    const rest = this.rest.endsWith("\r") ? this.rest.slice(0, -1) : this.rest;
    if (rest.length > MAX_ROW_BYTES) this.tooLong(line);
    if (rest.length <= MAX_FIELD_BYTES) return;
    const fields = rest.split(",");
    for (let i = 0; i < fields.length; i++)
      if (fields[i]!.length > MAX_FIELD_BYTES)
        this.parser.fail(line, this.names[i] ?? `${i + 1}`, `longer than ${MAX_FIELD_BYTES} bytes`);
  }

  private tooLong(line: number): never {
    return this.parser.fail(line, undefined, `longer than ${MAX_ROW_BYTES} bytes, the most a row may hold`);
  }
}
