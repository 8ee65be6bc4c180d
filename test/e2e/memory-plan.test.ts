import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cgroupMemoryLimit } from "../../src/config/memory-limit.js";
import { DEFAULT_BUDGET_MIB, memoryBudget } from "../../src/config/memory-plan.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

function dacd(
  args: string[],
  extra: Record<string, string> = {},
): { code: number | null; out: string; err: string } {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("DACD_") && k !== "UV_THREADPOOL_SIZE" && v !== undefined) env[k] = v;
  Object.assign(env, extra);
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", env, timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-memory-plan-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const config = (extra: string): string =>
  "profile: spot\n" +
  "availability_gateway_url: https://gateway.example.com\n" +
  `private_key_path: ${join(dir, "member.key")}\n` +
  `data_dir: ${join(dir, "db")}\n` +
  extra;

describe("dacd config check prints the memory plan", () => {
  it("from memory_budget_mib: the budget, the node cache and LevelDB's settings", async () => {
    const path = join(dir, "budget.yaml");
    await writeFile(path, config("memory_budget_mib: 1024\n"));
    const r = dacd(["config", "check", "--config", path, "--no-key"]);
    expect(r.code, r.err).toBe(0);
    // Two kept trees (vault and order; no rollup without validate_rollup), an empty store.
    expect(r.out).toContain(
      "# memory budget 1024 MiB (memory_budget_mib): node cache 20 levels below each tree's first branch, " +
        "at most 1,258,291 nodes (~0 MiB for this store); LevelDB: 180 mapped tables, 8 MiB block cache, " +
        "1000 open files, 16 read threads (store: 0 tables)\n",
    );
    const json = dacd(["config", "check", "--config", path, "--no-key", "--json"]);
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({
      memory_budget_mib: 1024,
      memory_plan: {
        budget_mib: 1024,
        budget_source: "memory_budget_mib",
        node_cache_levels: 20,
        node_cache_nodes: 1258291,
        store_mapped_tables: 180,
        store_block_cache_mib: 8,
        store_max_open_files: 1000,
        store_read_threads: 16,
        overridden: [],
      },
    });
  }, 60_000);

  it("the operator's settings win and are named; without a budget, the cgroup's limit or the default", async () => {
    const path = join(dir, "overrides.yaml");
    await writeFile(path, config("node_cache_levels: 17\nstore_mapped_tables: 0\n"));
    const r = dacd(["config", "check", "--config", path, "--no-key", "--json"]);
    expect(r.code, r.err).toBe(0);
    const plan = (JSON.parse(r.out) as { memory_plan: Record<string, unknown> }).memory_plan;
    const budget = memoryBudget(undefined, cgroupMemoryLimit());
    expect(plan).toMatchObject({
      budget_mib: Math.round(budget.bytes / 2 ** 20),
      budget_source: budget.source,
      node_cache_levels: 17,
      node_cache_nodes: 2 * (2 ** 17 - 1),
      store_mapped_tables: 0,
      overridden: ["node_cache_levels", "store_mapped_tables"],
    });
    if (!cgroupMemoryLimit()) expect(plan.budget_mib).toBe(DEFAULT_BUDGET_MIB);
    // The launcher keeps the operator's UV_THREADPOOL_SIZE.
    const own = dacd(["config", "check", "--config", path, "--no-key", "--json"], {
      UV_THREADPOOL_SIZE: "6",
    });
    expect(own.code, own.err).toBe(0);
    expect(JSON.parse(own.out)).toMatchObject({ memory_plan: { store_read_threads: 6 } });
  }, 60_000);
});
