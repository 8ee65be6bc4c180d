import { readFile } from "node:fs/promises";
import { loadConfig, type Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import { parseBatchInfo, type StatedBatch } from "../escape/reference-format.js";
import { importReference, type ReferenceProgress } from "../escape/reference-load.js";
import { ordersMissingText } from "../escape/reference-store.js";
import { inBatchRange, MAX_BATCH_NUMBER } from "../model/batch-range.js";
import { isProfileName, makeProfile, TREES, type Heights } from "../model/profile.js";
import {
  AvailabilityGateway,
  FeederGateway,
  type HttpClientOptions,
} from "../poller/gateway/gateway-client.js";
import { validateRollupOf } from "../service/startup-checks.js";
import { toHex64 } from "../util/bytes.js";
import { child, readInteger, readRoot, required, type At } from "../wire/fields.js";
import { removeOnSignal } from "./remove-on-signal.js";
import { parseBatchId } from "./store-options.js";
import { commandEngine } from "./command-engine.js";

/**
 * `dacd load --from-reference` and `dacd dump --format reference`: the reference member's state
 * archive in and out (docs/reference-member.md).
 */

export interface ReferenceLoadCliOptions {
  readonly config?: string;
  readonly db?: string;
  readonly profile?: string;
  readonly force?: boolean;
  /** The archive's batch, for an archive without info.json (the reference member's own). */
  readonly batch?: string;
  /** A JSON file stating the batch's roots and sequence number (reference-format.ts, parseBatchInfo). */
  readonly batchInfo?: string;
}

/** The store directory and profile: from the configuration, or --db with --profile. */
function target(opts: ReferenceLoadCliOptions): {
  dataDir: string;
  profile: string;
  heights?: Heights;
  config?: Config;
} {
  if (opts.config) {
    const c = loadConfig(opts.config);
    // The heights as the daemon reads them (app.ts), so that the store fits its configuration.
    return { dataDir: c.dataDir, profile: c.profile, heights: c.heights, config: c };
  }
  if (opts.db && opts.profile) {
    if (!isProfileName(opts.profile))
      throw new DacdError("USAGE", `--profile ${JSON.stringify(opts.profile)} is not a profile name`);
    if (makeProfile(opts.profile).variant !== "G")
      throw new DacdError(
        "USAGE",
        `--profile ${opts.profile}: the reference member's state archive holds vaults and orders, a spot member's state (spot or spot-v4.0)`,
      );
    return { dataDir: opts.db, profile: opts.profile };
  }
  // How the command was called, not what a configuration says: a usage error.
  throw new DacdError("USAGE", "name the store with --config FILE, or --db DIR with --profile");
}

export async function loadFromReference(archive: string, opts: ReferenceLoadCliOptions): Promise<unknown> {
  const { dataDir, profile, heights, config } = target(opts);
  if (!isProfileName(profile)) throw new DacdError("CONFIG", `unknown profile ${JSON.stringify(profile)}`);
  const stated = await statedBatch(opts, config);
  const engine = commandEngine({
    threads: "auto",
  });
  const started = Date.now();
  const show = progressReporter(started);
  let building: string | null | undefined;
  const unhandle = removeOnSignal("the import", () => building);
  try {
    const result = await importReference(engine, {
      archive,
      dataDir,
      profile,
      heights,
      force: opts.force === true,
      progress: show.update,
      onBuilding: (dir) => (building = dir),
      stated,
    });
    show.done();
    if (result.orders_missing) process.stderr.write(`dacd: warning: ${ordersMissingText(result.batch_id)}\n`);
    return { ...result, data_dir: dataDir, duration_ms: Date.now() - started };
  } catch (err) {
    show.done();
    throw err;
  } finally {
    // Moved into place or removed by now: a late signal has nothing to remove.
    building = undefined;
    unhandle();
    await engine.close?.();
  }
}

/**
 * The batch named with --batch: its roots and sequence number from --batch-info FILE, or else from
 * the gateways of the configuration (get_batch_data's roots, the feeder's sequence number).
 */
async function statedBatch(
  opts: ReferenceLoadCliOptions,
  config: Config | undefined,
): Promise<StatedBatch | undefined> {
  if (opts.batch === undefined) {
    if (opts.batchInfo !== undefined)
      throw new DacdError("USAGE", "--batch-info FILE needs --batch N, the batch it states");
    return undefined;
  }
  const batchId = parseBatchId(opts.batch);
  if (opts.batchInfo !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.batchInfo, "utf8");
    } catch (err) {
      throw new DacdError(
        "BAD_INPUT",
        `cannot read --batch-info ${opts.batchInfo}: ${(err as Error).message}`,
      );
    }
    const stated = parseBatchInfo(text, opts.batchInfo, batchId);
    if (config?.feederGatewayUrl) {
      const feeder = new FeederGateway({ ...httpOf(config, config.feederGatewayUrl), variant: "G" });
      try {
        await crossCheckSequence(stated, feeder, (m) => process.stderr.write(`dacd: warning: ${m}\n`));
      } finally {
        await feeder.close();
      }
    }
    return stated;
  }
  if (!config)
    throw new DacdError(
      "USAGE",
      `--batch ${batchId} needs the batch's roots and sequence number: --batch-info FILE, or --config (its gateways state them)`,
    );
  return statedByGateway(config, batchId);
}

