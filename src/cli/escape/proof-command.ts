import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { proofViaDaemon } from "../daemon-escape.js";
import { frozenBatchOf } from "../inspect-commands.js";
import { printJson } from "../output.js";
import {
  parseLeafId,
  parseLeafObject,
  storeDirOf,
  storeOptions,
  type StoreOptions,
} from "../store-options.js";
import { batchId, DEFAULT_BATCH_HELP } from "./batch-options.js";
import { withStore } from "./with-store.js";

type ProofCliOptions = StoreOptions & { batch?: string; format: string; kit?: string; starkKey?: string };

/** `dacd proof`: a leaf's authentication path, as dacd-proof/1 or as the base chain takes it. */
export function registerProofCommand(program: Command): void {
  storeOptions(
    program
      .command("proof <object> [id]")
      .description(
        "a leaf's authentication path to its batch's root, as JSON (an empty leaf: non-membership)",
      )
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option(
        "--format <format>",
        "dacd (dacd-proof/1) or starkex (the words and call data the base chain's escape verifier takes; vault or position)",
        "dacd",
      )
      .option(
        "--kit <dir>",
        "with --format starkex: from a format-2 escape kit alone (its files checked, the root recomputed), not the store",
      )
      .option(
        "--stark-key <key>",
        "with --kit, instead of an id: the proofs of every leaf of this stark (public) key",
      ),
  ).action(async (objectArg: string, idArg: string | undefined, opts: ProofCliOptions) => {
    const object = parseLeafObject(objectArg);
    const batch = batchId(opts.batch);
    const format = proofFormat(opts.format, object);
    if (opts.starkKey !== undefined && (opts.kit === undefined || idArg !== undefined))
      throw new DacdError("USAGE", "--stark-key: with --kit, and no id");
    if (opts.kit !== undefined) {
      if (format !== "starkex") throw new DacdError("USAGE", "--kit: with --format starkex");
      if (batch !== undefined) throw new DacdError("USAGE", "--kit: a kit holds one batch; no --batch");
      if (opts.starkKey !== undefined && !/^0x[0-9a-fA-F]{1,64}$/.test(opts.starkKey))
        throw new DacdError(
          "USAGE",
          `--stark-key ${JSON.stringify(opts.starkKey)}: 0x and up to 64 hex digits`,
        );
      if (opts.starkKey === undefined && idArg === undefined)
        throw new DacdError("USAGE", "proof --kit: the leaf's id (or --stark-key) is missing");
      const what = opts.starkKey === undefined ? { id: parseLeafId(idArg!) } : { key: opts.starkKey };
      printJson(await kitProof(opts.kit, object, what));
      return;
    }
    if (idArg === undefined) throw new DacdError("USAGE", "proof: the leaf's id is missing");
    const id = parseLeafId(idArg);
    const answer =
      format === "starkex"
        ? await onchainProof(opts, object, id, batch)
        : await dacdProof(opts, object, id, batch);
    printJson(answer);
    if (batch === undefined) {
      const at = (answer as { batch_id?: number }).batch_id;
      const { defaultBatchNote } = await import("../../inspect/inspect.js");
      const note = at === undefined ? undefined : defaultBatchNote("proof", at, await frozenBatchOf(opts));
      if (note) process.stderr.write(`dacd: ${note}\n`);
    }
  });
}

async function dacdProof(
  opts: StoreOptions,
  object: string,
  id: string,
  batch: number | undefined,
): Promise<unknown> {
  const { makeProof } = await import("../../escape/proof.js");
  return (
    (await proofViaDaemon(storeDirOf(opts).dir, object, id, batch)) ??
    (await withStore(opts, {}, (store, engine) => makeProof(store, engine, object, id, batch), {
      readOnly: true,
    }))
  );
}

async function onchainProof(
  opts: StoreOptions,
  object: string,
  id: string,
  batch: number | undefined,
): Promise<unknown> {
  // Loaded only here: the ABI encoder is not needed by any other command.
  const { makeOnchainProof } = await import("../../escape/onchain/from-proof.js");
  return (
    (await proofViaDaemon(storeDirOf(opts).dir, object, id, batch, "starkex")) ??
    (await withStore(opts, {}, (store, engine) => makeOnchainProof(store, engine, object, id, batch), {
      readOnly: true,
    }))
  );
}

/**
 * `dacd proof vault|position ID --format starkex --kit DIR` (or `--stark-key KEY`): the kit reader
 * the page uses, reading files, hashing with the command's engine.
 */
async function kitProof(
  dir: string,
  object: string,
  what: { id: string } | { key: string },
): Promise<unknown> {
  const { readFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  const { openKit, KitRefused } = await import("../../escape/kit/v2/reader.js");
  const { pedersen } = await import("../../escape/onchain/path.js");
  const { commandEngine } = await import("../command-engine.js");
  const engine = commandEngine();
  try {
    const kit = await openKit(async (path) => new Uint8Array(await readFile(join(dir, path))), {
      pedersen: (x, y) => pedersen(engine, x, y),
    });
    const { ONCHAIN_OBJECTS } = await import("../../escape/onchain/from-proof.js");
    const leaf = ONCHAIN_OBJECTS[object];
    if (kit.manifest.leaf !== leaf)
      throw new DacdError("USAGE", `the kit in ${dir} holds ${kit.manifest.tree}s, not ${object}s`);
    return "id" in what ? await kit.proof(what.id) : await kit.proofsOfKey(what.key);
  } catch (err) {
    if (err instanceof KitRefused) throw new DacdError("BAD_INPUT", `the kit in ${dir}: ${err.message}`);
    throw err;
  } finally {
    await engine.close?.();
  }
}

/** `dacd proof --format`: starkex only for the objects the base chain's escape verifiers take. */
function proofFormat(format: string, object: string): "dacd" | "starkex" {
  if (format !== "dacd" && format !== "starkex")
    throw new DacdError("USAGE", `--format ${JSON.stringify(format)}: dacd or starkex`);
  if (format === "starkex" && !["vault", "vaults", "position", "positions"].includes(object))
    throw new DacdError(
      "USAGE",
      `--format starkex: ${object} has no on-chain escape; only vault (spot profiles) and position (perpetual) do`,
    );
  return format;
}
