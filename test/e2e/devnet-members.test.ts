import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { post } from "../../src/devnet/client.js";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { expectMemberRootsNaive, naiveDevnetRoots } from "../helpers/naive-chain.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";

const KEYS = [
  "0x1111111111111111111111111111111111111111111111111111111111111111",
  "0x2222222222222222222222222222222222222222222222222222222222222222",
  "0x3333333333333333333333333333333333333333333333333333333333333333",
];
const address = (k: string): string =>
  ethAddressFromPrivateKey(new Uint8Array(Buffer.from(k.slice(2), "hex")));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function devnet(
  variant: "P" | "G",
  opts: { traffic?: number; committee?: string[]; cutByHand?: boolean } = {},
): Promise<Devnet> {
  const dn = await startDevnet({
    variant,
    committee: opts.committee ?? [address(KEYS[0]!), address(KEYS[1]!)],
    quorum: 2,
    traffic: opts.traffic ?? 40,
    // Cut by hand: batches exist only when the test cuts them, so "the head batch" is a fixed id.
    batchIntervalMs: opts.cutByHand ? 3_600_000 : 250,
    batchSize: opts.cutByHand ? 1_000_000 : 20,
    seed: 7,
  });
  cleanups.push(() => dn.close());
  return dn;
}

async function member(dn: Devnet, key: string): Promise<Daemon> {
  const setup = await memberSetup({
    profile: dn.variant === "P" ? "perpetual" : "spot",
    privateKey: key,
    gatewayUrl: dn.urls.availability,
  });
  // The devnet serves the feeder on its own port.
  const config = { ...setup.config, feederGatewayUrl: dn.urls.feeder };
  const daemon = await startQuietDaemon(config);
  cleanups.push(async () => {
    await daemon.stop();
    await rm(setup.dir, { recursive: true, force: true });
  });
  return daemon;
}

describe("devnet with traffic and dacd members over real HTTP", () => {
  it.each(["G", "P"] as const)(
    "variant %s: every batch reaches its quorum of two members",
    async (variant) => {
      const dn = await devnet(variant);
      const members = await Promise.all([member(dn, KEYS[0]!), member(dn, KEYS[1]!)]);
      for (let id = 0; id < 6; id++) {
        const q = await dn.waitForQuorum(id, 60_000);
        expect(q.reached).toBe(true);
        expect(new Set(q.signers)).toEqual(new Set([address(KEYS[0]!), address(KEYS[1]!)]));
      }
      // What they signed, against a naive replay (the devnet's roots are dacd's): the first batches,
      // BigInt Pedersen being slow for random 64-bit position ids.
      for (const m of members) await expectMemberRootsNaive(dn.chain, m.store, [0, 1]);
    },
  );

  it("refuses a member whose key is not in the committee; it signs nothing accepted", async () => {
    const dn = await devnet("G");
    const outsider = await member(dn, KEYS[2]!);
    await dn.waitForBatch(2, 30_000);
    await waitFor(() => outsider.member.state.failing?.code === "GATEWAY", 30_000, "refusal");
    expect(outsider.member.state.failing?.batch_id).toBe(0);
    expect(outsider.member.state.nextBatchId).toBe(0);
    expect(dn.status().batches.length).toBeGreaterThan(2);
  });

  it("never signs an injected wrong root, and follows the new prev_batch_id after a rejection", async () => {
    const dn = await devnet("G", { traffic: 30, cutByHand: true });
    const a = await member(dn, KEYS[0]!);
    const b = await member(dn, KEYS[1]!);
    await dn.cutBatch(true);
    await dn.cutBatch(true);
    await dn.waitForQuorum(1, 60_000);
    // The next batch states a wrong vault root: both members refuse it.
    const fault = await post(`${dn.urls.availability}/devnet/fault`, { type: "wrong_root", tree: "vault" });
    expect(fault.status).toBe(200);
    const bad = dn.chain.lastBatchId() + 1;
    await dn.cutBatch(true);
    await dn.waitForBatch(bad, 30_000);
    await waitFor(
      () => a.member.state.failing?.code === "ROOT_MISMATCH" || a.member.state.nextBatchId > bad,
      30_000,
    );
    // The operator rejects it (still the head: nothing is cut meanwhile); the next batch builds on
    // the one before, and members move on.
    const reject = await post(`${dn.urls.availability}/devnet/fault`, {
      type: "reject_batch",
      batch_id: bad,
    });
    expect(reject.status).toBe(200);
    await dn.cutBatch(true);
    await dn.cutBatch(true);
    const next = await dn.waitForBatch(bad + 1, 30_000);
    expect(next.prevBatchId).toBe(bad - 1);
    const q = await dn.waitForQuorum(bad + 2, 60_000);
    expect(q.reached).toBe(true);
    const badQuorum = (dn.status().batches as { batch_id: number; quorum?: { count: number } }[]).find(
      (x) => x.batch_id === bad,
    );
    expect(badQuorum?.quorum?.count ?? 0).toBe(0);
    expect(await a.store.getBatch(bad)).toBeUndefined();
    expect(await b.store.getBatch(bad)).toBeUndefined();
    expect((await a.store.getCursor())?.skipped).toContain(bad);
    // The injected root is wrong against a naive replay too, and what the members signed is right.
    expect(naiveDevnetRoots(dn.chain, bad).wrongStated.get(bad)).toEqual(["vault"]);
    await expectMemberRootsNaive(dn.chain, a.store, [bad - 1, bad + 1]);
  });

  it("after the operator rejects its head batch, members verify the next one from the earlier state", async () => {
    const dn = await devnet("P", { traffic: 30 });
    await Promise.all([member(dn, KEYS[0]!), member(dn, KEYS[1]!)]);
    await dn.waitForQuorum(2, 60_000);
    // The head batch, signed or not (with traffic the devnet may have cut more since batch 2).
    const reject = await post(`${dn.urls.availability}/devnet/fault`, { type: "reject_batch" });
    expect(reject.status).toBe(200);
    const { rejected, head_batch_id: head } = reject.json as { rejected: number; head_batch_id: number };
    expect(rejected).toBeGreaterThanOrEqual(2);
    expect(head).toBe(rejected - 1);
    const next = await dn.waitForBatch(rejected + 1, 30_000);
    expect(next.prevBatchId).toBe(head);
    const q = await dn.waitForQuorum(rejected + 2, 60_000);
    expect(q.reached).toBe(true);
  });
});
