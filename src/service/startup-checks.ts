/**
 * The start-up checks of `dacd run` that need no gateway, in one list, so that `dacd config check`
 * makes exactly the same ones: what config check passes, run does not then refuse for a reason
 * config check could have found. Outside the list: the key (loaded by each command itself, and
 * skipped by `config check --no-key`), the chain kind (asked of the gateway) and the metrics port
 * (config check must not bind what a running member holds).
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import { checkImportedStore, ordersMissingWarning } from "../escape/reference-store.js";
import { makeProfile } from "../model/profile.js";
import { checkTlsOptions } from "../poller/gateway/http.js";
import { resolveChainKind } from "../storage/chain-pin.js";
import { isLockError, LevelStore } from "../storage/level-store.js";
import { checkClaimsJournal } from "../storage/claims-journal.js";
import { ensureLocalDir } from "../storage/local-dir.js";
import { claimsJournalPathOf } from "../storage/member-journal.js";
import { validateSchedules, type JobImplementations } from "./operations.js";

export interface StartupContext {
  /** `run` creates data_dir when it is missing; `config check` only looks. */
  readonly createDataDir: boolean;
  /** The scheduled jobs this build has (schedule.prune needs pruning). */
  readonly jobs: JobImplementations;
}

export interface ConfigCheck {
  readonly name: string;
  run(config: Config, ctx: StartupContext): Promise<void>;
}

export interface StoreCheck {
  readonly name: string;
  run(config: Config, store: LevelStore): Promise<void>;
}

/** Checks of the configuration against the host, made before the key is read. */
export const CONFIG_CHECKS: readonly ConfigCheck[] = [
  { name: "schedule", run: async (config, ctx) => validateSchedules(config, ctx.jobs) },
  {
    name: "certificates_path",
    run: async (config) => {
      if (config.certificatesPath) checkTlsOptions({ certificatesPath: config.certificatesPath });
    },
  },
  {
    name: "data_dir",
    run: async (config, ctx) => {
      try {
        await (ctx.createDataDir ? ensureLocalDir(config.dataDir) : inspectDir(config.dataDir));
      } catch (err) {
        throw new DacdError(
          "CONFIG",
          `data_dir ${config.dataDir} is not a writable directory: ${(err as Error).message}`,
        );
      }
    },
  },
  { name: "claims_journal", run: async (config) => checkClaimsJournal(claimsJournalPathOf(config)) },
];

/**
 * Checks of the configuration against the store it names (the store's node format is checked by
 * every open). The claims journal's pin of the chain kind is left to run, which opens the journal
 * (its damage is a config check).
 */
export const STORE_CHECKS: readonly StoreCheck[] = [
  { name: "validate_rollup", run: (config, store) => checkImportedStore(store, validateRollupOf(config)) },
  {
    name: "chain",
    run: async (config, store) => {
      if (!config.chain) return;
      const stored = await store.meta.pinnedChain();
      // The pins compared as run compares them; the gateway's answer (run asks it) is left out by
      // giving the configured kind in its place, and nothing is pinned here.
      await resolveChainKind(
        { pinnedChain: async () => stored, pinChain: async () => undefined },
        { configured: config.chain, gateway: config.chain },
      );
    },
  },
];

/** validate_rollup as the member applies it: only a profile with a rollup tree has one. */
export function validateRollupOf(config: Config): boolean | undefined {
  return makeProfile(config.profile, config.heights).rollup ? config.validateRollup : undefined;
}

export async function runConfigChecks(config: Config, ctx: StartupContext): Promise<void> {
  for (const check of CONFIG_CHECKS) await check.run(config, ctx);
}

export async function runStoreChecks(config: Config, store: LevelStore): Promise<void> {
  for (const check of STORE_CHECKS) await check.run(config, store);
}

/**
 * config check's look at the store: opened read-only when one exists and no member holds it. A
 * running member made these checks when it started; that it holds the store is returned as a note,
 * and so is the warning run gives at every start for a store without its order tree.
 */
export async function checkExistingStore(config: Config): Promise<string | undefined> {
  if (!existsSync(join(config.dataDir, "CURRENT"))) return undefined;
  let store: LevelStore;
  try {
    store = await LevelStore.openExisting(config.dataDir);
  } catch (err) {
    if (isLockError(err))
      return `the store ${config.dataDir} is in use by a running dacd: its checks were made when that one started`;
    throw err;
  }
  try {
    await runStoreChecks(config, store);
    return await ordersMissingWarning(store, config.acceptMissingOrders);
  } finally {
    await store.close();
  }
}

/** What `ensureLocalDir` would find without creating anything: a directory, or a place for one. */
async function inspectDir(dir: string): Promise<void> {
  for (let d = resolve(dir); ; d = dirname(d)) {
    const s = await stat(d).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return undefined;
      throw err;
    });
    if (s) {
      if (!s.isDirectory())
        throw new Error(d === resolve(dir) ? "it is not a directory" : `${d} is not a directory`);
      return;
    }
    if (dirname(d) === d) return;
  }
}
