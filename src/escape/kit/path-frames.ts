import { DacdError } from "../../errors.js";
import { bigintToBytes32, bytesToBigint } from "../../util/bytes.js";
import type { LeafPath } from "./path-walk.js";

/**
 * Leaf paths as bytes, for the daemon's control socket: the daemon walks, the command builds the
 * proofs. Per leaf: changed (2 bytes), edge (2), the id (32), the leaf hash (32), the record's
 * length (4) and bytes, then the pairs ((changed − edge) · 64 bytes). A block is cut into pieces
 * of at most about `limit` bytes, each decoded on its own.
 */

export function encodePaths(block: readonly LeafPath[], limit = 1 << 20): Buffer[] {
  const out: Buffer[] = [];
  let parts: Uint8Array[] = [];
  let size = 0;
  for (const leaf of block) {
    const head = Buffer.alloc(72);
    head.writeUInt16BE(leaf.changed, 0);
    head.writeUInt16BE(leaf.edge, 2);
    head.set(bigintToBytes32(leaf.index), 4);
    head.set(leaf.leafHash, 36);
    head.writeUInt32BE(leaf.record.length, 68);
    parts.push(head, leaf.record, leaf.pairs);
    size += head.length + leaf.record.length + leaf.pairs.length;
    if (size >= limit) {
      out.push(Buffer.concat(parts));
      parts = [];
      size = 0;
    }
  }
  if (parts.length > 0) out.push(Buffer.concat(parts));
  return out;
}

export function decodePaths(buf: Buffer): LeafPath[] {
  const out: LeafPath[] = [];
  let at = 0;
  const need = (n: number): void => {
    if (at + n > buf.length) throw new DacdError("STORE", "the daemon sent a leaf path cut short");
  };
  while (at < buf.length) {
    need(72);
    const changed = buf.readUInt16BE(at);
    const edge = buf.readUInt16BE(at + 2);
    const index = bytesToBigint(buf, at + 4);
    const leafHash = buf.subarray(at + 36, at + 68);
    const recordLength = buf.readUInt32BE(at + 68);
    at += 72;
    if (edge > changed) throw new DacdError("STORE", `the daemon sent leaf ${index} with a malformed path`);
    need(recordLength + (changed - edge) * 64);
    const record = buf.subarray(at, at + recordLength);
    at += recordLength;
    const pairs = buf.subarray(at, at + (changed - edge) * 64);
    at += pairs.length;
    out.push({ index, leafHash, record, changed, edge, pairs });
  }
  return out;
}
