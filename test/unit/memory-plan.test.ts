import { describe, expect, it } from "vitest";
import {
  DEFAULT_BUDGET_MIB,
  describePlan,
  levelsFor,
  memoryBudget,
  planMemory,
} from "../../src/config/memory-plan.js";

const MIB = 2 ** 20;
const GIB = 2 ** 30;

describe("the memory budget", () => {
  it("is memory_budget_mib when set, whatever the cgroup says", () => {
    expect(memoryBudget(1000, { bytes: 4 * GIB, source: "x" })).toEqual({
      bytes: 1000 * MIB,
      source: "memory_budget_mib",
    });
  });

  it("is the cgroup's limit less an eighth, at least 256 MiB", () => {
    const unit = memoryBudget(undefined, { bytes: 2 * GIB, source: "/cg/memory.high" });
    expect(unit.bytes).toBe(2 * GIB - 256 * MIB);
    expect(unit.source).toBe("/cg/memory.high (2048 MiB) less 256 MiB headroom");
    expect(memoryBudget(undefined, { bytes: 8 * GIB, source: "m" }).bytes).toBe(7 * GIB);
    // A small limit keeps at least half of it.
    expect(memoryBudget(undefined, { bytes: 384 * MIB, source: "m" }).bytes).toBe(192 * MIB);
  });

  it("is the default without either: what the shipped unit's MemoryHigh=2G leaves", () => {
    expect(memoryBudget(undefined, undefined)).toEqual({
      bytes: DEFAULT_BUDGET_MIB * MIB,
      source: "default (no cgroup memory limit)",
    });
    expect(DEFAULT_BUDGET_MIB).toBe(memoryBudget(undefined, { bytes: 2 * GIB, source: "" }).bytes / MIB);
  });
});

describe("the memory plan", () => {
  const budget = (mib: number) => ({ bytes: mib * MIB, source: "test" });
  const ONE_M_STORE = 700e6; // about a 1M-vault W-spot store
  const TEN_M_STORE = 6.5e9;

  it("levels: the most whose 2^levels − 1 nodes per tree fit", () => {
    expect(levelsFor(0, 3)).toBe(0);
    expect(levelsFor(3, 3)).toBe(1);
    expect(levelsFor(3 * (2 ** 20 - 1), 3)).toBe(20);
    expect(levelsFor(3 * (2 ** 20 - 1) - 1, 3)).toBe(19);
    expect(levelsFor(1e12, 1)).toBe(24);
  });

  it("the default budget, a 1M-vault store, three trees", () => {
    const plan = planMemory(budget(1792), ONE_M_STORE, 3, {}, 16);
    expect(plan).toEqual({
      budget_mib: 1792,
      budget_source: "test",
      node_cache_levels: 21,
      node_cache_nodes: 3774873,
      node_cache_mib: 427,
      store_mapped_tables: 340,
      store_block_cache_mib: 18,
      store_max_open_files: 1001,
      store_read_threads: 16,
      store_tables: 334,
      overridden: [],
    });
  });

  it("a larger store at the same budget: the same cache, more open files, fewer mapped tables", () => {
    const plan = planMemory(budget(1792), TEN_M_STORE, 3);
    expect(plan.node_cache_levels).toBe(21);
    expect(plan.node_cache_mib).toBe(461);
    expect(plan.store_tables).toBe(3100);
    expect(plan.store_max_open_files).toBe(5150);
    expect(plan.store_mapped_tables).toBe(280);
  });

  it("a small budget: a smaller cache; a large one: a deeper cache and more mapped tables", () => {
    const small = planMemory(budget(1024), ONE_M_STORE, 3);
    expect(small.node_cache_levels).toBe(20);
    expect(small.node_cache_nodes).toBe(1258291);
    expect(small.store_block_cache_mib).toBe(8);
    const large = planMemory(budget(7168), ONE_M_STORE, 3);
    expect(large.node_cache_levels).toBe(24);
    expect(large.node_cache_mib).toBe(Math.round((2 * Math.ceil(ONE_M_STORE / 400) * 128) / MIB));
    expect(large.store_mapped_tables).toBeGreaterThan(1000);
    expect(large.store_block_cache_mib).toBe(32);
    // Below the fixed part nothing is cached.
    const tiny = planMemory(budget(512), ONE_M_STORE, 3);
    expect(tiny).toMatchObject({ node_cache_levels: 0, node_cache_nodes: 0, store_mapped_tables: 0 });
  });

  it("levels deep enough for one tree alone to fill the node bound, however many trees share it", () => {
    for (const trees of [1, 2, 3]) {
      const plan = planMemory(budget(1792), ONE_M_STORE, trees);
      expect(plan.node_cache_nodes).toBe(3774873);
      expect(plan.node_cache_levels).toBe(21);
      expect(2 ** plan.node_cache_levels - 1).toBeLessThanOrEqual(plan.node_cache_nodes);
      expect(2 ** (plan.node_cache_levels + 1) - 1).toBeGreaterThan(plan.node_cache_nodes);
    }
  });

  it("keeps the operator's settings and says so", () => {
    const plan = planMemory(
      budget(1792),
      ONE_M_STORE,
      3,
      { nodeCacheLevels: 19, storeMappedTables: 0, storeMaxOpenFiles: 5000 },
      16,
    );
    expect(plan).toMatchObject({
      node_cache_levels: 19,
      node_cache_nodes: 3 * (2 ** 19 - 1),
      store_mapped_tables: 0,
      store_max_open_files: 5000,
      overridden: ["node_cache_levels", "store_max_open_files", "store_mapped_tables"],
    });
    expect(describePlan(plan)).toBe(
      "memory budget 1792 MiB (test): node cache 19 levels below each tree's first branch, at most " +
        "1,572,861 nodes (~192 MiB for this store); LevelDB: 0 mapped tables, 18 MiB block cache, " +
        "5000 open files, 16 read threads (store: 334 tables); as configured: node_cache_levels, store_max_open_files, store_mapped_tables",
    );
  });
});
