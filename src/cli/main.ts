import { Command } from "commander";
import { isDacdError } from "../errors.js";
import { asStoreError } from "../storage/store-errors.js";
import { registerReplayCommand } from "./replay.js";
import { registerKeygenCommand } from "./keygen-command.js";
import { registerRunCommand } from "./run.js";
import { registerDemoCommand } from "./demo.js";
import { registerDevnetCommand } from "../devnet/cli.js";
import { registerInspectCommands } from "./inspect-commands.js";
import { registerEscapeCommands } from "./escape-commands.js";
import { DACD_VERSION } from "../ops/metrics.js";

const program = new Command()
  .name("dacd")
  .description("Data-availability committee member daemon for StarkEx-style validium systems")
  .version(DACD_VERSION)
  .showHelpAfterError();

registerRunCommand(program);
registerInspectCommands(program);
registerReplayCommand(program);
registerDevnetCommand(program);
registerDemoCommand(program);
registerKeygenCommand(program);
registerEscapeCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (caught) {
  // Expected failures are one clear line and a non-zero exit, never a stack trace.
  const err = asStoreError(caught) ?? caught;
  if (isDacdError(err)) {
    process.stderr.write(`dacd: ${err.message}\n`);
    process.exitCode = err.code === "CONFIG" ? 78 : 1; // 78 = EX_CONFIG, so systemd does not hot-loop
  } else {
    throw err;
  }
}
