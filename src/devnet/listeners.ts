/** The devnet's three HTTP servers: transaction gateway, feeder gateway and availability gateway. */
import type { Approvals } from "./approvals.js";
import type { ChainView } from "./chain.js";
import type { Faults, Scope } from "./faults.js";
import { DEFAULT_CONTRACT_ADDRESS, checkPort, type DevnetOptions } from "./options.js";
import { availabilityRouter, type AvailabilityContext } from "./servers/availability.js";
import { feederRouter } from "./servers/feeder.js";
import { gatewayRouter, type GatewayContext } from "./servers/gateway.js";
import { HttpError, listen, type Listening, type Router } from "./servers/http.js";
import { TxPool } from "./txpool.js";

export interface GatewayServers {
  readonly gateway: Listening;
  readonly feeder: Listening;
  readonly availability: Listening;
  close(): Promise<void>;
}

export interface GatewayRoutes {
  readonly chain: ChainView;
  readonly approvals: Approvals;
  readonly faults: Faults;
  /** The transaction gateway's state in live mode; absent in replay mode. */
  readonly gateway: GatewayContext<unknown> | undefined;
  readonly admin: AvailabilityContext["admin"];
  readonly status: () => unknown;
}

/**
 * Listens on the ports of `opts`, one server after the other; when one cannot listen, those
 * already listening are closed.
 */
export async function listenGateways(opts: DevnetOptions, routes: GatewayRoutes): Promise<GatewayServers> {
  const open: Listening[] = [];
  const start = async (port: number, scope: Scope, router: Router): Promise<Listening> => {
    const server = await listen(port, scope, router, routes.faults);
    open.push(server);
    return server;
  };
  try {
    const gateway = await start(
      checkPort("gateway port", opts.gatewayPort),
      "gateway",
      routes.gateway ? gatewayRouter(routes.gateway) : replayGatewayRouter(opts.variant),
    );
    const feeder = await start(
      checkPort("feeder port", opts.feederPort),
      "feeder",
      feederRouter(routes.chain),
    );
    const availability = await start(
      checkPort("availability port", opts.availabilityPort),
      "availability",
      availabilityRouter({
        chain: routes.chain,
        approvals: routes.approvals,
        blockchainType: opts.blockchainType ?? "ETHEREUM",
        admin: routes.admin,
        status: routes.status,
      }),
    );
    return { gateway, feeder, availability, close: () => closeAll(open) };
  } catch (err) {
    await closeAll(open);
    throw err;
  }
}

async function closeAll(servers: readonly Listening[]): Promise<void> {
  await Promise.all(servers.map((s) => s.close()));
}

/** In replay mode the transaction gateway only answers the read-only endpoints. */
function replayGatewayRouter(variant: "P" | "G"): Router {
  return gatewayRouter({
    variant,
    pool: new TxPool<unknown>(),
    machine: {
      parse: () => {
        throw new HttpError(409, "REPLAY_MODE", "tx: replay mode takes no transactions");
      },
      apply: () => undefined,
      changes: () => ({}),
      alternative: () => null,
    },
    contractAddress: DEFAULT_CONTRACT_ADDRESS,
    allowDynamicConfig: false,
    blockedTxTypes: new Set(),
    onAdded: () => undefined,
    alternativeConfig: null,
  });
}
