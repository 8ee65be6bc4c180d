import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { CHAINS, loadChain } from "../helpers/vectors.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gatewayFor(chain: (typeof CHAINS)[number]) {
  const { responses, expected } = loadChain(chain);
  const gw = await new VectorGateway(
    responses,
    expected,
    expected.profile === "perpetual" ? "P" : "G",
  ).start();
  cleanups.push(() => gw.close());
  return { gw, expected };
}

async function member(gw: VectorGateway, profile: string, privateKey: string, feeder = true) {
  const setup = await memberSetup({ profile, privateKey, gatewayUrl: gw.url, feeder });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  return setup;
}

describe("dacd run against a local gateway serving the vector chains", () => {
  it.each(CHAINS)("%s: signs every batch, in order, each exactly once", async (chain) => {
    const { gw, expected } = await gatewayFor(chain);
    const { config } = await member(gw, expected.profile, expected.private_key);
    const daemon = await startQuietDaemon(config);
    try {
      await waitFor(() => gw.accepted.length >= expected.batches.length, 60_000, "all batches signed");
      await new Promise((r) => setTimeout(r, 200)); // give a wrong extra post a chance to show up
    } finally {
      await daemon.stop();
    }
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
    expect(gw.posts.length).toBe(expected.batches.length);
    expect(gw.conflictingClaims()).toEqual([]);
  });

  it("resumes from the stored cursor after a restart and catches up", async () => {
    const { gw, expected } = await gatewayFor("spot-chain");
    gw.available = 3;
    const { config } = await member(gw, expected.profile, expected.private_key);
    let daemon = await startQuietDaemon(config);
    await waitFor(() => daemon.member.state.nextBatchId === 3, 30_000, "first three batches");
    await daemon.stop();
    gw.available = expected.batches.length;
    daemon = await startQuietDaemon(config);
    try {
      await waitFor(() => daemon.member.state.nextBatchId === expected.batches.length, 30_000, "the rest");
    } finally {
      await daemon.stop();
    }
    expect(gw.acceptedIds()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gw.posts.length).toBe(6);
  });

  it("works without a feeder gateway, polling get_batch_data until update is not null", async () => {
    const { gw, expected } = await gatewayFor("perpetual-chain");
    gw.available = 2;
    const { config } = await member(gw, expected.profile, expected.private_key, false);
    const daemon = await startQuietDaemon(config);
    try {
      await waitFor(() => gw.accepted.length === 2);
      gw.available = expected.batches.length;
      await waitFor(() => gw.accepted.length === expected.batches.length);
    } finally {
      await daemon.stop();
    }
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
  });
});
