import { readFile } from "node:fs/promises";
import { Option, type Command } from "commander";
import { DacdError, isDacdError } from "../errors.js";
import { openStoreAt } from "./store-options.js";
import { isProfileName, makeProfile } from "../model/profile.js";
import { HASH_ENGINES } from "../model/engines.js";
import { runtimeSettings } from "../config/runtime-settings.js";

/**
 * The replay's node cache: up to 2^19 positions per tree (about 110 bytes a node). The daemon sizes
 * its own from the memory plan (src/config/memory-plan.ts); an offline replay has no budget to plan.
 */
const REPLAY_CACHE_LEVELS = 19;

interface ReplayOptions {
  profile: string;
  keyFile: string;
  passwordFile?: string;
  input: string;
  db: string;
  validateOrders: boolean;
  validateRollup: boolean;
  engine?: string;
}

/**
 * `dacd replay`: the verifier end to end, offline. Element N of the input is the get_batch_data
 * body for batch N; each batch is verified, stored and signed exactly as the daemon would, and
 * reported as one JSON line. Batches already in the store are reported from it, not redone.
 */
export function registerReplayCommand(program: Command): void {
  program
    .command("replay")
    .description("verify, store and sign a recorded chain of get_batch_data answers, one JSON line per batch")
    .requiredOption("--profile <profile>", "perpetual | spot | spot-v4.0")
    .requiredOption("--key-file <file>", "member private key: raw hex or a V3 keystore")
    .option("--password-file <file>", "password of a keystore key file")
    .requiredOption("--input <file>", "JSON array; element N is the get_batch_data body for batch N")
    .requiredOption("--db <dir>", "store directory (the same layout as the daemon's data_dir)")
    .option("--no-validate-orders", "take the stated order root as given")
    .option("--no-validate-rollup", "do not keep or check the rollup vault tree")
    .addOption(new Option("--engine <name>", "hash engine").choices(HASH_ENGINES))
    .action(async (opts: ReplayOptions) => {
      process.exitCode = await replay(opts);
    });
}

async function replay(opts: ReplayOptions): Promise<number> {
  if (!isProfileName(opts.profile))
    throw new DacdError(
      "USAGE",
      `--profile must be perpetual, spot or spot-v4.0; got ${JSON.stringify(opts.profile)}`,
    );
  const profile = makeProfile(opts.profile);
  const validateRollup = profile.rollup ? opts.validateRollup : undefined;
  const settings = runtimeSettings();
  // The verifier's modules are loaded only when a replay runs, not for every dacd command.
  const [
    { createSigner },
    { loadPrivateKey },
    { createEngine },
    { createTopNodeCache },
    { bindVerifyContext },
    { parseVerifySignAndStore },
    { chooseTreeWalk },
    { nativeNodeCacheAddon },
  ] = await Promise.all([
    import("../signer/create-signer.js"),
    import("../signer/key-file.js"),
    import("../verifier/hash/select.js"),
    import("../verifier/trees/cache/node-cache.js"),
    import("../verifier/verify-batch.js"),
    import("../poller/member/batch-stages.js"),
    import("../verifier/trees/update/tree-walk.js"),
    import("../verifier/trees/native/native-node-cache.js"),
  ]);
  const key = await loadPrivateKey(opts.keyFile, {
    passwordPath: opts.passwordFile,
    credentialsDirectory: settings.credentialsDirectory,
    // An offline tool run on test keys: warn about loose permissions instead of refusing.
    allowInsecurePermissions: true,
    warn: (m) => process.stderr.write(`warning: ${m}\n`),
  });
  const signer = createSigner("ethereum", key);
  const bodies = await readInput(opts.input);
  const engine = await createEngine(settings.hashEngine ?? opts.engine, {
    warn: (m) => process.stderr.write(`${m}\n`),
    kernel: settings.hashKernel,
  });
  const store = await openStoreAt(opts.db);
  let failed = 0;
  try {
    const ctx = await bindVerifyContext(store, {
      profile,
      engine,
      signer,
      options: { validateOrders: opts.validateOrders, validateRollup },
      topNodes: createTopNodeCache(REPLAY_CACHE_LEVELS, nativeNodeCacheAddon(settings.nodeCache)),
      treeWalk: chooseTreeWalk(settings.treeWalk),
    });
    for (let batchId = 0; batchId < bodies.length; batchId++) {
      try {
        const update = updateOf(bodies[batchId], batchId);
        const { record } = await parseVerifySignAndStore(ctx, batchId, update);
        const line = {
          batch_id: record.batch_id,
          sequence_number: record.sequence_number,
          roots: record.roots,
          claim_hash: record.claim_hash,
          signature: record.signature,
          member_key: record.member_key,
        };
        process.stdout.write(JSON.stringify(line) + "\n");
      } catch (err) {
        if (!isDacdError(err) || err.code === "STORE") throw err;
        failed++;
        process.stdout.write(JSON.stringify({ batch_id: batchId, error: err.message }) + "\n");
      }
    }
  } finally {
    await store.close();
    await engine.close?.();
  }
  return failed > 0 ? 1 : 0;
}

async function readInput(path: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new DacdError("CONFIG", `cannot read ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new DacdError("BAD_INPUT", `${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed))
    throw new DacdError("BAD_INPUT", `${path} must hold a JSON array of get_batch_data bodies`);
  return parsed;
}

/** The `update` of one get_batch_data body; a body without one is bad input for that batch. */
export function updateOf(body: unknown, batchId: number): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body) || !("update" in body)) {
    throw new DacdError("BAD_INPUT", "the body is not an object with an `update` key", {
      batchId,
      field: "update",
    });
  }
  const update = (body as { update: unknown }).update;
  if (update === null)
    throw new DacdError("BAD_INPUT", "the batch is not ready (update is null)", { batchId, field: "update" });
  return update;
}
