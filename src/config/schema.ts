/**
 * The configuration's keys, their types and defaults (SCHEMA), and the resulting `Config` type:
 * the one list of keys. File keys are snake_case; each is the `Config` field of the same name in
 * camelCase (configField: `polling_interval_s` → `pollingIntervalS`, `heights.order` →
 * `heights.order`). docs/configuration.md describes every key, and a unit test
 * (config-keys.test.ts) holds it and the examples in config/ to this schema.
 */

import { HASH_ENGINES, type EngineName } from "../model/engines.js";
import { PROFILE_NAMES, TREE_NAMES, type Heights, type ProfileName } from "../model/profile.js";

/**
 * Default cap on one gateway answer. The largest plausible batch: StarkEx batches are bounded by
 * the prover's capacity, a few hundred thousand changed leaves; the wire form of a spot vault is
 * about 200 bytes of JSON (key, token, balance as decimal text), an order about 100, a position
 * with a few assets about 400. 500,000 such leaves at 200 bytes each are 100 MB; 256 MiB leaves
 * room for more than twice that.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/**
 * Default for `max_stall_s`. A batch normally goes from the feeder's announcement to its
 * signature in seconds (a large one, fetched and verified, in well under a minute), and a poll
 * answers in less than one; two minutes without either is not a slow batch but a stuck one, and
 * is still short next to the HTTP deadline (300 s) that a trickled answer would otherwise sit out.
 */
export const DEFAULT_MAX_STALL_S = 120;

/** active: post every signature; shadow: verify, store and sign, never post (docs/operations.md). */
export const MODES = ["active", "shadow"] as const;
export type Mode = (typeof MODES)[number];

/** file: the key is read from private_key_path; pkcs11: it stays in a PKCS#11 token (docs/signer.md). */
export const SIGNERS = ["file", "pkcs11"] as const;
export type SignerKind = (typeof SIGNERS)[number];

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export interface Schedule {
  check?: string;
  backup?: string;
  prune?: string;
}

