import { rm } from "node:fs/promises";
import { loadConfig } from "../../src/config/config.js";
import { startDevnet } from "../../src/devnet/main.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { memberSetup, startQuietDaemon } from "./daemon.js";

/** The member's key in the exit journeys: the devnet's one-member committee. */
export const EXIT_MEMBER_KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";

/**
 * A devnet with its local chain (forced requests with a grace period of `graceS` seconds) and a
 * member that follows the chain, with the exit's contracts configured: what a user's exit runs
 * against. `extra`: more configuration lines (the escape API's port). `cleanups` stops both.
 */
export async function exitDevnet(
  variant: "G" | "P",
  graceS: number,
  extra: readonly string[],
  cleanups: (() => Promise<unknown>)[],
) {
  const devnet = await startDevnet({
    variant,
    committee: [ethAddressFromPrivateKey(new Uint8Array(Buffer.from(EXIT_MEMBER_KEY.slice(2), "hex")))],
    quorum: 1,
    batchIntervalMs: 200,
    seed: 3,
    baseChain: true,
    freezeGracePeriodS: graceS,
  });
  cleanups.push(() => devnet.close());
  const base = devnet.baseChain!;
  const exchange = base.exchange.address;
  const verifier = base.exchange.verifier!;
  const setup = await memberSetup({
    profile: variant === "P" ? "perpetual" : "spot",
    privateKey: EXIT_MEMBER_KEY,
    gatewayUrl: devnet.urls.availability,
    extra: [
      `base_chain_rpc_url: "${base.rpcUrl}"`,
      `starkex_contract_address: "${exchange}"`,
      "base_chain_confirmations: 0",
      "base_chain_poll_interval_s: 0.05",
      "escape_contracts:",
      `  exchange: "${exchange}"`,
      `  verifier: "${verifier}"`,
      ...extra,
    ].join("\n"),
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  const daemon = await startQuietDaemon({
    ...loadConfig(setup.configPath, {}),
    feederGatewayUrl: devnet.urls.feeder,
  });
  cleanups.push(() => daemon.stop());
  return { devnet, daemon, base, exchange, verifier, configPath: setup.configPath };
}
