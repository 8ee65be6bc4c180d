/**
 * A local Ethereum node for the devnet and the tests: Hardhat's network (EDR) in this process,
 * served over JSON-RPC on 127.0.0.1. Hardhat is loaded only here and only when a node is started,
 * so that nothing else in dacd pays for it.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export interface EthNode {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly chainId: number;
  close(): Promise<void>;
}

export interface EthNodeOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly chainId?: number;
}

/** The local node's block gas limit (mainnet's is 30M). */
export const BLOCK_GAS_LIMIT = 100_000_000;

/** The second account of Hardhat's public test mnemonic, funded at genesis: the demo's user. */
export const DEV_USER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/** The first account of Hardhat's public test mnemonic, funded at genesis: it deploys and owns the devnet's exchange. */
export const DEV_ACCOUNT_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

interface HardhatInternals {
  resolveConfig(path: string, user: unknown): unknown;
  createProvider(config: unknown, network: string): Promise<unknown>;
  JsonRpcServer: new (c: { hostname: string; port: number; provider: unknown }) => {
    listen(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  };
}

function loadHardhat(): HardhatInternals {
  const require = createRequire(import.meta.url);
  try {
    const { resolveConfig } = require("hardhat/internal/core/config/config-resolution") as HardhatInternals;
    const { createProvider } = require("hardhat/internal/core/providers/construction") as HardhatInternals;
    const { JsonRpcServer } = require("hardhat/internal/hardhat-network/jsonrpc/server") as HardhatInternals;
    return { resolveConfig, createProvider, JsonRpcServer };
  } catch (err) {
    throw new Error(
      `a local Ethereum node needs the hardhat package (npm install hardhat@2): ${String(err)}`,
      {
        cause: err,
      },
    );
  }
}

/** Starts a fresh chain (its own state, whatever else runs in the process) and serves it. */
export async function startEthNode(opts: EthNodeOptions = {}): Promise<EthNode> {
  const hh = loadHardhat();
  const chainId = opts.chainId ?? 31337;
  // Resolved from an object, not a file: no Hardhat project is needed (Hardhat only asks that the
  // path it is given exists, and writes nothing there without forking). Two accounts: deriving
  // Hardhat's default twenty from the mnemonic takes seconds.
  const config = hh.resolveConfig(fileURLToPath(import.meta.url), {
    networks: {
      hardhat: {
        chainId,
        accounts: { count: 2 },
        loggingEnabled: false,
        // The devnet's escape verifiers hash a Merkle path with Pedersen in plain EVM code: 3.3M gas
        // for a spot proof, 7M for a perpetual one, about 100k more for each further row. Prague,
        // not Osaka: Osaka caps a transaction at 2^24 gas (EIP-7825), which the longest proofs the
        // verifiers take (200 rows) exceed.
        hardfork: "prague",
        blockGasLimit: BLOCK_GAS_LIMIT,
      },
    },
  });
  const provider = await hh.createProvider(config, "hardhat");
  const server = new hh.JsonRpcServer({ hostname: "127.0.0.1", port: opts.port ?? 0, provider });
  const { port } = await server.listen();
  return { url: `http://127.0.0.1:${port}`, chainId, close: () => server.close() };
}
