import { createHash } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzip as gzipCb } from "node:zlib";
import { DacdError } from "../../../errors.js";
import type { PositionLeaf, VaultLeaf } from "../../../model/state-update.js";
import { bytesEqual } from "../../../util/bytes.js";
import { readAhead } from "../../../util/read-ahead.js";
import type { HashEngine } from "../../../verifier/hash/engine.js";
import { decodeLeafRecord } from "../../../verifier/trees/format/leaves.js";
import { emptyRoots } from "../../../verifier/trees/update/compute-roots.js";
import { pedersen } from "../../onchain/path.js";
import { PAGE_FILE_NAMES, pageFile } from "../../page/assets.js";
import { openKitDir, placeKit } from "../kit-dir.js";
import type { PathSource } from "../source.js";
import { bitLength } from "./bytes.js";
import {
  INDEX_PATH,
  KIT2_FORMAT,
  SHARD_LEAVES,
  SHARD_MAX_BYTES,
  SHARD_PATH,
  shardPath,
  type Kit2Manifest,
  type Kit2Shard,
  type LeafKind,
} from "./format.js";
import { KeyIndexWriter } from "./index-writer.js";
import { shardLeafProof, type LeafProofContext } from "./leaf-proof.js";
import { decodeShard, encodeShard, type ShardLeafIn, type Sibling } from "./shard.js";

/**
 * `dacd escape-kit` (format 2, docs/escape-kit-format.md): one walk of the escape tree
 * (path-walk.ts, from the store or the daemon's control socket), its leaves cut into shards of
 * consecutive ids with the siblings their paths need, an index from stark key to ids, the page,
 * and the manifest last, into a temporary directory renamed into place (kit-dir.ts). Each shard is
 * read back as the reader reads it and a leaf of it (every `checkEvery`-th leaf, when given)
 * proven against the batch's root before the kit goes on.
 */

const gzip = promisify(gzipCb);
/** Shards being compressed and written while the walk goes on. */
const SHARDS_IN_FLIGHT = 4;
/** A shard is cut this many bytes before its limit: a leaf's levels and fields fit in it. */
const LEAF_ROOM = 4096;

/** Bytes of a shard compressed first to see whether compressing it pays. */
const GZIP_SAMPLE = 32 << 10;

/**
 * Whether a shard may gain from gzip: its first GZIP_SAMPLE bytes shrink below 95 %. Shards of
 * sparse ids are mostly sibling hashes, which gzip does not shrink: those are not compressed whole.
 */
async function gzipPays(raw: Uint8Array): Promise<boolean> {
  if (raw.length <= GZIP_SAMPLE) return true;
  const sample = raw.subarray(0, GZIP_SAMPLE);
  return (await gzip(sample, { level: 6 })).length < sample.length * 0.95;
}

export interface Kit2Options {
  readonly out: string;
  readonly chainId?: number;
  readonly exchange?: string;
  readonly verifier?: string;
  /** Called after each block of leaves, with the count so far. */
  readonly progress?: (leaves: number) => void;
  /** Prove every n-th leaf from the written shard too (1: every leaf, tests); a shard's first always. */
  readonly checkEvery?: number;
  /** Leaves a shard (tests: small shards). */
  readonly shardLeaves?: number;
}

interface OpenShard {
  readonly leaves: ShardLeafIn[];
  /** The first leaf's siblings on every level. */
  readonly firstPath: Sibling[];
  bytes: number;
}

