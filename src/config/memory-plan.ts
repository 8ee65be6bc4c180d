import type { MemoryLimit } from "./memory-limit.js";
import { runtimeSettings } from "./runtime-settings.js";

/**
 * How dacd shares its memory budget out: the node cache, LevelDB's memory-mapped tables, its block
 * cache and its open table files, chosen at start from the budget and the store's size. The keys an
 * operator sets (node_cache_levels, store_mapped_tables, store_max_open_files) win over the plan.
 */

const MIB = 2 ** 20;

/**
 * The budget without a cgroup limit or `memory_budget_mib`: what the shipped unit's `MemoryHigh=2G`
 * leaves after the headroom, so that a member runs alike with and without the unit. It fits a
 * 2-core machine of 4 GiB with half of it left to the system and the page cache.
 */
export const DEFAULT_BUDGET_MIB = 1792;

/** Kept below a cgroup limit: allocator slack, thread stacks, the kernel's own accounting. */
const MIN_HEADROOM = 256 * MIB;
const HEADROOM_SHARE = 1 / 8;

/**
 * What the process needs whatever the plan: Node and V8 (the heap a batch grows, the young
 * generation), the Pedersen tables, the walks' buffers, the answers' parse workers.
 */
export const FIXED_BYTES = 640 * MIB;

/** A cached node: its slot (hash, gen, record), its table cell and its position entry, rounded up. */
export const NODE_CACHE_BYTES_PER_NODE = 128;
/** Of the budget left after the fixed part, what the node cache may take. */
const NODE_CACHE_SHARE = 0.4;
/** The deepest the node cache goes below each tree's first branch (positions per tree: 2^levels). */
const MAX_LEVELS = 24;

/** LevelDB's table files are cut at 2 MiB; a mapped one's touched pages stay resident up to that. */
export const TABLE_BYTES = 2 * MIB;
/** An open table's index block and handle in LevelDB's table cache. */
export const OPEN_TABLE_BYTES = 32 * 1024;
/** Store bytes per leaf: the leaf's record, its tree nodes and their share of LevelDB's overhead. */
const STORE_BYTES_PER_LEAF = 400;
const MIN_OPEN_FILES = 1000;
const MIN_BLOCK_CACHE = 8 * MIB;
const MAX_BLOCK_CACHE = 32 * MIB;

/** Where the budget came from. */
export interface MemoryBudget {
  readonly bytes: number;
  /** `memory_budget_mib`, the cgroup file (less headroom), or the default. */
  readonly source: string;
}

/** `memory_budget_mib` if set, else the cgroup's limit less headroom, else DEFAULT_BUDGET_MIB. */
export function memoryBudget(
  configuredMib: number | undefined,
  limit: MemoryLimit | undefined,
): MemoryBudget {
  if (configuredMib !== undefined) return { bytes: configuredMib * MIB, source: "memory_budget_mib" };
  if (limit) {
    const headroom = Math.max(MIN_HEADROOM, Math.round(limit.bytes * HEADROOM_SHARE));
    const bytes = Math.max(limit.bytes - headroom, Math.round(limit.bytes / 2));
    return {
      bytes,
      source: `${limit.source} (${Math.round(limit.bytes / MIB)} MiB) less ${Math.round((limit.bytes - bytes) / MIB)} MiB headroom`,
    };
  }
  return { bytes: DEFAULT_BUDGET_MIB * MIB, source: "default (no cgroup memory limit)" };
}

/** The operator's explicit settings, which the plan keeps. */
export interface MemoryOverrides {
  readonly nodeCacheLevels?: number;
  readonly storeMappedTables?: number;
  readonly storeMaxOpenFiles?: number;
}

export interface MemoryPlan {
  readonly budget_mib: number;
  readonly budget_source: string;
  /**
   * Levels below each tree's first branch (the top of a tree whose ids share a prefix is one path)
   * where the cache may keep nodes, as many as the node bound allows, those nearer the top first.
   */
  readonly node_cache_levels: number;
  /** The most nodes the cache holds (every tree together). */
  readonly node_cache_nodes: number;
  /** What the cache is expected to take once warm, from the store's size. */
  readonly node_cache_mib: number;
  readonly store_mapped_tables: number;
  readonly store_block_cache_mib: number;
  readonly store_max_open_files: number;
  /** libuv's threads, where LevelDB's lookups run side by side (UV_THREADPOOL_SIZE; not from the budget). */
  readonly store_read_threads: number;
  /** Table files in the store now (its size over LevelDB's file size). */
  readonly store_tables: number;
  /** The settings the operator gave, kept as given. */
  readonly overridden: readonly string[];
}

