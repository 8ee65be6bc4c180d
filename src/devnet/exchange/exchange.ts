/**
 * The devnet's side of the exchange contract (contracts/DevnetExchange.sol): deploy it, commit a
 * batch's roots, freeze it. Each call waits for its transaction's receipt, so that what follows
 * sees the new state.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Address,
  type Hex,
  type PublicClient,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEVNET_EXCHANGE } from "./artifact.js";
import { DEV_ACCOUNT_KEY } from "./eth-node.js";
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

export class DevnetExchange {
  private constructor(
    readonly address: Address,
    /** The block the contract was deployed in (undefined for one found with `at`). */
    readonly deployedAt: bigint | undefined,
    private readonly wallet: WalletClient,
    private readonly reader: PublicClient,
  ) {}

  /** Deploys a new exchange on the node at `rpcUrl`, owned by DEV_ACCOUNT_KEY's account. */
  static async deploy(rpcUrl: string, flavor: Flavor, vaultTreeHeight: number): Promise<DevnetExchange> {
    const { wallet, reader } = await clients(rpcUrl);
    const hash = await wallet.deployContract({
      abi: DEVNET_EXCHANGE.abi,
      bytecode: DEVNET_EXCHANGE.bytecode,
      args: [FLAVORS[flavor], BigInt(vaultTreeHeight)],
      account: wallet.account!,
      chain: wallet.chain,
    });
    const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (!receipt.contractAddress) throw new Error(`deploying the exchange failed (transaction ${hash})`);
    return new DevnetExchange(receipt.contractAddress, receipt.blockNumber, wallet, reader);
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
    functionName: "updateState" | "freeze",
    args: readonly (bigint | readonly bigint[])[],
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
