/**
 * The devnet's base chain: a local Ethereum node with the exchange contract, on which each batch's
 * roots are committed once the quorum has signed it, and which can be frozen.
 */
import type { Approvals } from "./approvals.js";
import type { ChainView } from "./chain.js";
import { startEthNode, type EthNode } from "./exchange/eth-node.js";
import { DevnetExchange, type ExchangeDeployOptions } from "./exchange/exchange.js";
import { Settlement } from "./exchange/settle.js";
import { HttpError } from "./servers/http.js";
import type { Profile } from "./shared.js";

export interface BaseChainStatus {
  rpc_url: string;
  contract: string;
  /** The exchange's escape verifier and the devnet's ERC-20 token (contracts/). */
  escape_verifier: string | null;
  token: string | null;
  committed_batch_id: number;
  frozen: boolean;
}

export class LocalBaseChain {
  private frozen = false;

  private constructor(
    readonly node: EthNode,
    readonly settlement: Settlement,
  ) {}

  /** Starts the node on `port`, deploys the exchange and starts committing the chain's batches. */
  static async start(
    port: number,
    chain: ChainView,
    approvals: Approvals,
    profile: Profile,
    deployOptions: ExchangeDeployOptions = {},
  ): Promise<LocalBaseChain> {
    const node = await startEthNode({ port });
    try {
      const exchange = await DevnetExchange.deploy(
        node.url,
        profile.name,
        profile.main.height,
        deployOptions,
      );
      const settlement = new Settlement(chain, approvals, exchange, profile.main.name, () => undefined);
      settlement.start();
      return new LocalBaseChain(node, settlement);
    } catch (err) {
      await node.close();
      throw err;
    }
  }

  get exchange(): DevnetExchange {
    return this.settlement.exchange;
  }

  /** Stops committing and freezes the exchange (once); the batch it froze at. */
  async freeze(): Promise<{ frozen_batch_id: number }> {
    await this.settlement.stop();
    // A user's freezeRequest may have frozen it already.
    if (!this.frozen && !(await this.settlement.exchange.isFrozen())) await this.settlement.exchange.freeze();
    this.frozen = true;
    return { frozen_batch_id: this.settlement.committed };
  }

  status(): BaseChainStatus {
    return {
      rpc_url: this.node.url,
      contract: this.settlement.exchange.address,
      escape_verifier: this.settlement.exchange.verifier ?? null,
      token: this.settlement.exchange.token ?? null,
      committed_batch_id: this.settlement.committed,
      frozen: this.frozen,
    };
  }
}

/** Freezes the exchange of `base`; a devnet without a base chain answers 409. */
export async function freezeBaseChain(
  base: LocalBaseChain | undefined,
): Promise<{ frozen_batch_id: number }> {
  if (!base) throw new HttpError(409, "NO_BASE_CHAIN", "the devnet runs without --chain");
  return base.freeze();
}
