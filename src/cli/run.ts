import { Option, type Command } from "commander";
import { loadConfig, LOG_LEVELS, type Config } from "../config/config.js";
import type { Logger, LogFormat } from "../logging.js";
import { CONFIG_HELP, loadConfigFor } from "./config-path.js";
import { handleSignals } from "./signals.js";
import { runtimeSettings } from "../config/runtime-settings.js";

interface RunOptions {
  config?: string;
  debug?: boolean;
  logLevel?: string;
  logFormat?: LogFormat;
  allowInsecureKeyFile?: boolean;
  shadow?: boolean;
}

/**
 * `dacd run`: the service. Stops cleanly on SIGTERM/SIGINT (signals.ts), re-reads its
 * configuration on SIGHUP; setup problems are one line and exit 2/78.
 */
export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run the committee member: poll, verify, store, sign and post every batch")
    .option("--config <file>", CONFIG_HELP)
    .addOption(
      new Option("--log-level <level>", "log level (default: the configuration's log_level, info)").choices(
        LOG_LEVELS,
      ),
    )
    .addOption(
      new Option(
        "--log-format <format>",
        "json: one JSON line per event; pretty: human-readable (default: log_format, json)",
      ).choices(["json", "pretty"]),
    )
    .option("--debug", "log at debug level, with each batch's per-tree detail (same as --log-level debug)")
    .option(
      "--allow-insecure-key-file",
      "accept a key or password file readable by group or others (logs a warning)",
    )
    .option("--shadow", "shadow mode (as `mode: shadow`): verify, store and sign every batch, post nothing")
    .action(async (opts: RunOptions) => {
      const loaded = loadConfigFor(opts.config);
      const config = opts.shadow ? { ...loaded, mode: "shadow" as const } : loaded;
      // The daemon's modules are loaded only by the command that runs it.
      const [{ startDaemon }, { createLogger }] = await Promise.all([
        import("../app.js"),
        import("../logging.js"),
      ]);
      const levelFlag = opts.logLevel ?? (opts.debug ? "debug" : undefined);
      const log = createLogger({
        level: levelFlag ?? config.logLevel,
        format: opts.logFormat ?? config.logFormat,
        journalStream: runtimeSettings().journalStream,
      });
      // Until the daemon is up a SIGHUP must not end the process either (Node's default does).
      const ignoreHup = (): void => log.info({ signal: "SIGHUP" }, "SIGHUP ignored while starting");
      process.on("SIGHUP", ignoreHup);
      let daemon;
      try {
        daemon = await startDaemon(config, { log, allowInsecureKeyFile: opts.allowInsecureKeyFile });
      } finally {
        process.off("SIGHUP", ignoreHup);
      }
      const running = daemon;
      const dispose = handleSignals({
        log,
        stop: () => running.stop(),
        reload: () => reload(config, log, levelFlag !== undefined),
      });
      try {
        await running.done;
      } finally {
        await running.stop();
        dispose();
        log.info("dacd stopped");
        log.flush?.();
      }
    });
}

/** Config fields compared on SIGHUP (the rest is bookkeeping). */
const IGNORED = new Set<keyof Config>(["configPath", "warnings"]);

/**
 * SIGHUP: re-reads the configuration file. `log_level` takes effect at once (unless --log-level or
 * --debug fixed it); any other change is reported as needing a restart. An unreadable or invalid
 * file is an error in the log and the running configuration stays.
 */
function reload(running: Config, log: Logger, levelFixed: boolean): void {
  let next: Config;
  try {
    next = loadConfig(running.configPath);
  } catch (err) {
    log.error(
      { signal: "SIGHUP", error: (err as Error).message },
      "configuration not reloaded: the file is invalid; the running configuration stays",
    );
    return;
  }
  const changed = (Object.keys(next) as (keyof Config)[]).filter(
    (k) => !IGNORED.has(k) && JSON.stringify(next[k]) !== JSON.stringify(running[k]),
  );
  const applied: string[] = [];
  if (changed.includes("logLevel") && !levelFixed) {
    log.level = next.logLevel;
    running.logLevel = next.logLevel;
    applied.push("log_level");
  }
  const restart = changed.filter((k) => k !== "logLevel").map(snakeCase);
  log.info({ signal: "SIGHUP", applied, restart_needed: restart }, reloadMessage(restart));
}

/** The SIGHUP log line: which changed keys wait for a restart. */
export function reloadMessage(restartNeeded: readonly string[]): string {
  if (restartNeeded.length === 0) return "configuration re-read";
  const verb = restartNeeded.length === 1 ? "takes" : "take";
  return `configuration re-read; ${restartNeeded.join(", ")} ${verb} effect after a restart`;
}

const snakeCase = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
