/**
 * The devnet's side of the exchange contract (contracts/DevnetExchange.sol): deploy it with its
 * escape verifier and token, commit a batch's roots, freeze it. Each call waits for its
 * transaction's receipt, so that what follows sees the new state.
 */
import {
  bytesToHex,
  createPublicClient,
  createWalletClient,
  defineChain,
  getContractAddress,
  http,
  parseEther,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  DEVNET_EXCHANGE,
  DEVNET_TOKEN,
  PEDERSEN_TABLE,
  PERPETUAL_ESCAPE_VERIFIER,
  SPOT_ESCAPE_VERIFIER,
} from "./artifact.js";
import { assetInfo, devnetAssets, TOKEN_SUPPLY } from "./assets.js";
import { DEV_ACCOUNT_KEY } from "./eth-node.js";
import { pedersenTables } from "./pedersen-table.js";
import { applicationData, programOutput } from "./program-output.js";

/** Which root-update event the contract emits (the Flavor enum of the contract). */
export const FLAVORS = { spot: 0, "spot-v4.0": 1, perpetual: 2 } as const;
export type Flavor = keyof typeof FLAVORS;

/** A batch's roots as the contract takes them; absent roots are committed as 0. */
export interface CommittedRoots {
  readonly vault?: bigint;
  readonly rollupVault?: bigint;
  readonly order?: bigint;
}

/** StarkEx's grace period between a forced request and the freeze it allows: 7 days. */
export const DEFAULT_FREEZE_GRACE_PERIOD_S = 7 * 24 * 3600;
/** The ETH the devnet gives its exchange to pay ETH withdrawals with. */
const EXCHANGE_ETH = parseEther("1000");

export interface ExchangeDeployOptions {
  /** Seconds between a forced request and the freeze it allows (default 7 days). */
  readonly freezeGracePeriodS?: number | undefined;
}

export class DevnetExchange {
  private constructor(
    readonly address: Address,
    /** The block the contract was deployed in (undefined for one found with `at`). */
    readonly deployedAt: bigint | undefined,
    private readonly wallet: WalletClient,
    private readonly reader: PublicClient,
    /** The escape verifier and the ERC-20 token (undefined for one found with `at`). */
    readonly verifier?: Address,
    readonly token?: Address,
  ) {}

  /**
   * Deploys, owned by DEV_ACCOUNT_KEY's account, on the node at `rpcUrl`: the exchange, the
   * Pedersen tables, the flavor's escape verifier, the ERC-20 token (all minted to the exchange), and
   * registers the devnet's assets (assets.ts) and funds the exchange with ETH to pay them.
   */
  static async deploy(
    rpcUrl: string,
    flavor: Flavor,
    vaultTreeHeight: number,
    opts: ExchangeDeployOptions = {},
  ): Promise<DevnetExchange> {
    const grace = opts.freezeGracePeriodS ?? DEFAULT_FREEZE_GRACE_PERIOD_S;
    if (!Number.isSafeInteger(grace) || grace < 0)
      throw new RangeError("the freeze grace period must be a non-negative whole number of seconds");
    const { wallet, reader } = await clients(rpcUrl);
    const deploy = async (
      what: string,
      abi: Abi,
      bytecode: Hex,
      args: readonly unknown[],
    ): Promise<Address> => {
      const hash = await wallet.deployContract({
        abi,
        bytecode,
        args,
        account: wallet.account!,
        chain: wallet.chain,
      } as never);
      const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      if (!receipt.contractAddress) throw new Error(`deploying the ${what} failed (transaction ${hash})`);
      return receipt.contractAddress;
    };
    // The exchange first, so that a fresh node's exchange is at the address the devnet's gateway
    // names (DEFAULT_CONTRACT_ADDRESS, the deployer's first contract); it is given the address its
    // verifier will have, deployed after it and the six Pedersen table contracts.
    const nonce = await reader.getTransactionCount({ address: wallet.account!.address, blockTag: "pending" });
    const verifierAddress = getContractAddress({ from: wallet.account!.address, nonce: BigInt(nonce + 7) });
    const hash = await wallet.deployContract({
      abi: DEVNET_EXCHANGE.abi,
      bytecode: DEVNET_EXCHANGE.bytecode,
      args: [FLAVORS[flavor], BigInt(vaultTreeHeight), BigInt(grace), verifierAddress],
      account: wallet.account!,
      chain: wallet.chain,
    });
    const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (!receipt.contractAddress) throw new Error(`deploying the exchange failed (transaction ${hash})`);
    const address = receipt.contractAddress;
    const tables = pedersenTables();
    const deployTables = async (parts: Uint8Array[]): Promise<Address[]> => {
      const out: Address[] = [];
      for (const part of parts)
        out.push(
          await deploy("Pedersen table", PEDERSEN_TABLE.abi, PEDERSEN_TABLE.bytecode, [bytesToHex(part)]),
        );
      return out;
    };
    const first = await deployTables(tables.first);
    const second = await deployTables(tables.second);
    const verifierArtifact = flavor === "perpetual" ? PERPETUAL_ESCAPE_VERIFIER : SPOT_ESCAPE_VERIFIER;
    const verifier = await deploy("escape verifier", verifierArtifact.abi, verifierArtifact.bytecode, [
      first,
      second,
    ]);
    if (verifier.toLowerCase() !== verifierAddress.toLowerCase())
      throw new Error(
        `the escape verifier is at ${verifier}, not at ${verifierAddress} as the exchange expects`,
      );
    const token = await deploy("token", DEVNET_TOKEN.abi, DEVNET_TOKEN.bytecode, [address, TOKEN_SUPPLY]);
    const exchange = new DevnetExchange(address, receipt.blockNumber, wallet, reader, verifier, token);
    for (const asset of devnetAssets(flavor === "perpetual"))
      await exchange.send("registerToken", [asset.assetType, assetInfo(asset, token), asset.quantum]);
    const funding = await wallet.sendTransaction({
      to: address,
      value: EXCHANGE_ETH,
      account: wallet.account!,
      chain: wallet.chain,
    });
    await reader.waitForTransactionReceipt({ hash: funding, pollingInterval: 50 });
    return exchange;
  }

