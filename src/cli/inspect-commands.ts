import type { Command } from "commander";
import type { LevelStore } from "../storage/level-store.js";
import { printJson, snakeKeys, wantsJson } from "./output.js";
import { statusSummary } from "./status-summary.js";
import {
  openStoreAt,
  parseBatchId,
  parseLeafId,
  parseLeafObject,
  storeDirOf,
  storeOptions,
  type StoreOptions,
} from "./store-options.js";

type InspectOptions = StoreOptions & { json?: boolean };

// The store's readers, the hash engines and the control client are loaded in the actions that use
// them, so that defining these commands costs every other dacd command nothing.

/**
 * Answers from the running daemon when there is one (it holds the LevelDB lock), otherwise from the
 * store opened directly, which must exist: these commands never create or change a store.
 */
async function inspect(
  opts: InspectOptions,
  daemonPath: string,
  query: Record<string, string>,
  direct: (store: LevelStore) => Promise<unknown>,
): Promise<{ answer: unknown; fromDaemon: boolean }> {
  const { dir } = storeDirOf(opts);
  const { askDaemon } = await import("../control/client.js");
  const answer = await askDaemon(dir, daemonPath, query);
  if (answer !== undefined) return { answer, fromDaemon: true };
  const store = await openStoreAt(dir, { readOnly: true });
  try {
    return { answer: await direct(store), fromDaemon: false };
  } finally {
    await store.close();
  }
}

/** The batch the exchange froze at, as the daemon or the store knows it (undefined before a freeze). */
export async function frozenBatchOf(opts: StoreOptions): Promise<number | undefined> {
  const { storeStatus } = await import("../inspect/inspect.js");
  const { answer } = await inspect(opts, "/status", {}, (store) => storeStatus(store));
  const onchain = (answer as { onchain?: { frozen_batch_id?: number | null } | null }).onchain;
  return onchain?.frozen_batch_id ?? undefined;
}

export function registerInspectCommands(program: Command): void {
  storeOptions(
    program
      .command("status")
      .description(
        "profile, cursor, last signed batch, any failing batch: a summary on a terminal, else JSON",
      )
      .option("--json", "JSON even on a terminal")
      .option("--no-json", "the summary even when not on a terminal"),
  ).action(async (opts: InspectOptions) => {
    const { storeStatus } = await import("../inspect/inspect.js");
    const { answer, fromDaemon } = await inspect(opts, "/status", {}, (store) => storeStatus(store));
    if (wantsJson(opts.json)) printJson(answer);
    else process.stdout.write(statusSummary(snakeKeys(answer) as Record<string, unknown>, fromDaemon));
  });

  const show = program.command("show").description("read-only inspection of the stored state (JSON)");
  storeOptions(
    show
      .command("batch <id>")
      .description("the stored record of a batch, and its root update on the base chain (onchain) if read"),
  ).action(async (id: string, opts: InspectOptions) => {
    const batchId = parseBatchId(id);
    const { showBatchOnchain } = await import("../inspect/inspect.js");
    printJson(
      (await inspect(opts, "/batch", { id: String(batchId) }, (store) => showBatchOnchain(store, batchId)))
        .answer,
    );
  });
  storeOptions(
    show
      .command("leaf <object> <id>")
      .description("a leaf (vault, order, position, rollup_vault) at a batch (default: the last signed)")
      .option("--batch <n>", "batch id"),
  ).action(async (objectArg: string, idArg: string, opts: InspectOptions & { batch?: string }) => {
    const object = parseLeafObject(objectArg);
    const id = parseLeafId(idArg);
    const batchId = opts.batch !== undefined ? parseBatchId(opts.batch) : undefined;
    const query: Record<string, string> = { object, id };
    if (batchId !== undefined) query.batch = String(batchId);
    const [{ defaultBatchNote, showLeaf }, { commandEngine }] = await Promise.all([
      import("../inspect/inspect.js"),
      import("./command-engine.js"),
    ]);
    const { answer } = await inspect(opts, "/leaf", query, (store) =>
      showLeaf(store, commandEngine(), object, id, batchId),
    );
    printJson(answer);
    const a = answer as { batch_id: number; frozen_batch_id?: number };
    const note = batchId === undefined ? defaultBatchNote("leaf", a.batch_id, a.frozen_batch_id) : undefined;
    if (note) process.stderr.write(`dacd: ${note}\n`);
  });
}
