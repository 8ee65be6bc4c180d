import type { Command } from "commander";
import { DUMP_MAX_OPEN_FILES } from "../../escape/dump.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { commandEngine } from "../command-engine.js";
import { loadConfigFor } from "../config-path.js";
import { kitViaDaemon } from "../daemon-escape.js";
import { printJson } from "../output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { batchId, DEFAULT_BATCH_HELP } from "./batch-options.js";
import { progressLine, secondsSince } from "./progress-line.js";
import { withStore } from "./with-store.js";

type KitCliOptions = StoreOptions & { out: string; batch?: string };

/** `dacd escape-kit`: every escape proof of a batch as static files, with the escape page. */
export function registerEscapeKitCommand(program: Command): void {
  storeOptions(
    program
      .command("escape-kit")
      .description(
        "every non-empty vault (spot) or position (perpetual) as its on-chain escape proof, one JSON file each, with the escape page and a manifest, for any static host",
      )
      .requiredOption("--out <dir>", "output directory (created; must be absent or empty)")
      .option("--batch <n>", DEFAULT_BATCH_HELP),
  ).action(buildEscapeKit);
}

async function buildEscapeKit(opts: KitCliOptions): Promise<void> {
  const batch = batchId(opts.batch);
  const bar = progressLine();
  const started = Date.now();
  const contracts = opts.db === undefined ? loadConfigFor(opts.config).escapeContracts : undefined;
  // Loaded only here: the kit's encoder and the ABI code are not needed by any other command.
  const { buildKit } = await import("../../escape/kit/build.js");
  const { storePaths } = await import("../../escape/kit/source.js");
  const kitOptions = {
    out: opts.out,
    contracts,
    progress: (n: number) => bar.update(`escape kit: ${n} proofs, ${secondsSince(started)} s`),
  };
  // Beside a running daemon this process builds the proofs from the paths the daemon walks.
  let engine: HashEngine | undefined;
  try {
    const manifest =
      (await kitViaDaemon(storeDirOf(opts).dir, batch, (source) => {
        engine = commandEngine();
        return buildKit(engine, source, kitOptions);
      })) ??
      (await withStore(
        opts,
        {},
        async (store, storeEngine) =>
          buildKit(storeEngine, await storePaths(store, storeEngine, batch), kitOptions),
        { maxOpenFiles: DUMP_MAX_OPEN_FILES, readOnly: true },
      ));
    bar.done();
    const { shards: _, ...summary } = manifest;
    printJson({ ...summary, out: opts.out, duration_ms: Date.now() - started });
  } finally {
    await engine?.close?.();
  }
}