  /** An exchange already deployed at `address` (e.g. by another process). */
  static async at(rpcUrl: string, address: Address): Promise<DevnetExchange> {
    const { wallet, reader } = await clients(rpcUrl);
    return new DevnetExchange(address, undefined, wallet, reader);
  }

  /** Commits batch `batchId`'s roots: one root update event; returns the block it is in. */
  async commit(batchId: number, roots: CommittedRoots): Promise<{ blockNumber: bigint; hash: Hex }> {
    return this.send("updateState", [
      BigInt(batchId),
      roots.vault ?? 0n,
      roots.rollupVault ?? 0n,
      roots.order ?? 0n,
    ]);
  }

  /**
   * Perpetual: commits batch `batchId` as StarkEx perpetual does, with the program output that
   * takes the shared state from `prev` to `next` (words, program-output.ts).
   */
  async commitPerpetual(
    batchId: number,
    prevBatchId: number,
    prev: readonly bigint[],
    next: readonly bigint[],
  ): Promise<{ blockNumber: bigint; hash: Hex }> {
    const expiration = BigInt(Math.floor(Date.now() / 3_600_000) + 24 * 7);
    return this.send("updateState", [
      programOutput(prev, next, expiration),
      applicationData(batchId, prevBatchId),
    ]);
  }

  async freeze(): Promise<{ blockNumber: bigint; hash: Hex }> {
    return this.send("freeze", []);
  }

  async isFrozen(): Promise<boolean> {
    return this.reader.readContract({
      address: this.address,
      abi: DEVNET_EXCHANGE.abi,
      functionName: "isFrozen",
    });
  }

  private async send(
    functionName: "updateState" | "freeze" | "registerToken",
    args: readonly (bigint | Hex | readonly bigint[])[],
  ): Promise<{ blockNumber: bigint; hash: Hex }> {
    const hash = await this.wallet.writeContract({
      address: this.address,
      abi: DEVNET_EXCHANGE.abi,
      functionName,
      args: args as never,
      account: this.wallet.account!,
      chain: this.wallet.chain,
    });
    const receipt = await this.reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== "success") throw new Error(`${functionName} reverted (transaction ${hash})`);
    return { blockNumber: receipt.blockNumber, hash };
  }
}

async function clients(rpcUrl: string): Promise<{ wallet: WalletClient; reader: PublicClient }> {
  const transport = http(rpcUrl, { retryCount: 0 });
  const chainId = await createPublicClient({ transport }).getChainId();
  const chain = defineChain({
    id: chainId,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const account = privateKeyToAccount(DEV_ACCOUNT_KEY);
  return {
    wallet: createWalletClient({ account, chain, transport }),
    reader: createPublicClient({ chain, transport, pollingInterval: 50 }),
  };
}
