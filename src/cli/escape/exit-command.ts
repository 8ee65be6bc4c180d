import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { exitSettings, type ExitSettings } from "../../escape/exit/settings.js";
import { loadConfigFor } from "../config-path.js";
import { exitViaDaemon, keyLeavesViaDaemon } from "../daemon-escape.js";
import { printJson, wantsJson } from "../output.js";
import { parseLeafId, storeDirOf, storeOptions, type StoreOptions } from "../store-options.js";
import { batchId, DEFAULT_BATCH_HELP } from "./batch-options.js";
import { exitText } from "./exit-text.js";
import { withStore } from "./with-store.js";

type ExitCliOptions = StoreOptions & {
  batch?: string;
  key?: string;
  json?: boolean;
  exchange?: string;
  verifier?: string;
  rpcUrl?: string;
};

const OBJECTS: Readonly<Record<string, "vault" | "position">> = {
  vault: "vault",
  vaults: "vault",
  position: "position",
  positions: "position",
};

/** Each RPC call's time-out when the command reads the chain. */
const RPC_TIMEOUT_MS = 30_000;

/** `dacd exit`: the transactions that take a vault's or position's funds out of a frozen exchange. */
export function registerExitCommand(program: Command): void {
  storeOptions(
    program
      .command("exit [object] [id]")
      .description(
        "the exit from the exchange for a vault (spot) or position (perpetual): forced request, freeze, verifyEscape, escape, withdraw, with call data, and where the user stands when the base chain can be read",
      )
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option(
        "--key <starkKey>",
        "instead of OBJECT ID: list the stark key's vaults or positions with their amounts (a walk of the batch's tree)",
      )
      .option(
        "--exchange <address>",
        "the exchange's address (default: escape_contracts.exchange, else starkex_contract_address)",
      )
      .option("--verifier <address>", "the escape verifier's address (default: escape_contracts.verifier)")
      .option(
        "--rpc-url <url>",
        "the base chain's JSON-RPC URL, to read each step's state (default: base_chain_rpc_url)",
      )
      .option("--json", "print JSON (the default when stdout is not a terminal)")
      .option("--no-json", "print the steps for a person"),
  ).action(async (objectArg: string | undefined, idArg: string | undefined, opts: ExitCliOptions) => {
    if (opts.key !== undefined) {
      if (objectArg !== undefined)
        throw new DacdError("USAGE", "dacd exit --key lists the key's ids: give no OBJECT ID with it");
      return keyLeaves(opts);
    }
    if (objectArg === undefined || idArg === undefined)
      throw new DacdError(
        "USAGE",
        "dacd exit takes OBJECT ID (vault or position, and its id), or --key STARK_KEY",
      );
    const object = OBJECTS[objectArg];
    if (object === undefined)
      throw new DacdError(
        "USAGE",
        `${JSON.stringify(objectArg)}: dacd exit takes vault (spot profiles) or position (perpetual)`,
      );
    const id = parseLeafId(idArg);
    const batch = batchId(opts.batch);
    const settings = exitSettingsOf(opts);
    const { makeExitPlan } = await import("../../escape/exit/from-store.js");
    const contracts = { exchange: settings.exchange, verifier: settings.verifier };
    const plan =
      (await exitViaDaemon(storeDirOf(opts).dir, object, id, batch, contracts)) ??
      (await withStore(
        opts,
        {},
        (store, engine) =>
          makeExitPlan(store, engine, object, id, batch, {
            exchange: lower(settings.exchange),
            verifier: lower(settings.verifier),
          }),
        { readOnly: true },
      ));
    const { withChainState } = await import("../../chain/exit-reader.js");
    const full =
      settings.rpcUrl !== undefined && plan.exchange !== null
        ? await withChainState(plan, settings.rpcUrl, RPC_TIMEOUT_MS)
        : plan;
    if (wantsJson(opts.json)) printJson(full);
    else process.stdout.write(exitText(full));
  });
}

/** `dacd exit --key`: the key's leaves, from the running daemon or the store. */
async function keyLeaves(opts: ExitCliOptions): Promise<void> {
  const { leavesOfKey, parseStarkKey } = await import("../../escape/exit/by-key.js");
  let key: bigint;
  try {
    key = parseStarkKey(opts.key!);
  } catch (err) {
    throw new DacdError("USAGE", `--key: ${(err as Error).message}`);
  }
  const batch = batchId(opts.batch);
  const found =
    (await keyLeavesViaDaemon(storeDirOf(opts).dir, opts.key!, batch)) ??
    (await withStore(opts, {}, (store, engine) => leavesOfKey(store, engine, key, batch), {
      readOnly: true,
    }));
  if (wantsJson(opts.json)) return printJson(found);
  const lines = [
    `stark key ${found.stark_key} at batch ${found.batch_id}: ${found.leaves.length} ${found.object}${found.leaves.length === 1 ? "" : "s"}${found.truncated ? " (the first ones only)" : ""}`,
    ...found.leaves.map((l) =>
      found.object === "vault"
        ? `  vault ${l.id}: ${l.quantized_amount} (quantized) of asset ${l.asset_id}`
        : `  position ${l.id}: collateral ${l.collateral_balance}, ${l.n_assets} assets`,
    ),
  ];
  if (found.leaves.length > 0)
    lines.push(`dacd exit ${found.object} ID shows the transactions for one of them`);
  process.stdout.write(lines.join("\n") + "\n");
}

const lower = (a: string | undefined): `0x${string}` | null =>
  a === undefined ? null : (a.toLowerCase() as `0x${string}`);

/** The flags, over the configuration's (read unless --db names the store). */
function exitSettingsOf(opts: ExitCliOptions): ExitSettings {
  for (const [flag, v] of [
    ["--exchange", opts.exchange],
    ["--verifier", opts.verifier],
  ] as const)
    if (v !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(v))
      throw new DacdError("USAGE", `${flag} ${JSON.stringify(v)} is not an address (0x and 40 hex digits)`);
  if (opts.rpcUrl !== undefined && !/^https?:\/\//.test(opts.rpcUrl))
    throw new DacdError("USAGE", `--rpc-url ${JSON.stringify(opts.rpcUrl)} is not an http(s) URL`);
  const fromConfig = opts.db === undefined ? exitSettings(loadConfigFor(opts.config)) : {};
  return {
    ...fromConfig,
    ...(opts.exchange === undefined ? {} : { exchange: opts.exchange }),
    ...(opts.verifier === undefined ? {} : { verifier: opts.verifier }),
    ...(opts.rpcUrl === undefined ? {} : { rpcUrl: opts.rpcUrl }),
  };
}
