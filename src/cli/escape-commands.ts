import type { Command } from "commander";
import { registerCheckCommand } from "./escape/check-command.js";
import { registerDumpCommand } from "./escape/dump-command.js";
import { registerExitCommand } from "./escape/exit-command.js";
import { registerEscapeKitCommand } from "./escape/escape-kit-command.js";
import { registerLoadCommand } from "./escape/load-command.js";
import { registerProofCommand } from "./escape/proof-command.js";
import { registerPruneCommand } from "./escape/prune-command.js";
import { registerVerifyProofCommand } from "./escape/verify-proof-command.js";

/**
 * Escape and maintenance commands on the member's own store (docs/escape.md): dump, proof, exit,
 * verify-proof, escape-kit, load, check, prune. While `dacd run` runs, dump, proof, exit, escape-kit and
 * check ask it over its control socket (daemon-escape.ts); otherwise, and for load and prune, they
 * open the store directly (LevelDB admits one process; the daemon itself runs pruneStore
 * in-process). dump, proof and check only read: the store must exist and is not changed. Exit
 * statuses: exit-codes.ts.
 */
export function registerEscapeCommands(program: Command): void {
  // In this order in `dacd --help`.
  registerDumpCommand(program);
  registerProofCommand(program);
  registerExitCommand(program);
  registerEscapeKitCommand(program);
  registerVerifyProofCommand(program);
  registerLoadCommand(program);
  registerCheckCommand(program);
  registerPruneCommand(program);
}
