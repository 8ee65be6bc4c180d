import { rm } from "node:fs/promises";
import type { Daemon } from "../../src/app.js";
import { memberSetup, startQuietDaemon, waitFor } from "./daemon.js";
import { VectorGateway } from "./vector-gateway.js";
import { loadChain, type ChainName } from "./vectors.js";

/**
 * A member's daemon running on a vector chain's gateway, which serves the first `available`
 * batches (default: all). `extra`: more configuration lines, such as the escape API's port. `stop`
 * may be called early (to copy the stopped store) and again by `cleanups`, which also closes the
 * gateway and removes the store.
 */
export async function startVectorMember(
  chain: ChainName,
  opts: { extra?: string; available?: number },
  cleanups: (() => Promise<unknown>)[],
) {
  const { responses, expected } = loadChain(chain);
  const gw = await new VectorGateway(
    responses,
    expected,
    expected.profile === "perpetual" ? "P" : "G",
  ).start();
  cleanups.push(() => gw.close());
  gw.available = opts.available ?? expected.batches.length;
  const setup = await memberSetup({
    profile: expected.profile,
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra: opts.extra,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  const daemon: Daemon = await startQuietDaemon(setup.config);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (!stopped) await daemon.stop();
    stopped = true;
  };
  cleanups.push(stop);
  return { gw, expected, daemon, stop, ...setup };
}

/** A member that has verified and signed every batch of a vector chain, its daemon running (startVectorMember). */
export async function signingMember(chain: ChainName, extra: string, cleanups: (() => Promise<unknown>)[]) {
  const m = await startVectorMember(chain, { extra }, cleanups);
  await waitFor(
    () => m.daemon.member.state.nextBatchId === m.expected.batches.length,
    120_000,
    "every batch signed",
  );
  return { ...m, api: m.daemon.escapeApi?.url ?? "" };
}
