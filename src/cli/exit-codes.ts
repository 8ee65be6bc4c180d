import type { ErrorCode } from "../errors.js";

/**
 * dacd's exit statuses (docs/operations.md, "Exit codes"). 1 is kept for a command that ran and
 * answers "no" (an invalid proof, an inconsistent store, a refused batch), so that a script can
 * tell that from a command that could not run at all (2) or was called wrongly (64, 78).
 * 64 and 78 are sysexits.h's EX_USAGE and EX_CONFIG; the systemd unit does not restart on 78.
 */
export const EXIT = {
  OK: 0,
  /** The command ran and the answer is negative (invalid proof, inconsistent store, refused batch). */
  INVALID: 1,
  /** The command could not run: store missing or locked, file unreadable, gateway unreachable. */
  FAILED: 2,
  /** A command-line argument or flag is invalid (EX_USAGE). */
  USAGE: 64,
  /** The configuration (file, DACD_* environment, key material, listen address) is invalid (EX_CONFIG). */
  CONFIG: 78,
} as const;

/** The exit status for a DacdError that ended a command. */
export function exitCodeFor(code: ErrorCode): number {
  if (code === "USAGE") return EXIT.USAGE;
  if (code === "CONFIG") return EXIT.CONFIG;
  return EXIT.FAILED;
}
