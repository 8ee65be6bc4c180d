import type { Command } from "commander";
import { startDaemon } from "../app.js";
import { loadConfig } from "../config/config.js";
import { createLogger } from "../logging.js";

interface RunOptions {
  config: string;
  debug?: boolean;
  allowInsecureKeyFile?: boolean;
}

/** `dacd run`: the service. Stops cleanly on SIGTERM/SIGINT; setup problems are one line and exit 1/78. */
export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run the committee member: poll, verify, store, sign and post every batch")
    .requiredOption("--config <file>", "YAML configuration file")
    .option("--debug", "human-readable logs with per-tree detail")
    .option(
      "--allow-insecure-key-file",
      "accept a key or password file readable by group or others (logs a warning)",
    )
    .action(async (opts: RunOptions) => {
      const config = loadConfig(opts.config);
      const log = createLogger({ level: opts.debug ? "debug" : config.logLevel, pretty: opts.debug });
      const daemon = await startDaemon(config, { log, allowInsecureKeyFile: opts.allowInsecureKeyFile });
      const onSignal = (sig: NodeJS.Signals): void => {
        log.info({ signal: sig }, "stopping");
        void daemon.stop();
      };
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
      try {
        await daemon.done;
      } finally {
        await daemon.stop();
      }
      log.info("dacd stopped");
      log.flush?.();
    });
}
