import { renameSync, rmSync } from "node:fs";
import { constants } from "node:os";

const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

/**
 * While a command builds a directory that is useless unless finished (an import's
 * `.<dir>.importing`), a stopping signal removes it before the process ends, so that Ctrl-C or
 * `systemctl stop` leaves nothing behind. The exit status is 128 + the signal's number, as for a
 * process the signal killed. `dir()` names the directory once there is one to remove, or is null
 * while the finished work is moved into place: a signal then is noted and the command completes
 * (an exit between two renames could leave neither the old store nor the new one in place).
 * Returns a function that removes the handlers.
 */
export function removeOnSignal(what: string, dir: () => string | null | undefined): () => void {
  const onSignal = (signal: NodeJS.Signals): void => {
    const d = dir();
    if (d === null) {
      process.stderr.write(`dacd: ${signal} while ${what} is moved into place; finishing first\n`);
      return;
    }
    if (d !== undefined) {
      try {
        // Synchronous: nothing else on this thread runs before the exit. LevelDB's background
        // thread and the import's writer threads still do, and create files by the directory's
        // path: renamed away first, it takes no new files while it is removed.
        const doomed = `${d}.removing-${process.pid}`;
        let target = d;
        try {
          renameSync(d, doomed);
          target = doomed;
        } catch {
          // Not there (nothing to remove) or not renamable: removed where it is.
        }
        rmSync(target, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
      } catch (err) {
        process.stderr.write(
          `dacd: ${what} stopped by ${signal}; remove ${d} by hand: ${(err as Error).message}\n`,
        );
        process.exit(128 + (constants.signals[signal] ?? 0));
      }
    }
    process.stderr.write(`dacd: ${what} stopped by ${signal}${d === undefined ? "" : `; removed ${d}`}\n`);
    process.exit(128 + (constants.signals[signal] ?? 0));
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  return () => {
    for (const s of SIGNALS) process.off(s, onSignal);
  };
}
