import { rm } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { memberSetup, spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway, type Interceptor } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";
import { storeStatus } from "../../src/inspect/inspect.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const json = (res: ServerResponse, status: number, body: string): true => {
  res.writeHead(status, { "content-type": "application/json" }).end(body);
  return true;
};

/**
 * Runs the spot chain through a gateway with `interceptor` installed and returns the gateway after
 * the member has signed `expectSigned` (default: every batch). Every posted signature must be the
 * expected one: the gateway records all posts, and none may differ from expected.json.
 */
async function runHostile(
  interceptor: Interceptor,
  expectSigned?: number[],
  mutate?: (responses: { update: unknown }[]) => void,
) {
  const { responses, expected } = loadChain("spot-chain");
  const served = JSON.parse(JSON.stringify(responses)) as { update: unknown }[];
  mutate?.(served);
  const gw = await new VectorGateway(served, expected, "G").start();
  cleanups.push(() => gw.close());
  gw.interceptor = interceptor;
  const setup = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    timeoutS: 1,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  const daemon = await startQuietDaemon(setup.config);
  cleanups.push(() => daemon.stop());
  const want = expectSigned ?? expected.batches.map((b) => b.batch_id);
  await waitFor(
    () => want.every((id) => gw.acceptedIds().includes(id)),
    60_000,
    `batches ${want.join(",")} signed`,
  );
  await waitFor(() => daemon.member.state.nextBatchId >= Math.max(...want) + 1, 10_000, "cursor");
  for (const post of gw.posts) {
    const exp = expected.batches.find((b) => b.batch_id === post.batch_id)!;
    expect(post.signature, `batch ${post.batch_id}`).toBe(exp.signature);
  }
  expect(gw.conflictingClaims()).toEqual([]);
  return { gw, daemon };
}

/** An interceptor that misbehaves on the first `times` get_batch_data calls for batch `batchId`. */
function onBatch(batchId: number, times: number, act: (res: ServerResponse) => void): Interceptor {
  let left = times;
  return (_req, res, url) => {
    if (
      !url.pathname.endsWith("get_batch_data") ||
      Number(url.searchParams.get("batch_id")) !== batchId ||
      left <= 0
    )
      return false;
    left--;
    act(res);
    return true;
  };
}

describe("a hostile or broken gateway never crashes the daemon nor yields a wrong signature", () => {
  it("503 bursts", async () => {
    // Bursts of four 503s in every ten requests, on every endpoint.
    let n = 0;
    await runHostile((_req, res) => (n++ % 10 < 4 ? json(res, 503, "busy") : false));
  });

  it("timeouts (a request that hangs)", async () => {
    await runHostile(onBatch(1, 2, () => undefined));
  });

  it("connection resets", async () => {
    await runHostile(onBatch(2, 3, (res) => res.socket?.destroy()));
  });

  it("truncated bodies", async () => {
    await runHostile(
      onBatch(1, 2, (res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "5000" });
        res.write('{"update": {"prev_batch_id": 0, "vaults": {');
        setTimeout(() => res.socket?.destroy(), 20);
      }),
    );
  });

  it("malformed JSON and wrong shapes", async () => {
    const bodies = [
      "{not json",
      "[]",
      '{"updates": {}}',
      '{"update": []}',
      '{"update": {"prev_batch_id": 0}}',
      '{"update": {"prev_batch_id": "x"}}',
    ];
    let i = 0;
    const { daemon } = await runHostile(onBatch(3, bodies.length, (res) => json(res, 200, bodies[i++]!)));
    expect(i).toBe(bodies.length);
    expect(daemon.member.state.failing).toBeUndefined();
  });

  it("an answer other than `signature accepted` is retried, with the same claim", async () => {
    let left = 3;
    const refusedPosts: { batch_id: number; claim_hash: string }[] = [];
    const { gw } = await runHostile((_req, res, url, body) => {
      if (!url.pathname.endsWith("approve_new_roots") || left <= 0) return false;
      left--;
      refusedPosts.push(JSON.parse(body) as { batch_id: number; claim_hash: string });
      res.writeHead(200, { "content-type": "application/str" }).end(left % 2 ? "signature rejected" : "ok");
      return true;
    });
    expect(refusedPosts.map((p) => p.batch_id)).toEqual([0, 0, 0]);
    expect(
      new Set([...refusedPosts, ...gw.posts.filter((p) => p.batch_id === 0)].map((p) => p.claim_hash)).size,
    ).toBe(1);
  });

  it("a root mismatch is never signed; the corrected batch is", async () => {
    let wrong = true;
    const { gw } = await runHostile((_req, res, url) => {
      if (!wrong || !url.pathname.endsWith("get_batch_data") || url.searchParams.get("batch_id") !== "4")
        return false;
      const update = JSON.parse(JSON.stringify(loadChain("spot-chain").responses[4]!.update)) as Record<
        string,
        unknown
      >;
      update.vault_root = "0".repeat(64);
      setTimeout(() => (wrong = false), 600);
      return json(res, 200, JSON.stringify({ update }));
    });
    expect(gw.posts.filter((p) => p.batch_id === 4).length).toBe(1);
  });

  it("an unknown prev_batch_id is refused until the gateway serves a known one", async () => {
    let bad = 3;
    await runHostile((_req, res, url) => {
      if (bad <= 0 || !url.pathname.endsWith("get_batch_data") || url.searchParams.get("batch_id") !== "1")
        return false;
      bad--;
      const update = JSON.parse(JSON.stringify(loadChain("spot-chain").responses[1]!.update)) as Record<
        string,
        unknown
      >;
      update.prev_batch_id = -1 + 0;
      update.prev_batch_id = 0.5; // not an integer, then
      if (bad === 0) update.prev_batch_id = -1 - 1; // below -1
      return json(res, 200, JSON.stringify({ update }));
    });
  });

  it("a batch the member refuses is skipped once the next batch builds on an earlier one", async () => {
    // Batch 2 states a wrong root and is refused; batch 3 names prev_batch_id 1, so the operator
    // dropped batch 2: the member moves past it unsigned and signs 3, 4 and 5 from batch 1's state.
    const { gw, daemon } = await runHostile(
      () => false,
      [0, 1, 3, 4, 5],
      (responses) => {
        (responses[2]!.update as Record<string, unknown>).vault_root = "1".repeat(64);
      },
    );
    expect(gw.acceptedIds()).toEqual([0, 1, 3, 4, 5]);
    expect(gw.posts.some((p) => p.batch_id === 2)).toBe(false);
    expect((await daemon.store.getCursor())?.skipped).toEqual([2]);
  });
});

