/** `dacd devnet`: runs the local operator until SIGINT/SIGTERM (docs/devnet.md). */
import { InvalidArgumentError, type Command } from "commander";
import { startDevnet, type DevnetOptions } from "./main.js";
import { isProfileName } from "../model/profile.js";
import { DacdError } from "../errors.js";

interface CliOptions {
  variant: string;
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
  };
}

export function registerDevnetCommand(program: Command): void {
  program
    .command("devnet")
    .description("run a local operator serving the transaction, feeder and availability gateways")
    .requiredOption("--variant <P|G>", "P (positions and orders) or G (vaults and orders)")
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
    .action(async (o: CliOptions) => {
      const devnet = await startDevnet(toDevnetOptions(o));
      process.stdout.write(
        `gateway ${devnet.urls.gateway}\nfeeder ${devnet.urls.feeder}\navailability ${devnet.urls.availability}\n`,
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
