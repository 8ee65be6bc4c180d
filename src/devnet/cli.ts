/** `dacd devnet`: runs the local operator until SIGINT/SIGTERM (docs/devnet.md). */
import { InvalidArgumentError, type Command } from "commander";
import type { DevnetOptions } from "./main.js";
import { requireHardhat } from "./exchange/eth-node.js";
import { isProfileName } from "../model/profile.js";
import { DacdError } from "../errors.js";

interface CliOptions {
  variant?: string;
  profile?: string;
  gatewayPort: number;
  feederPort: number;
  availabilityPort: number;
  committee?: string[];
  quorum?: number;
  batchSize: number;
  batchIntervalMs: number;
  traffic?: number;
  replay?: string;
  expected?: string;
  allowDynamicConfig?: boolean;
  seed: number;
  blockTxTypes?: string[];
  chain?: boolean;
  chainPort: number;
  freezeGracePeriod: number;
}

const nonNegativeInt = (v: string): number => {
  if (!/^[0-9]+$/.test(v)) throw new InvalidArgumentError("expected a non-negative integer");
  return Number(v);
};
const positiveNumber = (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number");
  return n;
};
const list = (v: string): string[] =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Checks the flags together; a bad one is DacdError("USAGE"): one line and exit 64. */
export function toDevnetOptions(o: CliOptions): DevnetOptions {
  // Checked here, not by commander: a required option of `devnet` would be required of `devnet freeze` too.
  if (o.variant === undefined)
    throw new DacdError("USAGE", "required option '--variant <P|G>' not specified");
  const variant = o.variant.toUpperCase();
  if (variant !== "P" && variant !== "G") throw new DacdError("USAGE", "--variant must be P or G");
  if (o.profile !== undefined && !isProfileName(o.profile))
    throw new DacdError("USAGE", "--profile must be perpetual, spot or spot-v4.0");
  if (o.expected && !o.replay) throw new DacdError("USAGE", "--expected needs --replay");
  return {
    variant,
    profile: o.profile as DevnetOptions["profile"],
    gatewayPort: o.gatewayPort,
    feederPort: o.feederPort,
    availabilityPort: o.availabilityPort,
    committee: o.committee,
    quorum: o.quorum,
    batchSize: o.batchSize,
    batchIntervalMs: o.batchIntervalMs,
    traffic: o.traffic,
    replay: o.replay,
    expected: o.expected,
    allowDynamicConfig: o.allowDynamicConfig === true,
    seed: o.seed,
    blockedTxTypes: o.blockTxTypes,
    baseChain: o.chain === true,
    baseChainPort: o.chainPort,
    freezeGracePeriodS: o.freezeGracePeriod,
  };
}

export function registerDevnetCommand(program: Command): void {
  const devnet = program.command("devnet");
  devnet
    .command("freeze")
    .description("freeze the exchange contract of a devnet started with --chain")
    .requiredOption("--availability-url <url>", "the devnet's availability gateway (printed at its start)")
    .action(async (o: { availabilityUrl: string }) => {
      const { post } = await import("./client.js");
      const url = `${o.availabilityUrl.replace(/\/+$/, "")}/devnet/freeze`;
      const answer = await post(url).catch((err: unknown) => {
        const cause = (err as { cause?: { message?: string } }).cause?.message ?? String(err);
        throw new DacdError("GATEWAY", `cannot reach the devnet at ${url}: ${cause}`);
      });
      if (answer.status !== 200)
        throw new DacdError(
          "USAGE",
          `the devnet refused to freeze (${answer.status}): ${answer.text.trim()}`,
        );
      process.stdout.write(`${JSON.stringify(answer.json)}\n`);
    });
  devnet
    .description("run a local operator serving the transaction, feeder and availability gateways")
    .option("--variant <P|G>", "P (positions and orders) or G (vaults and orders); required")
    .option("--profile <profile>", "tree profile: perpetual (P), spot or spot-v4.0 (G)")
    .option("--gateway-port <n>", "transaction gateway port (0 picks a free one)", nonNegativeInt, 0)
    .option("--feeder-port <n>", "feeder gateway port (0 picks a free one)", nonNegativeInt, 0)
    .option("--availability-port <n>", "availability gateway port (0 picks a free one)", nonNegativeInt, 0)
    .option(
      "--committee <addresses>",
      "comma-separated committee addresses (default: accept any signer)",
      list,
    )
    .option("--quorum <n>", "distinct signatures per batch (default: committee size, or 1)", nonNegativeInt)
    .option("--batch-size <n>", "transactions per batch at most", nonNegativeInt, 10)
    .option(
      "--batch-interval-ms <n>",
      "cut ready transactions into a batch this often (0: by size only)",
      nonNegativeInt,
      1000,
    )
    .option("--traffic <tx_per_s>", "submit generated traffic at this rate", positiveNumber)
    .option("--replay <responses.json>", "serve a recorded chain of get_batch_data answers")
    .option("--expected <expected.json>", "with --replay: the claims approvals must match")
    .option("--allow-dynamic-config", "accept set_alternative_endpoint_config")
    .option("--seed <n>", "traffic generator seed", nonNegativeInt, 1)
    .option("--block-tx-types <types>", "variant P transaction filter: comma-separated types to refuse", list)
    .option(
      "--chain",
      "settle on a local Ethereum node (127.0.0.1): deploy the exchange contract, commit each signed batch's roots",
    )
    .option(
      "--chain-port <n>",
      "with --chain: the node's JSON-RPC port (0 picks a free one)",
      nonNegativeInt,
      0,
    )
    .option(
      "--freeze-grace-period <s>",
      "with --chain: seconds from a forced request to the freeze it allows (the contract's FREEZE_GRACE_PERIOD)",
      nonNegativeInt,
      7 * 24 * 3600,
    )
    .action(async (o: CliOptions) => {
      if (o.chain === true) requireHardhat();
      // The devnet's modules are loaded only when it runs, not for every dacd command.
      const { startDevnet } = await import("./main.js");
      const devnet = await startDevnet(toDevnetOptions(o));
      process.stdout.write(
        `gateway ${devnet.urls.gateway}\nfeeder ${devnet.urls.feeder}\navailability ${devnet.urls.availability}\n`,
      );
      if (devnet.baseChain)
        process.stdout.write(
          `base_chain_rpc_url ${devnet.baseChain.rpcUrl}\nstarkex_contract_address ${devnet.baseChain.exchange.address}\n` +
            `escape_verifier_address ${devnet.baseChain.exchange.verifier}\ntoken_address ${devnet.baseChain.exchange.token}\n`,
        );
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void devnet.close().then(resolve, resolve);
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
