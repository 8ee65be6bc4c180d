import type { Config } from "../../config/config.js";

/** Where an exit's transactions go and how the chain is read (the configuration's, or a command's flags). */
export interface ExitSettings {
  readonly exchange?: string;
  readonly verifier?: string;
  /** The base chain's JSON-RPC URL: with it (and the exchange), each step's state is read. */
  readonly rpcUrl?: string;
  readonly timeoutMs?: number;
}

/** The settings a configuration gives: escape_contracts, else the followed exchange; base_chain_rpc_url. */
export function exitSettings(
  config: Pick<Config, "escapeContracts" | "starkexContractAddress" | "baseChainRpcUrl">,
): ExitSettings {
  const exchange = config.escapeContracts?.exchange ?? config.starkexContractAddress;
  return {
    ...(exchange === undefined ? {} : { exchange }),
    ...(config.escapeContracts ? { verifier: config.escapeContracts.verifier } : {}),
    ...(config.baseChainRpcUrl === undefined ? {} : { rpcUrl: config.baseChainRpcUrl }),
  };
}