export interface Config {
  /** Absolute path of the file the configuration was read from. */
  configPath: string;
  profile: ProfileName;
  availabilityGatewayUrl: string;
  feederGatewayUrl?: string;
  /** Where the member key is: a file (privateKeyPath) or a PKCS#11 token (pkcs11*). */
  signer: SignerKind;
  /** Absolute; set whenever signer is file (required then), unused with pkcs11. */
  privateKeyPath?: string;
  /** Absolute. */
  privateKeyPasswordPath?: string;
  /** Absolute. */
  dataDir: string;
  pollingIntervalS: number;
  validateOrders: boolean;
  /** A store imported without its order tree runs without validating orders: true silences the start-up warning. */
  acceptMissingOrders: boolean;
  /**
   * Sign batches after the base-chain watch confirmed the exchange's freeze (default false: a
   * frozen exchange takes no new state, and a claim then only muddies what users escape with).
   */
  signAfterFreeze: boolean;
  /** true / false: sent as validate_rollup=True/False; undefined: not sent at all. */
  validateRollup?: boolean;
  /** Absolute; a directory with user.crt, user.key, server.crt (mutual TLS to the availability gateway). */
  certificatesPath?: string;
  httpRequestTimeoutS: number;
  /** The profile's defaults merged with the file's `heights`. */
  heights: Heights;
  /** Absent: no metrics endpoint. */
  metricsPort?: number;
  metricsHost: string;
  maxReadyLag: number;
  /** Seconds the next batch (announced or polled) may go without advancing before /readyz fails. */
  maxStallS: number;
  logLevel: LogLevel;
  /** json: one JSON line per event (journald); pretty: human-readable lines. */
  logFormat: LogFormat;
  /** Pedersen engine: auto (native when built, else WASM), native, wasm or js. */
  hashEngine: EngineName;
  /** What the caches are sized from (memory-plan.ts); absent: the cgroup's limit, else a default. */
  memoryBudgetMib?: number;
  /** Levels below each tree's first branch kept in memory between batches (0: none); absent: planned. */
  nodeCacheLevels?: number;
  /** LevelDB's bound on open table files (kept open so that no read reopens one); absent: planned. */
  storeMaxOpenFiles?: number;
  /** How many of them LevelDB memory-maps (the rest are read with pread); absent: planned. */
  storeMappedTables?: number;
  /** Batches fetched and parsed ahead of the one being verified while catching up. */
  prefetchBatches: number;
  schedule: Schedule;
  /** Absolute. */
  backupDir?: string;
  backupKeep: number;
  pruneKeepBatches?: number;
  mode: Mode;
  /** Absolute; the claims journal, outside data_dir (default `<data_dir>-claims/claims.journal`). */
  claimsJournalPath?: string;
  /** Total time one gateway request may take, answer included (httpRequestTimeoutS is an idle time-out). */
  httpRequestDeadlineS: number;
  /** Largest gateway answer accepted, in bytes. */
  maxResponseBytes: number;
  /** The base chain's kind, pinned in configuration (absent: asked once, then pinned in the store). */
  chain?: "ethereum" | "starknet";
  /** Absent: no escape API (the read-only HTTP API for users' proofs and dumps). */
  escapeApiPort?: number;
  escapeApiHost: string;
  /** Escape API requests a second per client address (bursts of twice as many). */
  escapeApiRateLimit: number;
  /** Escape API answers computed at once. */
  escapeApiMaxConcurrency: number;
  /** Escape API connections open at once from one client address (an IPv6 client: its /64). */
  escapeApiConnectionsPerAddress: number;
  /** New escape API connections a second from one client address (bursts of twice as many). */
  escapeApiConnectionRate: number;
  /** Absolute; the token's PKCS#11 library (signer pkcs11). */
  pkcs11Module?: string;
  pkcs11TokenLabel?: string;
  /** CKA_LABEL of the member's private key in the token. */
  pkcs11KeyLabel?: string;
  /** Absolute; the user PIN's file (absent: the systemd credential dacd-pkcs11-pin). */
  pkcs11PinPath?: string;
  /** Longest one token call may take before the session is given up. */
  pkcs11TimeoutS: number;
  /** Ethereum JSON-RPC endpoint of the base chain; absent: the chain is not followed (src/chain). */
  baseChainRpcUrl?: string;
  /** The exchange contract followed there (0x + 40 hex digits); set together with baseChainRpcUrl. */
  starkexContractAddress?: string;
  /** Blocks on top of an event's block before dacd acts on it (0: its own block is enough). */
  baseChainConfirmations: number;
  baseChainPollIntervalS: number;
  /**
   * The base chain's contracts a user escapes through (the frozen exchange and its escape
   * verifier), shown on the escape page and in the escape kit's manifest. Both or neither.
   */
  escapeContracts?: { exchange: string; verifier: string };
  /** Non-fatal remarks (ignored DACD_* variables, shadowed variables) for the caller to log. */
  warnings: string[];
}

export type Field =
  | { kind: "string" | "url" | "path" | "cron"; required?: boolean; default?: string }
  | { kind: "enum"; values: readonly string[]; required?: boolean; default?: string }
  | { kind: "bool"; required?: boolean; default?: boolean }
  | { kind: "number"; min?: number; exclusiveMin?: number; required?: boolean; default?: number }
  | { kind: "int"; min?: number; max?: number; required?: boolean; default?: number }
  | { kind: "object"; fields: Readonly<Record<string, Field>> };

const height: Field = { kind: "int", min: 1, max: 251 };
const cron: Field = { kind: "cron" };

