import { existsSync } from "node:fs";
import type { Config } from "../config/config.js";
import { cgroupMemoryLimit, type CgroupPaths, systemCgroupPaths } from "../config/memory-limit.js";
import { memoryBudget, planMemory, type MemoryPlan } from "../config/memory-plan.js";
import { directorySize } from "../storage/store-size.js";

/**
 * The memory plan `dacd run` starts with (and `dacd config check` prints): the budget from the
 * configuration or the cgroup, the store's size from its directory, and the operator's overrides.
 */
export async function memoryPlanFor(
  config: Pick<
    Config,
    "dataDir" | "memoryBudgetMib" | "nodeCacheLevels" | "storeMappedTables" | "storeMaxOpenFiles"
  >,
  trees: number,
  cgroup: CgroupPaths = systemCgroupPaths(),
): Promise<MemoryPlan> {
  const budget = memoryBudget(config.memoryBudgetMib, cgroupMemoryLimit(cgroup));
  const storeBytes = existsSync(config.dataDir) ? await directorySize(config.dataDir).catch(() => 0) : 0;
  return planMemory(budget, storeBytes, trees, {
    nodeCacheLevels: config.nodeCacheLevels,
    storeMappedTables: config.storeMappedTables,
    storeMaxOpenFiles: config.storeMaxOpenFiles,
  });
}
