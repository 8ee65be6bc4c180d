import type { Command } from "commander";
import { DacdError } from "../../errors.js";
import { makeProof } from "../../escape/proof.js";
import { proofViaDaemon } from "../daemon-escape.js";
import { defaultBatchNote } from "../../inspect/inspect.js";
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

type ProofCliOptions = StoreOptions & { batch?: string; format: string };

/** `dacd proof`: a leaf's authentication path, as dacd-proof/1 or as the base chain takes it. */
export function registerProofCommand(program: Command): void {
  storeOptions(
    program
      .command("proof <object> <id>")
      .description(
        "a leaf's authentication path to its batch's root, as JSON (an empty leaf: non-membership)",
      )
      .option("--batch <n>", DEFAULT_BATCH_HELP)
      .option(
        "--format <format>",
        "dacd (dacd-proof/1) or starkex (the words and call data the base chain's escape verifier takes; vault or position)",
        "dacd",
      ),
  ).action(async (objectArg: string, idArg: string, opts: ProofCliOptions) => {
    const object = parseLeafObject(objectArg);
    const id = parseLeafId(idArg);
    const batch = batchId(opts.batch);
    const format = proofFormat(opts.format, object);
    const answer =
      format === "starkex"
        ? await onchainProof(opts, object, id, batch)
        : await dacdProof(opts, object, id, batch);
    printJson(answer);
    if (batch === undefined) {
      const at = (answer as { batch_id?: number }).batch_id;
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