/** Every accepted key of the file (snake_case). Anything else is an error. */
export const SCHEMA: Readonly<Record<string, Field>> = {
  profile: { kind: "enum", values: PROFILE_NAMES, required: true },
  availability_gateway_url: { kind: "url", required: true },
  feeder_gateway_url: { kind: "url" },
  signer: { kind: "enum", values: SIGNERS, default: "file" },
  /** Required with signer file; checked in loadConfig since it depends on signer. */
  private_key_path: { kind: "path" },
  private_key_password_path: { kind: "path" },
  data_dir: { kind: "path", required: true },
  polling_interval_s: { kind: "number", exclusiveMin: 0, default: 5 },
  prefetch_batches: { kind: "int", min: 0, max: 16, default: 2 },
  validate_orders: { kind: "bool", default: true },
  accept_missing_orders: { kind: "bool", default: false },
  sign_after_freeze: { kind: "bool", default: false },
  validate_rollup: { kind: "bool" },
  certificates_path: { kind: "path" },
  http_request_timeout_s: { kind: "number", exclusiveMin: 0, default: 30 },
  heights: {
    kind: "object",
    fields: Object.fromEntries(TREE_NAMES.map((tree) => [tree, height])),
  },
  metrics_port: { kind: "int", min: 1, max: 65535 },
  metrics_host: { kind: "string", default: "127.0.0.1" },
  max_ready_lag: { kind: "int", min: 0, default: 5 },
  max_stall_s: { kind: "number", exclusiveMin: 0, default: DEFAULT_MAX_STALL_S },
  log_level: { kind: "enum", values: LOG_LEVELS, default: "info" },
  log_format: { kind: "enum", values: LOG_FORMATS, default: "json" },
  hash_engine: { kind: "enum", values: HASH_ENGINES, default: "auto" },
  // Unset: the budget's plan (memory-plan.ts); set, they override it.
  memory_budget_mib: { kind: "int", min: 256 },
  node_cache_levels: { kind: "int", min: 0, max: 24 },
  store_max_open_files: { kind: "int", min: 16 },
  store_mapped_tables: { kind: "int", min: 0 },
  schedule: { kind: "object", fields: { check: cron, backup: cron, prune: cron } },
  backup_dir: { kind: "path" },
  backup_keep: { kind: "int", min: 1, default: 3 },
  prune_keep_batches: { kind: "int", min: 1 },
  mode: { kind: "enum", values: MODES, default: "active" },
  claims_journal_path: { kind: "path" },
  http_request_deadline_s: { kind: "number", exclusiveMin: 0, default: 300 },
  max_response_bytes: { kind: "int", min: 1024, default: DEFAULT_MAX_RESPONSE_BYTES },
  chain: { kind: "enum", values: ["ethereum", "starknet"] },
  escape_api_port: { kind: "int", min: 1, max: 65535 },
  escape_api_host: { kind: "string", default: "127.0.0.1" },
  escape_api_rate_limit: { kind: "number", exclusiveMin: 0, default: 10 },
  escape_api_max_concurrency: { kind: "int", min: 1, max: 256, default: 4 },
  // Below the API's cap of 256 open connections, so that one address cannot hold them all.
  escape_api_connections_per_address: { kind: "int", min: 1, max: 256, default: 32 },
  escape_api_connection_rate: { kind: "number", exclusiveMin: 0, default: 20 },
  pkcs11_module: { kind: "path" },
  pkcs11_token_label: { kind: "string" },
  pkcs11_key_label: { kind: "string" },
  pkcs11_pin_path: { kind: "path" },
  pkcs11_timeout_s: { kind: "number", exclusiveMin: 0, default: 10 },
  base_chain_rpc_url: { kind: "url" },
  starkex_contract_address: { kind: "string" },
  // Twelve blocks: Ethereum's reorgs since the merge are one or two blocks deep.
  base_chain_confirmations: { kind: "int", min: 0, max: 10_000, default: 12 },
  // One poll a block (Ethereum's slot is 12 s).
  base_chain_poll_interval_s: { kind: "number", exclusiveMin: 0, default: 12 },
  escape_contracts: {
    kind: "object",
    fields: { exchange: { kind: "string" }, verifier: { kind: "string" } },
  },
};

/** The Config field of a file key: its camelCase (`http_request_timeout_s` → `httpRequestTimeoutS`). */
export function configField(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The reference implementation's variable names; DACD_<KEY> wins over them. */
export const REFERENCE_ENV: Readonly<Record<string, string>> = {
  PRIVATE_KEY_PATH: "private_key_path",
  AVAILABILITY_GW_ENDPOINT: "availability_gateway_url",
  CERTIFICATES_PATH: "certificates_path",
};