describe("a skip the gateway takes back", () => {
  it("returns to the skipped batch when a later batch builds on it, and signs the whole chain", async () => {
    // Batch 4 is refused once (a wrong root on its first fetch); batch 5 names prev_batch_id 2
    // until the member has skipped 4, then names 4 again. The member must go back to 4 rather
    // than stay stuck at 5 with a previous batch it never verified.
    const { responses, expected } = loadChain("spot-chain");
    const { gw, setup } = await spotChainMember(cleanups);
    let daemon: Awaited<ReturnType<typeof startQuietDaemon>> | undefined = undefined;
    let badRootServed = false;
    let skipSeen = false;
    gw.interceptor = (_req, res, url) => {
      if (!url.pathname.endsWith("get_batch_data")) return false;
      const id = url.searchParams.get("batch_id");
      const update = (n: number) =>
        JSON.parse(JSON.stringify(responses[n]!.update)) as Record<string, unknown>;
      if (id === "4" && !badRootServed) {
        badRootServed = true;
        return json(res, 200, JSON.stringify({ update: { ...update(4), vault_root: "1".repeat(64) } }));
      }
      if (id === "5" && !skipSeen) {
        if ((daemon?.member.state.nextBatchId ?? 0) >= 5) skipSeen = true;
        else return json(res, 200, JSON.stringify({ update: { ...update(5), prev_batch_id: 2 } }));
      }
      return false;
    };
    daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon!.stop());
    const all = expected.batches.map((b) => b.batch_id);
    await waitFor(() => all.every((id) => gw.acceptedIds().includes(id)), 60_000, "every batch signed");
    expect(badRootServed && skipSeen).toBe(true);
    for (const post of gw.posts) {
      expect(post.signature, `batch ${post.batch_id}`).toBe(
        expected.batches.find((b) => b.batch_id === post.batch_id)!.signature,
      );
    }
    await waitFor(() => daemon!.member.state.nextBatchId > Math.max(...all), 10_000, "cursor");
    expect((await daemon.store.getCursor())?.skipped ?? []).toEqual([]);
  });
});

describe("a batch that keeps failing", () => {
  it("is reported with its reason by status, from the daemon and from the store", async () => {
    const { responses } = loadChain("spot-chain");
    const served = JSON.parse(JSON.stringify(responses)) as { update: Record<string, unknown> }[];
    served[1]!.update.vault_root = "0".repeat(64);
    const { gw, setup } = await spotChainMember(cleanups, served);
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(async () => (await storeStatus(daemon.store)).failing !== null, 20_000, "failure noted");
    expect(daemon.member.state.failing).toMatchObject({ batch_id: 1, code: "ROOT_MISMATCH" });
    expect((await storeStatus(daemon.store)).failing).toMatchObject({
      batch_id: 1,
      code: "ROOT_MISMATCH",
      reason: expect.stringMatching(/^batch 1, field vault_root: /),
    });
    expect(gw.acceptedIds()).toEqual([0]);
  });
});
