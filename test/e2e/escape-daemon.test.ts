import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CONTROL_SOCKET } from "../../src/control/socket-path.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { startVectorMember } from "../helpers/signing-member.js";

/**
 * `dacd proof`, `dacd dump` and `dacd check --deep` while `dacd run` holds the store: they go
 * through the daemon's control socket (a direct open would fail on LevelDB's lock), and their
 * output equals the same commands on a stopped copy of the store at the same batch.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Every file of a dump directory; the manifest without its creation time. */
async function readDump(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    // The member's claims journal rides along with a dump of its own store (not of a copy's).
    if (name === "claims.journal") continue;
    const text = await readFile(join(dir, name), "utf8");
    if (name === "manifest.json") {
      const { created_at: _, ...rest } = JSON.parse(text) as Record<string, unknown>;
      out[name] = JSON.stringify(rest);
    } else out[name] = text;
  }
  return out;
}

/** The first `n` leaf ids of a dump file (vault CSV or position JSON lines). */
function leafIds(text: string, n: number): string[] {
  const lines = text.split("\n").filter((l) => l && !/^[a-z]/.test(l));
  return lines
    .slice(0, n)
    .map((l) =>
      l.startsWith("{") ? (JSON.parse(l) as { position_id: string }).position_id : l.split(",")[0]!,
    );
}

describe.each([
  ["spot-chain", "vault", "vaults.csv"],
  ["perpetual-chain", "position", "positions.jsonl"],
] as const)("escape commands through the running daemon (%s)", (chain, tree, file) => {
  it("proof, dump and check --deep answer through the socket and equal a stopped copy's", async () => {
    const m = await startVectorMember(chain, { available: 3 }, cleanups);
    // The gateway counts a signature before the daemon stores its acceptance: wait for the cursor.
    await waitFor(() => m.daemon.member.state.nextBatchId === 3, 60_000, "three batches signed");
    const cfg = ["--config", m.configPath];
    const work = await mkdtemp(join(tmpdir(), "dacd-escape-daemon-"));
    cleanups.push(() => rm(work, { recursive: true, force: true }));

    // While the rest of the chain is signed: a dump of batch 2 from the daemon's snapshot.
    m.gw.available = m.expected.batches.length;
    const during = await dacdAsync(["dump", ...cfg, "--out", join(work, "during"), "--batch", "2"]);
    expect(during.err).toBe("");
    expect(during.code).toBe(0);
    await waitFor(
      () => m.daemon.member.state.nextBatchId === m.expected.batches.length,
      60_000,
      "all signed",
    );
    const last = m.expected.batches.at(-1)!.batch_id;

    const live = {
      dump: await dacdAsync(["dump", ...cfg, "--out", join(work, "live")]),
      check: await dacdAsync(["check", ...cfg, "--deep"]),
      checkOld: await dacdAsync(["check", ...cfg, "--deep", "--batch", "1,2"]),
    };
    expect(live.dump.code).toBe(0);
    expect(live.check.code).toBe(0);
    expect(JSON.parse(live.check.out)).toMatchObject({ ok: true, last_batch_id: last });
    const ids = leafIds((await readDump(join(work, "live")))[file]!, 3);
    expect(ids.length).toBe(3);
    const proofs = await Promise.all(
      [...ids, "0"].map((id) => dacdAsync(["proof", ...cfg, tree, id, "--batch", String(last)])),
    );
    for (const p of proofs) expect(p.code).toBe(0);
    // Exit codes (cli/exit-codes.ts): 64 for a malformed argument, 2 when the command could not run.
    const bad = await dacdAsync(["proof", ...cfg, tree, "12x"]);
    expect(bad.code).toBe(64);
    expect(bad.err).toMatch(/leaf id "12x" is not a non-negative integer/);
    const missing = await dacdAsync(["dump", ...cfg, "--out", join(work, "nope"), "--batch", "99"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/batch 99 is not in the store/);

    // The same commands on a stopped copy of the store.
    await m.stop();
    const copy = join(work, "copy");
    await cp(m.config.dataDir, copy, { recursive: true, filter: (s) => !s.endsWith(CONTROL_SOCKET) });
    const db = ["--db", copy];
    const offline = {
      during: await dacdAsync(["dump", ...db, "--out", join(work, "off-during"), "--batch", "2"]),
      dump: await dacdAsync(["dump", ...db, "--out", join(work, "off")]),
      check: await dacdAsync(["check", ...db, "--deep"]),
      checkOld: await dacdAsync(["check", ...db, "--deep", "--batch", "1,2"]),
    };
    expect(offline.during.code).toBe(0);
    expect(await readDump(join(work, "during"))).toEqual(await readDump(join(work, "off-during")));
    expect(JSON.parse(during.out)).toMatchObject({ batch_id: 2 });
    expect(await readDump(join(work, "live"))).toEqual(await readDump(join(work, "off")));
    // The copy has no claims journal of its own (it sits beside the member's data_dir, not the copy's).
    const withoutJournal = (out: string): unknown => {
      const { claims_journal: _, ...report } = JSON.parse(out) as Record<string, unknown>;
      return report;
    };
    expect(JSON.parse(live.check.out)).toEqual(withoutJournal(offline.check.out));
    expect(JSON.parse(live.checkOld.out)).toEqual(withoutJournal(offline.checkOld.out));
    // One at a time: each opens the copy, and LevelDB admits one process.
    const offProofs = [];
    for (const id of [...ids, "0"])
      offProofs.push(await dacdAsync(["proof", ...db, tree, id, "--batch", String(last)]));
    expect(proofs.map((p) => JSON.parse(p.out) as unknown)).toEqual(
      offProofs.map((p) => JSON.parse(p.out) as unknown),
    );
  }, 180_000);
});
