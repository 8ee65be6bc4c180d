import type { Command } from "commander";
import { DacdError } from "../errors.js";
import { inBatchRange, MAX_BATCH_NUMBER } from "../model/batch-range.js";
import { TREE_ALIASES } from "../model/tree-aliases.js";
import { TREE_NAMES } from "../model/profile.js";
import type { LevelStore, LevelTuning } from "../storage/level-store.js";
import { claimsJournalPathOf } from "../storage/claims-journal-path.js";
import { CONFIG_HELP, loadConfigFor } from "./config-path.js";

/** What the commands that work on a store are told about where it is. */
export interface StoreOptions {
  config?: string;
  db?: string;
}

/** Adds --config and --db to a command that works on a store. */
export const storeOptions = (cmd: Command): Command =>
  cmd
    .option("--config <file>", CONFIG_HELP)
    .option("--db <dir>", "store directory (instead of the configuration's data_dir)");

/**
 * --db, else the data_dir of --config (default: DACD_CONFIG, else /etc/dacd/dacd.yaml), with the
 * configuration's profile when it was read, and where the member's claims journal is.
 */
export function storeDirOf(opts: StoreOptions): { dir: string; profile?: string; journal: string } {
  if (opts.db) return { dir: opts.db, journal: claimsJournalPathOf({ dataDir: opts.db }) };
  const config = loadConfigFor(opts.config);
  return { dir: config.dataDir, profile: config.profile, journal: claimsJournalPathOf(config) };
}

/**
 * Opens the store in `dir`: a command that only reads (`readOnly`) needs it to exist and never
 * creates one; the others create it if it is missing.
 */
export async function openStoreAt(
  dir: string,
  opts: LevelTuning & { readOnly?: boolean } = {},
): Promise<LevelStore> {
  const { readOnly, ...tuning } = opts;
  // LevelDB's binding is loaded by the commands that open a store, not by every dacd command.
  const { LevelStore } = await import("../storage/level-store.js");
  return readOnly ? LevelStore.openExisting(dir, tuning) : LevelStore.open(dir, tuning);
}

/** A batch id given on the command line: a decimal integer in 0 … 2^53 − 2, else a usage error. */
export function parseBatchId(v: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(v))
    throw new DacdError("USAGE", `batch id ${JSON.stringify(v)} is not a non-negative integer`);
  if (v.length > 16 || !inBatchRange(Number(v)))
    throw new DacdError("USAGE", `batch id ${v} is out of range (0 … ${MAX_BATCH_NUMBER})`);
  return Number(v);
}

/** A leaf id given on the command line: a non-negative decimal integer, else a usage error. */
export function parseLeafId(v: string): string {
  if (!/^(0|[1-9][0-9]*)$/.test(v))
    throw new DacdError("USAGE", `leaf id ${JSON.stringify(v)} is not a non-negative integer`);
  return v;
}

/** A tree's leaf kind given on the command line (vault, order, position, rollup_vault), else a usage error. */
export function parseLeafObject(v: string): string {
  if (!Object.hasOwn(TREE_ALIASES, v))
    throw new DacdError("USAGE", `${JSON.stringify(v)} is not one of ${TREE_NAMES.join(", ")}`);
  return v;
}
