import {
  INDEX_MAX_DIGITS,
  INDEX_PATH,
  KIT2_FORMAT,
  SHARD_PATH,
  type Kit2Manifest,
  type Kit2Shard,
} from "./format.js";

/**
 * A format-2 manifest read strictly: every field the reader relies on is checked for its type and
 * form, and the shards for ascending, non-overlapping ranges, so that nothing downstream meets a
 * manifest it does not understand. Throws an Error naming the field.
 */

const HEX64 = /^0x[0-9a-f]{64}$/;
const SHA = /^[0-9a-f]{64}$/;
const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

type Json = Record<string, unknown>;

function field<T>(o: Json, name: string, ok: (v: unknown) => boolean, what: string): T {
  const v = o[name];
  if (!ok(v)) throw new Error(`field ${name}: ${what}`);
  return v as T;
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (lo: number, hi: number) => (v: unknown) =>
  typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi;
const isString = (re: RegExp) => (v: unknown) => typeof v === "string" && re.test(v);
const orNull = (ok: (v: unknown) => boolean) => (v: unknown) => v === null || v === undefined || ok(v);

export function parseManifest(text: string): Kit2Manifest {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    throw new Error("not JSON");
  }
  if (!isObject(m)) throw new Error("not a JSON object");
  if (m.format !== KIT2_FORMAT)
    throw new Error(`field format: ${JSON.stringify(m.format)}, not ${KIT2_FORMAT}`);
  field(m, "profile", (v) => typeof v === "string", "a string");
  field(m, "tree", (v) => typeof v === "string", "a string");
  const leaf = field<string>(m, "leaf", (v) => v === "vault" || v === "position", "vault or position");
  field(m, "batch_id", isInt(0, Number.MAX_SAFE_INTEGER), "a batch id");
  field(m, "sequence_number", isInt(0, Number.MAX_SAFE_INTEGER), "a sequence number");
  field(m, "root", isString(HEX64), "0x and 64 lower-case hex digits");
  const height = field<number>(m, "tree_height", isInt(1, 64), "a height of 1 to 64");
  const leaves = field<number>(m, "leaves", isInt(0, Number.MAX_SAFE_INTEGER), "a count");
  field(m, "shard_path", (v) => v === SHARD_PATH, SHARD_PATH);
  const shards = field<unknown[]>(m, "shards", Array.isArray, "an array");
  let total = 0;
  let previous = -1n;
  shards.forEach((s, n) => {
    if (!isObject(s)) throw new Error(`field shards[${n}]: not an object`);
    const first = BigInt(field<string>(s, "first", isString(DECIMAL), `shards[${n}].first: a decimal id`));
    const last = BigInt(field<string>(s, "last", isString(DECIMAL), `shards[${n}].last: a decimal id`));
    const count = field<number>(s, "leaves", isInt(1, 1 << 20), `shards[${n}].leaves: a count`);
    field<Kit2Shard["encoding"]>(
      s,
      "encoding",
      (v) => v === "gzip" || v === "identity",
      `shards[${n}].encoding: gzip or identity`,
    );
    field(s, "sha256", isString(SHA), `shards[${n}].sha256: 64 lower-case hex digits`);
    if (
      first <= previous ||
      last < first ||
      last >> BigInt(height) !== 0n ||
      BigInt(count) > last - first + 1n
    )
      throw new Error(`field shards[${n}]: ids ${first} to ${last} out of order or outside the tree`);
    previous = last;
    total += count;
  });
  if (total !== leaves) throw new Error(`field leaves: ${leaves}, the shards hold ${total}`);
  const index = field<Json>(m, "index", isObject, "an object");
  if (index.path !== INDEX_PATH) throw new Error(`field index.path: ${INDEX_PATH}`);
  const digits = field<number>(
    index,
    "suffix_digits",
    isInt(0, INDEX_MAX_DIGITS),
    `index.suffix_digits: 0 to ${INDEX_MAX_DIGITS}`,
  );
  field(index, "entries", isInt(0, Number.MAX_SAFE_INTEGER), "index.entries: a count");
  const files = field<Json>(index, "files", isObject, "index.files: an object");
  for (const [suffix, sha] of Object.entries(files))
    if (!new RegExp(`^[0-9a-f]{${digits}}$`).test(suffix) || typeof sha !== "string" || !SHA.test(sha))
      throw new Error(`field index.files[${JSON.stringify(suffix)}]: a ${digits}-digit suffix and a SHA-256`);
  const shared = m.shared_state;
  if (shared !== null && shared !== undefined) {
    if (leaf !== "position" || !isObject(shared))
      throw new Error("field shared_state: only a perpetual kit's, an object");
    field(
      shared,
      "words",
      (v) => Array.isArray(v) && v.every(isString(HEX64)),
      "shared_state.words: 0x words",
    );
    field(shared, "tx_hash", (v) => typeof v === "string", "shared_state.tx_hash: a string");
    field(
      shared,
      "system_asset_type",
      orNull(isString(/^0x[0-9a-f]{1,64}$/)),
      "shared_state.system_asset_type: 0x hex",
    );
  }
  field(m, "chain_id", orNull(isInt(1, Number.MAX_SAFE_INTEGER)), "a chain id or null");
  field(m, "exchange", orNull(isString(ADDRESS)), "an address or null");
  field(m, "verifier", orNull(isString(ADDRESS)), "an address or null");
  field(m, "frozen_batch_id", orNull(isInt(0, Number.MAX_SAFE_INTEGER)), "a batch id or null");
  return m as unknown as Kit2Manifest;
}
