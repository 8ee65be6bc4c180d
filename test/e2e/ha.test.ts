import { rm } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon, type Daemon } from "../../src/app.js";
import type { Config } from "../../src/config/config.js";
import { createLogger } from "../../src/logging.js";
import { createSigner } from "../../src/signer/create-signer.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * High availability without shared storage (docs/operations.md): two instances with the same key,
 * each with its own store, against one gateway. Both verify and sign every batch on their own, and
 * because the signatures are deterministic (RFC 6979) their approve_new_roots bodies are identical
 * byte for byte; the gateway sees duplicate identical approvals.
 */
describe("two instances with the same key and separate stores", () => {
  it("both sign every batch and their posts are byte-identical", async () => {
    const { responses, expected } = loadChain("perpetual-chain");
    const gw = await new VectorGateway(responses, expected, "P").start();
    cleanups.push(() => gw.close());
    const raw = new Map<number, string[]>();
    gw.interceptor = (_req: IncomingMessage, _res: ServerResponse, url: URL, body: string) => {
      if (url.pathname.endsWith("/approve_new_roots")) {
        const id = (JSON.parse(body) as { batch_id: number }).batch_id;
        raw.set(id, [...(raw.get(id) ?? []), body]);
      }
      return false; // let the gateway answer
    };
    gw.available = 2;

    const daemons: Daemon[] = [];
    const configs: Config[] = [];
    for (let i = 0; i < 2; i++) {
      const setup = await memberSetup({
        profile: expected.profile,
        privateKey: expected.private_key,
        gatewayUrl: gw.url,
        feeder: true,
      });
      cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
      configs.push(setup.config);
      const daemon = await startDaemon(setup.config, { log: createLogger({ level: "silent" }), env: {} });
      cleanups.push(() => daemon.stop());
      daemons.push(daemon);
    }
    expect(daemons[0]!.store.dir).not.toBe(daemons[1]!.store.dir);

    const n = expected.batches.length;
    // Both have recorded the gateway's answers (not only received them): an instance stopped in
    // between re-posts its stored claim after a restart, which is right but would count twice here.
    await waitFor(
      () => gw.accepted.length === 4 && daemons.every((d) => d.member.state.nextBatchId === 2),
      60_000,
      "both sign the first two batches",
    );
    // One instance goes down; the other keeps signing alone.
    await daemons[1]!.stop();
    gw.available = 4;
    await waitFor(() => daemons[0]!.member.state.nextBatchId === 4, 30_000, "the survivor signs on");
    // It comes back and catches up from its own store; then both sign the rest.
    const restarted = await startDaemon(configs[1]!, { log: createLogger({ level: "silent" }), env: {} });
    cleanups.push(() => restarted.stop());
    gw.available = n;
    await waitFor(
      () => daemons[0]!.member.state.nextBatchId === n && restarted.member.state.nextBatchId === n,
      60_000,
      "both at the end",
    );
    await new Promise((r) => setTimeout(r, 200));

    expect(gw.conflictingClaims()).toEqual([]);
    for (const b of expected.batches) {
      const bodies = raw.get(b.batch_id) ?? [];
      expect(bodies, `batch ${b.batch_id}`).toHaveLength(2);
      expect(bodies[0]).toBe(bodies[1]);
      const post = JSON.parse(bodies[0]!) as { signature: string; claim_hash: string; member_key: string };
      expect(post.signature).toBe(b.signature);
      expect(post.member_key).toBe(expected.member_key);
    }
    // The gateway accepted every duplicate: it counts one member, twice.
    expect(gw.accepted.length).toBe(2 * n);
    for (const d of [daemons[0]!, restarted]) {
      expect(d.member.state.lastSigned?.batch_id).toBe(n - 1);
    }
  });

  it("STARK signatures are deterministic too: two signers with one key produce identical {r, s}", () => {
    const key = new Uint8Array(32).fill(0x5a);
    key[0] = 0x04;
    const claim = new Uint8Array(32).map((_, i) => i * 7);
    const a = createSigner("starknet", key).sign(claim);
    const b = createSigner("starknet", Uint8Array.from(key)).sign(claim);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});
