import { spawnSync } from "node:child_process";
import { readdir, readFile, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { defaultClaimsJournalPath } from "../../src/storage/claims-journal.js";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import type { Post } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Signs the whole spot chain, stops, and cuts LevelDB's current write-ahead log in half. */
async function signThenLoseTail() {
  const { responses } = loadChain("spot-chain");
  const { gw, expected, setup } = await spotChainMember(cleanups);
  const daemon = await startQuietDaemon(setup.config);
  await waitFor(() => daemon.member.state.nextBatchId === expected.batches.length, 60_000, "all signed");
  await daemon.stop();
  expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));

  const dir = setup.config.dataDir;
  const logs = (await readdir(dir)).filter((f) => /^\d+\.log$/.test(f)).sort();
  const wal = join(dir, logs.at(-1)!);
  await truncate(wal, Math.floor((await stat(wal)).size / 2));
  const store = await LevelStore.open(dir);
  const cursor = await store.getCursor();
  const last = await store.lastBatchId();
  await store.close();
  // The store forgot batches it signed, and says nothing about it.
  expect(cursor!.next_batch_id).toBeLessThan(expected.batches.length);
  expect(last!).toBeLessThan(expected.batches.length - 1);
  return { gw, setup, expected, responses, lostFrom: last! + 1, resumeFrom: cursor!.next_batch_id };
}

describe("claims journal: a store that lost batches never signs them with other claims", () => {
  it("refuses equivocated data for lost batch ids (CONFLICTING_CLAIM, metric), posts no second claim", async () => {
    const { gw, setup, expected, lostFrom } = await signThenLoseTail();
    // The gateway now serves other valid data for the lost ids: batches that change nothing, built
    // on the batch before (their roots are that batch's, their claims differ from the first ones).
    gw.interceptor = (_req, res, url, body) => {
      if (url.pathname.endsWith("/get_batch_data")) {
        const id = Number(url.searchParams.get("batch_id"));
        if (id < lostFrom || id >= expected.batches.length) return false;
        const r = expected.batches[id - 1]!.roots;
        const update = {
          prev_batch_id: id - 1,
          vaults: {},
          orders: {},
          rollup_vaults: {},
          vault_root: r.vault,
          order_root: r.order,
          rollup_vault_root: r.rollup_vault,
        };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ update }));
        return true;
      }
      if (url.pathname.endsWith("/approve_new_roots")) {
        gw.posts.push(JSON.parse(body) as Post);
        res.writeHead(200, { "content-type": "application/str" }).end("signature accepted");
        return true;
      }
      return false;
    };
    // Where the cut took the cursor's last move too, the stored batch before lostFrom is posted
    // again, with its own claim: not a lost id, and no conflicting claim.
    const postsBefore = gw.posts.length;
    const lostIdPosts = () => gw.posts.slice(postsBefore).filter((p) => p.batch_id >= lostFrom);
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(
      () => daemon.member.state.failing?.code === "CONFLICTING_CLAIM" || lostIdPosts().length > 0,
      60_000,
      "the conflicting claim to be refused",
    );
    await new Promise((r) => setTimeout(r, 500));
    // Without the journal, each lost id is posted again with a second claim.
    expect(gw.conflictingClaims()).toEqual([]);
    // A few retries go by; still nothing posted for the lost ids.
    await waitFor(() => (daemon.member.state.failing?.attempts ?? 0) >= 3, 60_000, "retries");
    expect(lostIdPosts()).toEqual([]);
    expect(gw.conflictingClaims()).toEqual([]);
    expect(daemon.member.state.failing!.batch_id).toBe(lostFrom);
    expect(daemon.member.state.failing!.reason).toContain(expected.batches[lostFrom]!.claim_hash);
    expect(daemon.member.state.nextBatchId).toBe(lostFrom);
    const metrics = (await daemon.metrics.render()).body;
    expect(metrics).toMatch(/^dacd_conflicting_claims_total [1-9]/m);

    const journal = await readFile(defaultClaimsJournalPath(setup.config.dataDir), "utf8");
    expect(journal.trim().split("\n")).toHaveLength(expected.batches.length);

    // `dacd check` names the batches the store lost.
    await daemon.stop();
    const check = spawnSync(process.execPath, [BIN, "check", "--config", setup.configPath], {
      encoding: "utf8",
    });
    expect(check.status).toBe(1);
    const report = JSON.parse(check.stdout) as { claims_journal: { lost: number[] }; problems: unknown[] };
    const lost = expected.batches.map((b) => b.batch_id).filter((id) => id >= lostFrom);
    expect(report.claims_journal.lost).toEqual(lost);
    expect(JSON.stringify(report.problems)).toContain("lost by the store");
  }, 120_000);

  it("signs the lost batches again when the gateway serves the same data (same claims)", async () => {
    const { gw, setup, expected, lostFrom, resumeFrom } = await signThenLoseTail();
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(() => daemon.member.state.nextBatchId === expected.batches.length, 60_000, "all signed");
    expect(gw.conflictingClaims()).toEqual([]);
    // Posted again from where the cursor left off: every lost id, and, where the cut took the
    // cursor's last move too (the next batch's write can come before a batch's acceptance), the
    // stored batch before them, with its own claim.
    expect(resumeFrom).toBeLessThanOrEqual(lostFrom);
    const reposted = gw.posts.slice(expected.batches.length).map((p) => p.batch_id);
    expect(reposted).toEqual(expected.batches.map((b) => b.batch_id).filter((id) => id >= resumeFrom));
    expect(reposted).toEqual(expect.arrayContaining(expected.batches.slice(lostFrom).map((b) => b.batch_id)));
  }, 120_000);
});
