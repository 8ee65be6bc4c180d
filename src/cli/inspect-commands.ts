import type { Command } from "commander";
import { loadConfig } from "../config/config.js";
import { askDaemon } from "../control/client.js";
import { DacdError } from "../errors.js";
import { showBatch, showLeaf, storeStatus } from "../inspect/inspect.js";
import { LevelStore } from "../storage/level-store.js";
import { createEngine } from "../verifier/hash/select.js";

interface StoreOptions {
  config?: string;
  db?: string;
}

function dataDirOf(opts: StoreOptions): string {
  if (opts.db) return opts.db;
  if (opts.config) return loadConfig(opts.config).dataDir;
  throw new DacdError("CONFIG", "name the store with --config FILE or --db DIR");
}

/**
 * Answers from the running daemon when there is one (it holds the LevelDB lock), otherwise from the
 * store opened directly. Either way nothing is written.
 */
async function inspect(
  opts: StoreOptions,
  daemonPath: string,
  query: Record<string, string>,
  direct: (store: LevelStore) => Promise<unknown>,
): Promise<void> {
  const dir = dataDirOf(opts);
  let answer = await askDaemon(dir, daemonPath, query);
  if (answer === undefined) {
    const store = await LevelStore.open(dir);
    try {
      answer = await direct(store);
    } finally {
      await store.close();
    }
  }
  process.stdout.write(JSON.stringify(answer, null, 2) + "\n");
}

const storeOptions = (cmd: Command): Command =>
  cmd
    .option("--config <file>", "configuration file (its data_dir is read)")
    .option("--db <dir>", "store directory");

function parseBatchId(v: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(v))
    throw new DacdError("BAD_INPUT", `batch id ${JSON.stringify(v)} is not a non-negative integer`);
  return Number(v);
}

export function registerInspectCommands(program: Command): void {
  storeOptions(
    program.command("status").description("JSON: profile, cursor, last signed batch, any failing batch"),
  ).action(async (opts: StoreOptions) => inspect(opts, "/status", {}, (store) => storeStatus(store)));

  const show = program.command("show").description("read-only inspection of the stored state");
  storeOptions(show.command("batch <id>").description("the stored record of a batch")).action(
    async (id: string, opts: StoreOptions) => {
      const batchId = parseBatchId(id);
      await inspect(opts, "/batch", { id: String(batchId) }, (store) => showBatch(store, batchId));
    },
  );
  storeOptions(
    show
      .command("leaf <object> <id>")
      .description("a leaf (vault, order, position, rollup_vault) at a batch (default: the last signed)")
      .option("--batch <n>", "batch id"),
  ).action(async (object: string, id: string, opts: StoreOptions & { batch?: string }) => {
    const batchId = opts.batch !== undefined ? parseBatchId(opts.batch) : undefined;
    const query: Record<string, string> = { object, id };
    if (batchId !== undefined) query.batch = String(batchId);
    await inspect(opts, "/leaf", query, (store) =>
      showLeaf(store, createEngine("auto"), object, id, batchId),
    );
  });
}
