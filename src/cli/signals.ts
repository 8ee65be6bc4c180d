import { constants } from "node:os";
import type { Logger } from "../logging.js";

export interface SignalOptions {
  log: Logger;
  /** Starts the graceful shutdown (called once, on the first SIGTERM or SIGINT). */
  stop: () => Promise<void> | void;
  /** What SIGHUP does; without it SIGHUP is logged and ignored. */
  reload?: () => void;
  /** How to end the process on the third signal (tests replace it). */
  exit?: (code: number) => void;
}

/**
 * Signals of a long-running command (`dacd run`, `dacd demo`):
 * - SIGTERM or SIGINT: graceful shutdown (the batch in hand is finished or dropped unsigned, the
 *   store closed, the control socket removed).
 * - The second one while shutting down: logged; the shutdown goes on.
 * - The third: immediate exit with 128 + the signal's number, without waiting. Nothing signed is
 *   lost (every signature is stored with an fsync before it is posted) and LevelDB recovers from
 *   its log; the control socket is removed on the way out.
 * - SIGHUP: `reload` (dacd run re-reads its configuration file), never the default exit.
 * Returns a function that removes the handlers.
 */
export function handleSignals(opts: SignalOptions): () => void {
  const { log } = opts;
  let received = 0;
  const onStop = (signal: NodeJS.Signals): void => {
    received++;
    if (received === 1) {
      log.info({ signal }, "stopping");
      void Promise.resolve()
        .then(() => opts.stop())
        .catch((err: unknown) => log.error({ err }, "error while stopping"));
    } else if (received === 2) {
      log.warn(
        { signal },
        `already stopping; waiting for the shutdown to finish (send ${signal} once more to exit at once)`,
      );
    } else {
      log.error({ signal }, "exiting at once, before the shutdown finished");
      log.flush?.();
      (opts.exit ?? ((code) => process.exit(code)))(128 + (constants.signals[signal] ?? 0));
    }
  };
  const onHup = (): void => {
    if (opts.reload) opts.reload();
    else log.info({ signal: "SIGHUP" }, "SIGHUP ignored (nothing to reload)");
  };
  process.on("SIGTERM", onStop);
  process.on("SIGINT", onStop);
  process.on("SIGHUP", onHup);
  return () => {
    process.off("SIGTERM", onStop);
    process.off("SIGINT", onStop);
    process.off("SIGHUP", onHup);
  };
}
