import { ByteReader, ByteWriter, bytesToBig, KitFormatError, toHex } from "./bytes.js";
import { INDEX_MAGIC } from "./format.js";

/**
 * An index file of a format-2 kit: the (stark key, leaf id) pairs of the keys that begin with the
 * file's hex suffix (their last hex digits), ascending by key then id. Layout: "DKI2", the count, then each pair as the
 * key's 32 bytes and the id's 8, big-endian.
 */

export const INDEX_ENTRY_BYTES = 40;

/** `entries`: packed pairs as the file holds them, already in order. */
export function encodeIndex(entries: Uint8Array): Uint8Array {
  const w = new ByteWriter();
  w.bytes(Uint8Array.from(INDEX_MAGIC));
  w.uint(entries.length / INDEX_ENTRY_BYTES);
  w.bytes(entries);
  return w.done();
}

/** The ids of `key64` (64 hex digits, lower case) in an index file of keys ending in `suffix`. */
export function idsInIndex(bytes: Uint8Array, key64: string, suffix: string, what: string): bigint[] {
  const r = new ByteReader(bytes, what);
  const magic = r.bytes(4);
  if (INDEX_MAGIC.some((b, i) => magic[i] !== b)) throw new KitFormatError(`${what} is not a kit index`);
  const count = r.uint();
  const body = r.bytes(count * INDEX_ENTRY_BYTES);
  if (!r.ended) throw new KitFormatError(`${what} has bytes after its last entry`);
  const ids: bigint[] = [];
  let previous = "";
  for (let i = 0; i < count; i++) {
    const at = i * INDEX_ENTRY_BYTES;
    const key = toHex(body.subarray(at, at + 32));
    const entry = key + toHex(body.subarray(at + 32, at + 40));
    if (!key.endsWith(suffix)) throw new KitFormatError(`${what}: key 0x${key} does not end in ${suffix}`);
    if (entry <= previous) throw new KitFormatError(`${what}: entries out of order at ${i}`);
    previous = entry;
    if (key === key64) ids.push(bytesToBig(body.subarray(at + 32, at + 40)));
  }
  return ids;
}