export async function buildKit2(
  engine: HashEngine,
  source: PathSource,
  opts: Kit2Options,
): Promise<Kit2Manifest> {
  const { head } = source;
  const spec = head.tree;
  const h = spec.height;
  const kind: LeafKind | undefined =
    spec.leaf === "vault" ? "vault" : spec.leaf === "position" ? "position" : undefined;
  if (!kind) throw new DacdError("BAD_INPUT", `the ${spec.name} tree has no escape`);
  if (!/^0[0-9a-f]{63}$/.test(head.root))
    throw new DacdError("STORE", `the ${spec.name} root ${head.root} is not a field element`);
  const tmp = await openKitDir(opts.out);
  let keyIndex: KeyIndexWriter | undefined;
  try {
    await mkdir(join(tmp, "shards"));
    await mkdir(join(tmp, "keys"));
    const empty = await emptyRoots(engine, spec.leaf, h);
    const rootBig = BigInt("0x" + head.root);
    const proofContext: LeafProofContext = {
      tree: spec.name,
      leaf: kind,
      height: h,
      root: rootBig,
      source: { profile: head.profile, batch_id: head.batch_id, sequence_number: head.sequence_number },
      hash: (x: bigint, y: bigint) => pedersen(engine, x, y),
      empties: empty.map((e) => BigInt("0x" + Buffer.from(e).toString("hex"))),
    };
    const shardLeaves = opts.shardLeaves ?? SHARD_LEAVES;
    const checkEvery = opts.checkEvery ?? 0;
    const shards: Kit2Shard[] = [];
    const inFlight = new Set<Promise<void>>();
    const keys = await KeyIndexWriter.open(join(tmp, "keys-spill"));
    keyIndex = keys;
    let done = 0;
    // The current leaf's siblings on every level, null for an empty subtree.
    const path: Sibling[] = new Array<Sibling>(h).fill(null);
    let open: OpenShard | undefined;

    const flush = async (shard: OpenShard, n: number, leavesBefore: number): Promise<void> => {
      const first = shard.leaves[0]!;
      const last = shard.leaves[shard.leaves.length - 1]!;
      const common = bitLength(first.id ^ last.id);
      const leaves = [{ ...first, siblings: shard.firstPath.slice(0, common) }, ...shard.leaves.slice(1)];
      const raw = encodeShard({ kind, height: h, common, top: shard.firstPath.slice(common), leaves });
      const decoded = decodeShard(raw, shardPath(n));
      for (let j = 0; j < leaves.length; j++)
        if (j === 0 || (checkEvery > 0 && (leavesBefore + j) % checkEvery === 0))
          await shardLeafProof(proofContext, decoded, j, shardPath(n)).catch((err: Error) => {
            throw new DacdError("STORE", `${err.message} (the kit is not written: please report it)`);
          });
      const packed = (await gzipPays(raw)) ? await gzip(raw, { level: 6 }) : undefined;
      const gz = packed !== undefined && packed.length < raw.length * 0.95;
      const stored = gz ? packed : raw;
      await writeFile(join(tmp, shardPath(n)), stored);
      shards[n] = {
        first: first.id.toString(),
        last: last.id.toString(),
        leaves: leaves.length,
        encoding: gz ? "gzip" : "identity",
        sha256: createHash("sha256").update(stored).digest("hex"),
      };
    };

    const close = async (): Promise<void> => {
      if (!open) return;
      const shard = open;
      open = undefined;
      const n = shards.length;
      shards.push(undefined as unknown as Kit2Shard);
      const task = flush(shard, n, done - shard.leaves.length);
      inFlight.add(task);
      void task.then(
        () => inFlight.delete(task),
        () => undefined,
      );
      if (inFlight.size >= SHARDS_IN_FLIGHT) await Promise.race(inFlight);
    };

    // The walk reads its next block (LevelDB's threads) while this one is cut into shards.
    for await (const block of readAhead(source.blocks)) {
      for (const leaf of block) {
        const { edge, changed, pairs } = leaf;
        if (pairs.length !== (changed - edge) * 64 || edge > changed || changed > h)
          throw new DacdError(
            "STORE",
            `leaf ${leaf.index}: a path of levels ${edge} to ${changed} is malformed`,
          );
        let hashes = 0;
        for (let k = 0; k < changed; k++) {
          if (k < edge) path[k] = null;
          else {
            const s = pairs.subarray((k - edge) * 64 + 32, (k - edge) * 64 + 64);
            path[k] = bytesEqual(s, empty[k]!) ? null : s;
            if (path[k]) hashes++;
          }
        }
        const record = decodeLeafRecord(spec.leaf, leaf.record);
        const vault = kind === "vault" ? (record as VaultLeaf) : undefined;
        const position = kind === "position" ? (record as PositionLeaf) : undefined;
        const size = (vault ? 100 : 40 + position!.assets.length * 52) + 2 + (changed >> 3) + 32 * hashes;
        if (open && (open.leaves.length >= shardLeaves || open.bytes + size > SHARD_MAX_BYTES - LEAF_ROOM))
          await close();
        if (!open) open = { leaves: [], firstPath: path.slice(), bytes: 64 + 32 * h };
        const siblings = open.leaves.length === 0 ? [] : path.slice(0, changed);
        open.leaves.push({ id: leaf.index, ...(vault ? { vault } : { position: position! }), siblings });
        open.bytes += size;
        keys.add(vault ? vault.key : position!.publicKey, leaf.index);
        done++;
      }
      opts.progress?.(done);
    }
    await close();
    await Promise.all(inFlight);
    const indexFiles = await keys.write(tmp);
    for (const name of PAGE_FILE_NAMES) await writeFile(join(tmp, name), pageFile(name).body);
    const shared = head.shared_state;
    const manifest: Kit2Manifest = {
      format: KIT2_FORMAT,
      profile: head.profile,
      tree: spec.name,
      leaf: kind,
      batch_id: head.batch_id,
      prev_batch_id: head.prev_batch_id,
      sequence_number: head.sequence_number,
      claim_hash: head.claim_hash,
      roots: head.roots,
      heights: head.heights,
      root: "0x" + head.root,
      tree_height: h,
      leaves: done,
      shard_size: shardLeaves,
      shard_max_bytes: SHARD_MAX_BYTES,
      shard_path: SHARD_PATH,
      shards,
      index: { path: INDEX_PATH, entries: keys.count, ...indexFiles },
      shared_state: shared
        ? {
            words: shared.words,
            tx_hash: shared.tx_hash,
            ...(shared.system_asset_type === undefined
              ? {}
              : { system_asset_type: shared.system_asset_type }),
          }
        : null,
      chain_id: opts.chainId ?? null,
      exchange: opts.exchange ?? null,
      verifier: opts.verifier ?? null,
      frozen_batch_id: head.frozen_batch_id ?? null,
      page: "index.html",
      created_at: new Date().toISOString(),
    };
    await writeFile(join(tmp, "manifest.json"), manifestText(manifest));
    await placeKit(tmp, opts.out);
    return manifest;
  } catch (err) {
    await keyIndex?.discard();
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The manifest as JSON laid out for people, except its long lists: a shard a line, the index
 * files on one line (a page fetches the manifest before anything else; a million vaults make a
 * thousand shards).
 */
export function manifestText(m: Kit2Manifest): string {
  const SHARDS = '"@shards@"';
  const FILES = '"@files@"';
  const text = JSON.stringify({ ...m, shards: "@shards@", index: { ...m.index, files: "@files@" } }, null, 2);
  const shards =
    m.shards.length === 0 ? "[]" : `[\n${m.shards.map((s) => "    " + JSON.stringify(s)).join(",\n")}\n  ]`;
  return text.replace(SHARDS, shards).replace(FILES, JSON.stringify(m.index.files)) + "\n";
}
