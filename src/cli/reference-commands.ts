import { loadConfig } from "../config/config.js";
import { DacdError } from "../errors.js";
import { importReference, type ReferenceProgress } from "../escape/reference-load.js";
import { isProfileName, type Heights } from "../model/profile.js";
import { removeOnSignal } from "./remove-on-signal.js";
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
}

/** The store directory and profile: from the configuration, or --db with --profile. */
function target(opts: ReferenceLoadCliOptions): { dataDir: string; profile: string; heights?: Heights } {
  if (opts.config) {
    const c = loadConfig(opts.config);
    // The heights as the daemon reads them (app.ts), so that the store fits its configuration.
    return { dataDir: c.dataDir, profile: c.profile, heights: c.heights };
  }
  if (opts.db && opts.profile) {
    if (!isProfileName(opts.profile))
      throw new DacdError("USAGE", `--profile ${JSON.stringify(opts.profile)} is not a profile name`);
    return { dataDir: opts.db, profile: opts.profile };
  }
  // How the command was called, not what a configuration says: a usage error.
  throw new DacdError("USAGE", "name the store with --config FILE, or --db DIR with --profile");
}

export async function loadFromReference(archive: string, opts: ReferenceLoadCliOptions): Promise<unknown> {
  const { dataDir, profile, heights } = target(opts);
  if (!isProfileName(profile)) throw new DacdError("CONFIG", `unknown profile ${JSON.stringify(profile)}`);
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
    });
    show.done();
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
