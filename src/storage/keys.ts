/**
 * LevelDB key layout: one prefix byte per kind of record, then a binary suffix. Keys are raw bytes
 * (the store opens LevelDB with the `view` key encoding): under the default utf8 encoding, binary
 * hashes would be mangled and could collide.
 */
export const Prefix = {
  node: 0x01, // ‖ 32-byte hash → node record
  leaf: 0x02, // ‖ 32-byte leaf hash → leaf record
  batch: 0x03, // ‖ u64 batch id → batch record (JSON)
  meta: 0x04, // ‖ utf8 name → JSON
} as const;

export function prefixed(prefix: number, suffix: Uint8Array): Uint8Array {
  const key = new Uint8Array(1 + suffix.length);
  key[0] = prefix;
  key.set(suffix, 1);
  return key;
}

export function batchKey(batchId: number): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = Prefix.batch;
  new DataView(key.buffer).setBigUint64(1, BigInt(batchId));
  return key;
}

export function batchIdFromKey(key: Uint8Array): number {
  return Number(new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(1));
}

export function metaKey(name: string): Uint8Array {
  return prefixed(Prefix.meta, new TextEncoder().encode(name));
}
