import { sha256 } from "@noble/hashes/sha2.js";
import { pedersen as scurePedersen } from "@scure/starknet";
import type { EscapeSharedState } from "../../onchain/perpetual.js";
import type { EscapeSource } from "../../onchain/source.js";
import { KitFormatError, toHex } from "./bytes.js";
import {
  indexPath,
  indexSuffix,
  KIT2_FORMAT,
  SHARD_MAX_BYTES,
  shardPath,
  type Kit2Manifest,
} from "./format.js";
import { idsInIndex } from "./key-index.js";
import { decodeShard, type ShardOut } from "./shard.js";
import {
  emptySubtrees,
  RootMismatch,
  shardLeafProof,
  type KitProof,
  type LeafProofContext,
  type Pedersen,
} from "./leaf-proof.js";
import { parseManifest } from "./manifest.js";

/**
 * Proofs from a format-2 escape kit alone, in a browser or in Node: no node: modules, no Buffer.
 * Given a way to fetch the kit's files by their relative path, it reads the manifest, the index
 * file of a stark key and the one shard of a leaf, checks each file's SHA-256 against the
 * manifest, builds the on-chain proof the member's store builds (`dacd proof … --format starkex`,
 * the same functions), and recomputes the root with Pedersen: any file altered after the kit was
 * made is refused (KitRefused) before a proof is handed out.
 */

export type FetchBytes = (path: string) => Promise<Uint8Array>;
export type { KitProof, Pedersen } from "./leaf-proof.js";
export type { Kit2Manifest } from "./format.js";

export type RefusalReason =
  | "fetch" // a file could not be fetched
  | "manifest" // manifest.json is not a format-2 manifest
  | "shard" // a shard's SHA-256 or content is not the manifest's
  | "index" // an index file's SHA-256 or content is not the manifest's
  | "root" // the leaf's path does not lead to the manifest's root (or the expected one)
  | "not_found"; // no non-empty leaf of that id (or key) in the kit

export class KitRefused extends Error {
  override readonly name = "KitRefused";
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

export interface OpenKitOptions {
  /** The Pedersen hash to use; @scure/starknet's by default (about a millisecond a hash in JS). */
  readonly pedersen?: Pedersen;
  /** A root the proof must also reach (0x hex or bigint), such as the exchange's on-chain vault root. */
  readonly expectedRoot?: bigint | string;
}

export interface EscapeKit {
  readonly manifest: Kit2Manifest;
  /** The shard that would hold leaf `id` (its number), or undefined when no shard's range has it. */
  shardOf(id: bigint): number | undefined;
  /** The leaf's on-chain proof, checked; refuses an id with no non-empty leaf in the kit. */
  proof(id: bigint | string): Promise<KitProof>;
  /** The ids of the leaves whose stark key (public key) is `key`, from the index, ascending. */
  idsOfKey(key: bigint | string): Promise<bigint[]>;
  /** The proofs of every leaf of a key (one shard fetched per distinct shard). */
  proofsOfKey(key: bigint | string): Promise<KitProof[]>;
}

/**
 * The kit's files over HTTP(S) from `base` (the kit's directory URL, ending in `/`), with the
 * browser's or Node's fetch: a status other than 200 is a failed fetch. Shards must arrive as
 * stored (no Content-Encoding added by the server: docs/escape-kit-format.md).
 */
export function httpFetchBytes(base: string | URL): FetchBytes {
  return async (path) => {
    const res = await fetch(new URL(path, base));
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  };
}

const defaultPedersen: Pedersen = (x, y) => BigInt(scurePedersen(x, y));

async function fetchChecked(
  fetchBytes: FetchBytes,
  path: string,
  sha: string | undefined,
  reason: RefusalReason,
): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await fetchBytes(path);
  } catch (err) {
    throw new KitRefused("fetch", `${path} could not be fetched: ${(err as Error).message}`);
  }
  if (sha !== undefined) {
    const got = toHex(sha256(bytes));
    if (got !== sha)
      throw new KitRefused(reason, `${path}: its SHA-256 is ${got}, the manifest says ${sha}: refused`);
  }
  return bytes;
}

/** A shard is at most SHARD_MAX_BYTES unpacked: more is a forged file, stopped before it fills memory. */
const UNPACKED_LIMIT = 4 * SHARD_MAX_BYTES;

async function gunzip(bytes: Uint8Array, what: string): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"));
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > UNPACKED_LIMIT) {
      await reader.cancel();
      throw new KitFormatError(`${what} unpacks to more than ${UNPACKED_LIMIT} bytes`);
    }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function asBigint(v: bigint | string, what: string): bigint {
  if (typeof v === "bigint") return v;
  const s = v.trim();
  if (!/^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$/.test(s))
    throw new KitRefused("not_found", `${what} ${JSON.stringify(v)} is not a number`);
  return BigInt(s);
}