/** Batch N as the operator's gateways state it: the roots of get_batch_data, the feeder's sequence number. */
async function statedByGateway(c: Config, batchId: number): Promise<StatedBatch> {
  if (!c.feederGatewayUrl)
    throw new DacdError(
      "CONFIG",
      `batch ${batchId}'s sequence number: get_batch_data does not state it and feeder_gateway_url (whose get_batch_info does) is not set; set it, or give --batch-info FILE`,
    );
  const http = (baseUrl: string): HttpClientOptions => httpOf(c, baseUrl);
  const availability = new AvailabilityGateway(http(c.availabilityGatewayUrl));
  const feeder = new FeederGateway({ ...http(c.feederGatewayUrl), variant: "G" });
  try {
    const update = await availability.getBatchData(batchId, validateRollupOf(c));
    if (update === null)
      throw new DacdError(
        "GATEWAY",
        `get_batch_data: the gateway has no batch ${batchId} yet (update null)`,
        {
          batchId,
        },
      );
    const at: At = { batchId, path: "" };
    const root = (field: string): string => toHex64(readRoot(required(update, field, at), child(at, field)));
    const info = await feeder.getBatchInfo(batchId);
    const feederAt: At = { batchId, path: "get_batch_info" };
    return {
      batch_id: batchId,
      batch_info: {
        merkle_roots: {
          vault: root(TREES.vault.gatewayRoot),
          order: root(TREES.order.gatewayRoot),
          ...(update[TREES.rollup_vault.gatewayRoot] === undefined
            ? {}
            : { rollup_vault: root(TREES.rollup_vault.gatewayRoot) }),
        },
        sequence_number: sequenceOf(info, feederAt),
      },
      source: "the gateway",
    };
  } finally {
    await Promise.all([availability.close(), feeder.close()]);
  }
}

function httpOf(c: Config, baseUrl: string): HttpClientOptions {
  return {
    baseUrl,
    timeoutMs: c.httpRequestTimeoutS * 1000,
    deadlineMs: c.httpRequestDeadlineS * 1000,
    maxBodyBytes: c.maxResponseBytes,
    tls: c.certificatesPath ? { certificatesPath: c.certificatesPath } : undefined,
  };
}

/** get_batch_info's sequence number, in the range dacd takes (a larger one would fail every batch after it). */
function sequenceOf(info: Record<string, unknown>, at: At): number {
  const seq = readInteger(required(info, "sequence_number", at), child(at, "sequence_number"), 0);
  if (!inBatchRange(seq))
    throw new DacdError(
      "BAD_INPUT",
      `get_batch_info, field sequence_number: ${seq} is out of range (0 … ${MAX_BATCH_NUMBER})`,
      { batchId: at.batchId },
    );
  return seq;
}

/**
 * A sequence number stated in a file is checked with the feeder's for the same batch when the
 * feeder answers: a wrong one would be signed into every claim after the import (the member signs
 * N + 1 with S + 1) and, once posted, could not be taken back. A feeder that cannot be reached is
 * warned about, not waited for (the file is what the operator chose).
 */
export async function crossCheckSequence(
  stated: StatedBatch,
  feeder: Pick<FeederGateway, "getBatchInfo">,
  warn: (message: string) => void,
): Promise<void> {
  const batchId = stated.batch_id;
  let info: Record<string, unknown>;
  try {
    info = await feeder.getBatchInfo(batchId);
  } catch (err) {
    warn(
      `batch ${batchId}: the sequence number of ${stated.source} could not be checked with the feeder gateway ` +
        `(${(err as Error).message.split("\n")[0]}); check it with the operator`,
    );
    return;
  }
  const feederSeq = sequenceOf(info, { batchId, path: "get_batch_info" });
  if (feederSeq !== stated.batch_info.sequence_number)
    throw new DacdError(
      "BAD_INPUT",
      `${stated.source}, field sequence_number: ${stated.batch_info.sequence_number}, but the feeder gateway's ` +
        `get_batch_info states ${feederSeq} for batch ${batchId}; nothing was imported: find out which is right`,
      { batchId },
    );
}

const MB = 1e6;
const LOG_EVERY_MS = 5000;

/**
 * Progress of an import: on a terminal one line redrawn (rows, bytes, rate, time left while
 * reading); otherwise a line every few seconds, for logs.
 */
export function progressReporter(started: number): {
  update: (p: ReferenceProgress) => void;
  done: () => void;
} {
  const tty = process.stderr.isTTY === true;
  // Logs: the first line after a few seconds, so a short import prints only its result.
  let last = tty ? 0 : started;
  let shown = false;
  const text = (p: ReferenceProgress): string => {
    const secs = (Date.now() - started) / 1000;
    if (p.phase === "reading" && p.done !== undefined && p.total !== undefined) {
      const rate = p.done / Math.max(secs, 0.001);
      const left = rate > 0 ? Math.round((p.total - p.done) / rate) : undefined;
      return (
        `reading: ${p.count.toLocaleString("en")} rows, ${(p.done / MB).toFixed(1)} of ${(p.total / MB).toFixed(1)} MB ` +
        `(${(rate / MB).toFixed(1)} MB/s), ${left === undefined ? "?" : left} s left of reading, ${secs.toFixed(0)} s so far`
      );
    }
    if (p.phase === "writing")
      return `writing: ${p.count.toLocaleString("en")} of ${(p.total ?? 0).toLocaleString("en")} records in key order, ${secs.toFixed(0)} s so far`;
    return `building the ${p.phase}: ${p.count.toLocaleString("en")} node records, ${secs.toFixed(0)} s so far`;
  };
  return {
    update: (p) => {
      const now = Date.now();
      if (now - last < (tty ? 200 : LOG_EVERY_MS)) return;
      last = now;
      if (tty) {
        shown = true;
        process.stderr.write(`\r\x1b[K${text(p)}`);
      } else process.stderr.write(`dacd load: ${text(p)}\n`);
    },
    done: () => {
      if (shown) process.stderr.write("\r\x1b[K");
    },
  };
}
