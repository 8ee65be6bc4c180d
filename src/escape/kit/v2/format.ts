/**
 * Escape kit format 2 (docs/escape-kit-format.md): a manifest, the non-empty leaves in shards of
 * consecutive ids, each with the sibling hashes its leaves' paths need, and an index from stark
 * key to ids. What both the writer (build.ts) and the browser-safe reader (reader.ts) agree on.
 */

export const KIT2_FORMAT = "dacd-escape-kit/2";
/** A shard holds at most this many leaves… */
export const SHARD_LEAVES = 1000;
/** …and is cut earlier at this many bytes (before compression): one fetch a user can afford. */
export const SHARD_MAX_BYTES = 224 * 1024;
/** A key index file holds about this many entries at most; the suffix grows until it does. */
export const INDEX_FILE_ENTRIES = 8192;
/** The index splits by at most this many hex digits of the key (4096 files). */
export const INDEX_MAX_DIGITS = 3;

export const SHARD_PATH = "shards/{n}.bin";
export const INDEX_PATH = "keys/{suffix}.bin";

export const shardPath = (n: number): string => `shards/${n}.bin`;
/** The index file of keys ending in `suffix` (hex digits of the key); `all` when unsplit. */
export const indexPath = (suffix: string): string => `keys/${suffix === "" ? "all" : suffix}.bin`;

/** Shard files start with these bytes (after gzip, when the shard is compressed). */
export const SHARD_MAGIC = [0x44, 0x4b, 0x53, 0x32]; // "DKS2"
export const INDEX_MAGIC = [0x44, 0x4b, 0x49, 0x32]; // "DKI2"

export type LeafKind = "vault" | "position";
export type ShardEncoding = "gzip" | "identity";

export interface Kit2Shard {
  /** The first and last leaf id in the shard, decimal. */
  readonly first: string;
  readonly last: string;
  readonly leaves: number;
  /** How the file is stored: gzip (RFC 1952) or as is. Never a Content-Encoding: the bytes as fetched. */
  readonly encoding: ShardEncoding;
  /** SHA-256 of the file's bytes as stored (and fetched), 64 hex digits. */
  readonly sha256: string;
}

export interface Kit2Index {
  readonly path: typeof INDEX_PATH;
  /** The key's last hex digits that pick the file (0: one file, keys/all.bin). */
  readonly suffix_digits: number;
  readonly entries: number;
  /** SHA-256 of each index file, by suffix ("" when unsplit); a suffix no key has has no file. */
  readonly files: Record<string, string>;
}

/** The frozen batch's shared state (perpetual), as the store's proof takes it. */
export interface Kit2SharedState {
  readonly words: readonly string[];
  readonly tx_hash: string;
  readonly system_asset_type?: string;
}

export interface Kit2Manifest {
  readonly format: typeof KIT2_FORMAT;
  readonly profile: string;
  /** The escape tree: vault (spot) or position (perpetual). */
  readonly tree: string;
  readonly leaf: LeafKind;
  readonly batch_id: number;
  readonly prev_batch_id: number;
  readonly sequence_number: number;
  readonly claim_hash: string;
  readonly roots: Record<string, string>;
  readonly heights: Record<string, number>;
  /** The escape tree's root, 0x and 64 hex digits. */
  readonly root: string;
  readonly tree_height: number;
  readonly leaves: number;
  readonly shard_size: number;
  readonly shard_max_bytes: number;
  readonly shard_path: typeof SHARD_PATH;
  /** In id order: shard n is shards[n]. */
  readonly shards: readonly Kit2Shard[];
  readonly index: Kit2Index;
  readonly shared_state: Kit2SharedState | null;
  /** Filled by whoever publishes the kit for an exchange (dacd escape-kit --chain-id …). */
  readonly chain_id: number | null;
  readonly exchange: string | null;
  readonly verifier: string | null;
  readonly frozen_batch_id: number | null;
  readonly page: string;
  readonly created_at: string;
}

/**
 * The index file holding `key64` (64 hex digits, lower case): its last `digits` hex digits. The
 * low digits, because keys need not be spread over their whole range (a key below 2^251 never
 * starts with 8 to f), while their low bits are as good as random.
 */
export function indexSuffix(key64: string, digits: number): string {
  return key64.slice(64 - digits);
}
