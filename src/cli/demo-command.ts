import type { Command } from "commander";
import type { DemoOptions } from "./demo.js";

/**
 * `dacd demo`: a local operator (the devnet, with traffic) and one dacd member against it over real
 * HTTP, so a newcomer sees batches verified and signed within seconds. The member's key, config and
 * store live in one folder (default ./.devnet-data) and are reused on the next start; the devnet's
 * chain is new each time, so the member's store is reset with it. With --chain, one user then walks
 * out of the exchange on that chain (demo-exit.ts).
 */
export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("start a local operator with traffic and a dacd member verifying and signing its batches")
    .option("--variant <P|G>", "P (perpetual) or G (spot)", "G")
    .option("--data-dir <dir>", "folder for the member's key, config and store", ".devnet-data")
    .option("--traffic <tx_per_s>", "transactions per second the traffic generator submits", "20")
    .option(
      "--chain",
      "settle on a local Ethereum node, which the member follows (freeze it to rehearse exits)",
    )
    .action(async (opts: DemoOptions) => {
      const { runDemo } = await import("./demo.js");
      await runDemo(opts);
    });
}