/**
 * The plan for `budget`, a store of `storeBytes` and `trees` kept trees. The node cache comes first
 * (every batch reads the top of each tree), then the open table files (a table not open is reopened
 * on each read that needs it), the block cache, and what is left goes to mapped tables, whose pages
 * the kernel counts against the cgroup like any other. `readThreads` (libuv's pool, which the
 * launcher sizes) is carried along for the log line, since it decides how many lookups wait on the
 * disk at once.
 */
export function planMemory(
  budget: MemoryBudget,
  storeBytes: number,
  trees: number,
  overrides: MemoryOverrides = {},
  readThreads = runtimeSettings().threadpoolSize,
): MemoryPlan {
  const spare = Math.max(0, budget.bytes - FIXED_BYTES);
  const treeCount = Math.max(1, trees);
  const overridden: string[] = [];

  let nodes = Math.floor((spare * NODE_CACHE_SHARE) / NODE_CACHE_BYTES_PER_NODE);
  // Deep enough for one tree alone to fill the bound. With several, the cache keeps the nodes
  // nearest each tree's top first (a deeper one gives up its slot), so the bound holds every tree's
  // full top levels and part of the next, however their sizes differ.
  let levels = levelsFor(nodes, 1);
  if (overrides.nodeCacheLevels !== undefined) {
    overridden.push("node_cache_levels");
    levels = overrides.nodeCacheLevels;
    nodes = treeCount * (2 ** levels - 1);
  }
  // A store's binary nodes are about as many as its leaves (single leaves are edge records).
  const leaves = Math.ceil(storeBytes / STORE_BYTES_PER_LEAF);
  const cachedNodes = Math.min(nodes, 2 * leaves);
  const nodeCacheBytes = cachedNodes * NODE_CACHE_BYTES_PER_NODE;

  const tables = Math.ceil(storeBytes / TABLE_BYTES);
  let openFiles = Math.max(MIN_OPEN_FILES, Math.ceil(tables * 1.5) + 500);
  if (overrides.storeMaxOpenFiles !== undefined) {
    overridden.push("store_max_open_files");
    openFiles = overrides.storeMaxOpenFiles;
  }
  const blockCache = Math.min(MAX_BLOCK_CACHE, Math.max(MIN_BLOCK_CACHE, Math.round(spare / 64)));

  const left = spare - nodeCacheBytes - blockCache - Math.min(openFiles, tables + 500) * OPEN_TABLE_BYTES;
  let mapped = Math.max(0, Math.floor(left / TABLE_BYTES));
  if (overrides.storeMappedTables !== undefined) {
    overridden.push("store_mapped_tables");
    mapped = overrides.storeMappedTables;
  }
  return {
    budget_mib: Math.round(budget.bytes / MIB),
    budget_source: budget.source,
    node_cache_levels: levels,
    node_cache_nodes: nodes,
    node_cache_mib: Math.round(nodeCacheBytes / MIB),
    store_mapped_tables: mapped,
    store_block_cache_mib: Math.round(blockCache / MIB),
    store_max_open_files: openFiles,
    store_read_threads: readThreads,
    store_tables: tables,
    overridden,
  };
}

/** The most levels whose nodes (2^levels − 1 per tree) fit `nodes` over `trees` trees. */
export function levelsFor(nodes: number, trees: number): number {
  let levels = 0;
  while (levels < MAX_LEVELS && trees * (2 ** (levels + 1) - 1) <= nodes) levels++;
  return levels;
}

/** One line for the log and `dacd config check`. */
export function describePlan(plan: MemoryPlan): string {
  const kept = plan.overridden.length > 0 ? `; as configured: ${plan.overridden.join(", ")}` : "";
  return (
    `memory budget ${plan.budget_mib} MiB (${plan.budget_source}): node cache ${plan.node_cache_levels} levels ` +
    `below each tree's first branch, at most ${plan.node_cache_nodes.toLocaleString("en")} nodes ` +
    `(~${plan.node_cache_mib} MiB for this store); LevelDB: ${plan.store_mapped_tables} mapped tables, ` +
    `${plan.store_block_cache_mib} MiB block cache, ${plan.store_max_open_files} open files, ` +
    `${plan.store_read_threads} read threads ` +
    `(store: ${plan.store_tables} tables)${kept}`
  );
}
