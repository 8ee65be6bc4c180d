import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import type { PathSource } from "../../escape/kit/source.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { loadConfigFor } from "../config-path.js";
import { kitViaDaemon } from "../daemon-escape.js";
import { printJson } from "../output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { batchId, DEFAULT_BATCH_HELP } from "./batch-options.js";
import { progressLine, secondsSince } from "./progress-line.js";
import { withStore } from "./with-store.js";

type KitCliOptions = StoreOptions & {
  out: string;
  batch?: string;
  format: string;
  chainId?: string;
  exchange?: string;
  verifier?: string;
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** `dacd escape-kit`: every escape proof of a batch as static files, with the escape page. */
export function registerEscapeKitCommand(program: Command): void {
  storeOptions(
    program
      .command("escape-kit")
      .description(
        "every non-empty vault (spot) or position (perpetual) of a batch as static files for any web server, CDN or IPFS, with the escape page and a manifest: format 2 (shards of leaves with their paths, checked and turned into proofs by the page; docs/escape-kit-format.md) or format 1 (one proof file a leaf)",
      )
      .requiredOption("--out <dir>", "output directory (created; must be absent or empty)")
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option("--format <n>", "2 (shards, the default) or 1 (one JSON proof file a leaf)", "2")
      .option("--chain-id <n>", "format 2: the base chain's id, for the page")
      .option("--exchange <address>", "format 2: the exchange contract (default: escape_contracts.exchange)")
      .option("--verifier <address>", "format 2: the escape verifier (default: escape_contracts.verifier)"),
  ).action(buildEscapeKit);
}

function kitFormat(opts: KitCliOptions): 1 | 2 {
  if (opts.format !== "1" && opts.format !== "2")
    throw new DacdError("USAGE", `--format ${JSON.stringify(opts.format)}: 1 or 2`);
  const format = opts.format === "1" ? 1 : 2;
  if (format === 1 && (opts.chainId ?? opts.exchange ?? opts.verifier) !== undefined)
    throw new DacdError("USAGE", "--chain-id, --exchange and --verifier are for --format 2");
  if (opts.chainId !== undefined && !/^[1-9][0-9]{0,15}$/.test(opts.chainId))
    throw new DacdError("USAGE", `--chain-id ${JSON.stringify(opts.chainId)}: a positive integer`);
  for (const name of ["exchange", "verifier"] as const)
    if (opts[name] !== undefined && !ADDRESS.test(opts[name]))
      throw new DacdError("USAGE", `--${name} ${JSON.stringify(opts[name])}: 0x and 40 hex digits`);
  return format;
}

async function buildEscapeKit(opts: KitCliOptions): Promise<void> {
  const batch = batchId(opts.batch);
  const format = kitFormat(opts);
  const bar = progressLine();
  const started = Date.now();
  const contracts = opts.db === undefined ? loadConfigFor(opts.config).escapeContracts : undefined;
  // Loaded only here: the kit's encoder and the ABI code are not needed by any other command.
  const { storePaths } = await import("../../escape/kit/source.js");
  const { checkKitOut } = await import("../../escape/kit/kit-dir.js");
  const progress = (n: number): void =>
    bar.update(`escape kit: ${n} ${format === 1 ? "proofs" : "leaves"}, ${secondsSince(started)} s`);
  let build: (engine: HashEngine, source: PathSource) => Promise<object>;
  if (format === 1) {
    const { buildKit } = await import("../../escape/kit/build.js");
    build = async (engine, source) => {
      const { shards: _, ...summary } = await buildKit(engine, source, {
        out: opts.out,
        contracts,
        progress,
      });
      return summary;
    };
  } else {
    const { buildKit2 } = await import("../../escape/kit/v2/build.js");
    const exchange = opts.exchange ?? contracts?.exchange;
    const verifier = opts.verifier ?? contracts?.verifier;
    build = async (engine, source) => {
      const m = await buildKit2(engine, source, {
        out: opts.out,
        ...(opts.chainId === undefined ? {} : { chainId: Number(opts.chainId) }),
        ...(exchange === undefined ? {} : { exchange }),
        ...(verifier === undefined ? {} : { verifier }),
        progress,
      });
      const { shards, index, roots: _r, heights: _h, ...summary } = m;
      return { ...summary, shards: shards.length, index_files: Object.keys(index.files).length };
    };
  }
  // Refused before any walk: an --out that is a symbolic link, a file or a non-empty directory.
  await checkKitOut(opts.out);
  const { commandEngine } = await import("../command-engine.js");
  // Beside a running daemon this process builds the kit from the paths the daemon walks.
  let engine: HashEngine | undefined;
  try {
    const summary =
      (await kitViaDaemon(storeDirOf(opts).dir, batch, (source) => {
        engine = commandEngine();
        return build(engine, source);
      })) ??
      (await withStore(
        opts,
        {},
        async (store, storeEngine) => build(storeEngine, await storePaths(store, storeEngine, batch)),
        { wholeWalk: true, readOnly: true },
      ));
    bar.done();
    printJson({ ...summary, out: opts.out, duration_ms: Date.now() - started });
  } finally {
    await engine?.close?.();
  }
}
