import { existsSync } from "node:fs";
import { chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { startDaemon } from "../app.js";
import { loadConfig } from "../config/config.js";
import { startDevnet, type Devnet } from "../devnet/main.js";
import { requireHardhat } from "../devnet/exchange/eth-node.js";
import { createLogger } from "../logging.js";
import { ethAddressFromPrivateKey } from "../signer/eth-signer.js";
import { walkOneUserOut } from "./demo-exit.js";
import { demoNextSteps, freeLocalPort } from "./demo-next-steps.js";
import { DacdError } from "../errors.js";
import { handleSignals } from "./signals.js";

export interface DemoOptions {
  variant: string;
  dataDir: string;
  traffic: string;
  chain?: boolean;
}

/** `dacd demo` (demo-command.ts defines its options). */
export async function runDemo(opts: DemoOptions): Promise<void> {
  const { variant, traffic } = demoSettings(opts);
  if (opts.chain === true) requireHardhat(); // before the folder and the key are made
  const dir = resolve(opts.dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const address = await demoMemberAddress(dir);
  const devnet = await startDevnet({
    variant,
    committee: [address],
    quorum: 1,
    traffic,
    batchIntervalMs: 1000,
    baseChain: opts.chain === true,
  });
  process.stdout.write(
    `devnet (variant ${variant}) listening:\n  gateway      ${devnet.urls.gateway}\n  feeder       ${devnet.urls.feeder}\n  availability ${devnet.urls.availability}\nmember ${address}, data in ${dir}\n`,
  );
  const { configPath, metricsPort } = await writeDemoConfig(dir, variant, devnet);
  const log = createLogger({ level: "info", pretty: true });
  const daemon = await startDaemon(loadConfig(configPath), { log });
  process.stdout.write(
    demoNextSteps({
      configPath,
      metricsPort,
      freeze: devnet.baseChain
        ? { url: devnet.urls.availability, tree: variant === "P" ? "position" : "vault" }
        : undefined,
    }),
  );
  // With a chain, the demo ends its story with a user's exit, the member still running after it.
  const stopWalk = new AbortController();
  if (devnet.baseChain)
    walkOneUserOut(devnet, daemon, (line) => process.stdout.write(`${line}\n`), stopWalk.signal).catch(
      (err: unknown) => {
        if (!stopWalk.signal.aborted)
          process.stdout.write(`the user's exit stopped: ${(err as Error).message}\n`);
      },
    );
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      stopWalk.abort();
      await daemon.stop();
      await devnet.close();
    })());
  const dispose = handleSignals({ log, stop });
  try {
    await daemon.done;
  } finally {
    await stop();
    dispose();
  }
}

/** --variant and --traffic, checked. */
function demoSettings(opts: DemoOptions): { variant: "P" | "G"; traffic: number } {
  const variant = opts.variant.toUpperCase();
  if (variant !== "P" && variant !== "G")
    throw new DacdError("USAGE", `--variant must be P or G, got ${JSON.stringify(opts.variant)}`);
  const traffic = Number(opts.traffic);
  if (!/^[0-9.]+$/.test(opts.traffic) || !Number.isFinite(traffic) || traffic <= 0)
    throw new DacdError("USAGE", `--traffic must be a positive number, got ${JSON.stringify(opts.traffic)}`);
  return { variant, traffic };
}

/** The member's address, from the key in `dir` (created on the first start, reused after). */
async function demoMemberAddress(dir: string): Promise<string> {
  const keyPath = join(dir, "member.key");
  if (!existsSync(keyPath)) {
    await writeFile(keyPath, Buffer.from(secp256k1.utils.randomSecretKey()).toString("hex") + "\n", {
      mode: 0o600,
    });
  }
  await chmod(keyPath, 0o600);
  const key = new Uint8Array(Buffer.from((await readFile(keyPath, "utf8")).trim(), "hex"));
  const address = ethAddressFromPrivateKey(key);
  key.fill(0);
  return address;
}

/** A fresh store folder and the member's configuration for this devnet. */
async function writeDemoConfig(
  dir: string,
  variant: "P" | "G",
  devnet: Devnet,
): Promise<{ configPath: string; metricsPort: number }> {
  const profile = variant === "P" ? "perpetual" : "spot";
  // The devnet's chain is new on every start, so an earlier member store cannot continue it.
  for (const entry of await readdir(dir)) {
    if (entry.startsWith("store-")) await rm(join(dir, entry), { recursive: true, force: true });
  }
  const storeDir = join(dir, `store-${profile}-${Date.now()}`);
  const configPath = join(dir, "dacd.yaml");
  const metricsPort = await freeLocalPort();
  await writeFile(
    configPath,
    [
      "# Written by `dacd demo` for the local devnet; see config/ for annotated examples.",
      `profile: ${profile}`,
      `availability_gateway_url: "${devnet.urls.availability}"`,
      `feeder_gateway_url: "${devnet.urls.feeder}"`,
      "private_key_path: member.key",
      `data_dir: "${storeDir}"`,
      "polling_interval_s: 0.5",
      `metrics_port: ${metricsPort}`,
      variant === "G" ? "validate_rollup: true" : "",
      ...(devnet.baseChain
        ? [
            `base_chain_rpc_url: "${devnet.baseChain.rpcUrl}"`,
            `starkex_contract_address: "${devnet.baseChain.exchange.address}"`,
            // The local node mines a block per transaction and never reorgs.
            "base_chain_confirmations: 0",
            "base_chain_poll_interval_s: 1",
          ]
        : []),
      "",
    ].join("\n"),
  );
  return { configPath, metricsPort };
}
