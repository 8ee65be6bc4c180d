import { Command, CommanderError } from "commander";
import { versionLine } from "../build-info.js";
import { checkEnvironment } from "../config/env-check.js";
import { isDacdError } from "../errors.js";
import { asStoreError } from "../storage/store-errors.js";
import { registerReplayCommand } from "./replay.js";
import { registerKeygenCommand } from "./keygen-command.js";
import { registerRunCommand } from "./run.js";
import { registerDemoCommand } from "./demo-command.js";
import { registerDevnetCommand } from "../devnet/cli.js";
import { registerInspectCommands } from "./inspect-commands.js";
import { registerEscapeCommands } from "./escape-commands.js";
import { registerJournalCommand } from "./journal-command.js";
import { registerConfigCommand } from "./config-command.js";
import { EXIT, exitCodeFor } from "./exit-codes.js";
import { keepInitialOldSpaceToMainThread } from "../util/heap-flags.js";
import { useNativeAddon } from "../native/addon.js";
import { runtimeSettings } from "../config/runtime-settings.js";

keepInitialOldSpaceToMainThread();

// Settings made before the commands are added are inherited by every one of them: usage errors
// are thrown (exit 64 below) and written as one `dacd: …` line.
const program = new Command()
  .name("dacd")
  .description("Data-availability committee member daemon for StarkEx-style validium systems")
  .version(versionLine(), "-V, --version", "print the version, the commit and the Node.js version")
  .exitOverride()
  .configureOutput({
    outputError: (str, write) =>
      write(
        `dacd: ${str
          .replace(/^error: /, "")
          .trim()
          .replace(/\n+/g, " ")}\n`,
      ),
  })
  // Every DACD_* variable is checked before any command runs (not for --help or --version).
  .hook("preAction", () => {
    checkEnvironment();
    useNativeAddon(runtimeSettings().nativeAddon);
  });

registerRunCommand(program);
registerConfigCommand(program);
registerInspectCommands(program);
registerReplayCommand(program);
registerDevnetCommand(program);
registerDemoCommand(program);
registerKeygenCommand(program);
registerEscapeCommands(program);
registerJournalCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (caught) {
  const err = asStoreError(caught) ?? caught;
  if (err instanceof CommanderError) {
    // Already written by commander (help, version, or the usage error's line).
    process.exitCode = err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  } else if (isDacdError(err)) {
    // Expected failures are one clear line and a non-zero exit, never a stack trace.
    // A list of configuration problems ("…:\n  - a\n  - b") becomes "…: a; b".
    const line = err.message
      .replace(/:\s*\n\s*-\s*/, ": ")
      .replace(/\n\s*-\s*/g, "; ")
      .replace(/\n\s*/g, " ");
    process.stderr.write(`dacd: ${line}\n`);
    process.exitCode = exitCodeFor(err.code);
  } else {
    throw err;
  }
}