export async function openKit(fetchBytes: FetchBytes, opts: OpenKitOptions = {}): Promise<EscapeKit> {
  const raw = await fetchChecked(fetchBytes, "manifest.json", undefined, "manifest");
  let manifest: Kit2Manifest;
  try {
    manifest = parseManifest(new TextDecoder().decode(raw));
  } catch (err) {
    throw new KitRefused("manifest", `manifest.json: ${(err as Error).message}`);
  }
  const hash = opts.pedersen ?? defaultPedersen;
  const root = BigInt(manifest.root);
  const expected =
    opts.expectedRoot === undefined ? undefined : asBigint(opts.expectedRoot, "the expected root");
  if (expected !== undefined && expected !== root)
    throw new KitRefused(
      "root",
      `the kit's root ${manifest.root} is not the expected root 0x${expected.toString(16).padStart(64, "0")}`,
    );
  const firsts = manifest.shards.map((s) => BigInt(s.first));
  const lasts = manifest.shards.map((s) => BigInt(s.last));
  const source: EscapeSource = {
    profile: manifest.profile,
    batch_id: manifest.batch_id,
    sequence_number: manifest.sequence_number,
  };
  const shared: EscapeSharedState | undefined = manifest.shared_state
    ? {
        words: manifest.shared_state.words.map((w) => BigInt(w)),
        txHash: manifest.shared_state.tx_hash,
        ...(manifest.shared_state.system_asset_type === undefined
          ? {}
          : { systemAssetType: BigInt(manifest.shared_state.system_asset_type) }),
      }
    : undefined;
  let context: Promise<LeafProofContext> | undefined;
  const shards = new Map<number, Promise<ShardOut>>();

  const shardOf = (id: bigint): number | undefined => {
    let lo = 0;
    let hi = firsts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (id < firsts[mid]!) hi = mid - 1;
      else if (id > lasts[mid]!) lo = mid + 1;
      else return mid;
    }
    return undefined;
  };

  const loadShard = async (n: number): Promise<ShardOut> => {
    const entry = manifest.shards[n]!;
    const path = shardPath(n);
    const stored = await fetchChecked(fetchBytes, path, entry.sha256, "shard");
    let shard: ShardOut;
    try {
      shard = decodeShard(entry.encoding === "gzip" ? await gunzip(stored, path) : stored, path);
    } catch (err) {
      throw new KitRefused("shard", `${path}: ${(err as Error).message}`);
    }
    const leaves = shard.leaves;
    if (
      shard.kind !== manifest.leaf ||
      shard.height !== manifest.tree_height ||
      leaves.length !== entry.leaves ||
      leaves[0]!.id !== firsts[n] ||
      leaves[leaves.length - 1]!.id !== lasts[n]
    )
      throw new KitRefused("shard", `${path} does not hold the leaves the manifest lists for it`);
    return shard;
  };

  const notFound = (id: bigint): KitRefused =>
    new KitRefused(
      "not_found",
      `${manifest.tree} ${id} is not in the kit: no non-empty ${manifest.tree} has that id`,
    );

  const proof = async (idArg: bigint | string): Promise<KitProof> => {
    const id = asBigint(idArg, `${manifest.tree} id`);
    const n = shardOf(id);
    if (n === undefined) throw notFound(id);
    let pending = shards.get(n);
    if (!pending) {
      pending = loadShard(n);
      shards.set(n, pending);
      pending.catch(() => shards.delete(n));
    }
    const shard = await pending;
    const j = shard.leaves.findIndex((l) => l.id === id);
    if (j < 0) throw notFound(id);
    context ??= emptySubtrees(hash, manifest.leaf, manifest.tree_height).then((empties) => ({
      tree: manifest.tree,
      leaf: manifest.leaf,
      height: manifest.tree_height,
      root,
      source,
      ...(shared ? { shared } : {}),
      hash,
      empties,
    }));
    try {
      return await shardLeafProof(await context, shard, j, shardPath(n));
    } catch (err) {
      if (err instanceof RootMismatch) throw new KitRefused("root", `${err.message}: refused`);
      throw err;
    }
  };

  const idsOfKey = async (keyArg: bigint | string): Promise<bigint[]> => {
    const key = asBigint(keyArg, "stark key");
    if (key >> 256n !== 0n) throw new KitRefused("not_found", "a stark key is below 2^256");
    const key64 = key.toString(16).padStart(64, "0");
    const suffix = indexSuffix(key64, manifest.index.suffix_digits);
    const sha = manifest.index.files[suffix];
    if (sha === undefined) return [];
    const path = indexPath(suffix);
    const bytes = await fetchChecked(fetchBytes, path, sha, "index");
    try {
      return idsInIndex(bytes, key64, suffix, path);
    } catch (err) {
      if (err instanceof KitFormatError) throw new KitRefused("index", `${path}: ${err.message}`);
      throw err;
    }
  };

  const proofsOfKey = async (key: bigint | string): Promise<KitProof[]> => {
    const out: KitProof[] = [];
    for (const id of await idsOfKey(key)) out.push(await proof(id));
    return out;
  };

  if (manifest.format !== KIT2_FORMAT) throw new KitRefused("manifest", "not a format-2 kit");
  return { manifest, shardOf, proof, idsOfKey, proofsOfKey };
}
