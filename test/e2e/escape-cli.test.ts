import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberSetup } from "../helpers/daemon.js";
import { FIXTURES, loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

function dacd(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let dir: string;
let db: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-escape-cli-"));
  db = join(dir, "db");
  const { expected } = loadChain("spot-chain");
  await writeFile(join(dir, "key"), expected.private_key + "\n", { mode: 0o600 });
  const r = dacd(
    "replay",
    "--profile",
    "spot",
    "--key-file",
    join(dir, "key"),
    "--input",
    join(FIXTURES, "spot-chain", "responses.json"),
    "--db",
    db,
  );
  expect(r.code).toBe(0);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("dacd escape commands", () => {
  it("dump, proof, verify-proof, load, check, prune: exit codes and output", async () => {
    const out = join(dir, "dump");
    const dump = dacd("dump", "--db", db, "--out", out);
    expect(dump.code).toBe(0);
    expect(JSON.parse(dump.out)).toMatchObject({ batch_id: 5, profile: "spot" });
    expect(dacd("dump", "--db", db, "--out", out).code).toBe(2); // not empty: could not run

    const proof = dacd("proof", "--db", db, "vault", "19237833");
    expect(proof.code).toBe(0);
    await writeFile(join(dir, "proof.json"), proof.out);
    const ok = dacd("verify-proof", join(dir, "proof.json"));
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ valid: true });
    const p = JSON.parse(proof.out) as { root: string; batch_id: number; siblings: string[] };
    // The root the proof is held against comes from the vectors, not from the store that built it.
    const vectorRoot = loadChain("spot-chain").expected.batches[5]!.roots.vault!;
    expect(p.batch_id).toBe(5);
    expect(p.root.replace(/^0x/, "")).toBe(vectorRoot);
    expect(dacd("verify-proof", join(dir, "proof.json"), "--root", vectorRoot).code).toBe(0);
    expect(dacd("verify-proof", join(dir, "proof.json"), "--root", "0x" + "1".repeat(63)).code).toBe(1);
    p.siblings[3] = p.siblings[3]!.replace(/^(.{10})./, "$1f");
    await writeFile(join(dir, "bad.json"), JSON.stringify(p));
    const bad = dacd("verify-proof", join(dir, "bad.json"));
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({ valid: false });
    // Exit 1 is an invalid proof; a proof that cannot be read is "could not run", 2, one line.
    const missing = dacd("verify-proof", join(dir, "missing.json"));
    expect(missing.code).toBe(2);
    expect(missing.err.trim().split("\n")).toHaveLength(1);
    expect(missing.err).toMatch(/^dacd: cannot read the proof .*missing\.json/);

    // load into a configured member's (empty) data_dir, then it is refused a second time.
    const { configPath } = await memberSetup({
      profile: "spot",
      privateKey: loadChain("spot-chain").expected.private_key,
      gatewayUrl: "http://127.0.0.1:1",
    });
    const load = dacd("load", "--config", configPath, "--from", out);
    expect(load.code).toBe(0);
    expect(JSON.parse(load.out)).toMatchObject({ batch_id: 5, sequence_number: 4 });
    const again = dacd("load", "--config", configPath, "--from", out);
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/not empty/);
    const check = dacd("check", "--config", configPath, "--deep");
    expect(check.code).toBe(0);
    expect(JSON.parse(check.out)).toMatchObject({
      ok: true,
      loaded_from_dump: { count: 1, ranges: "5" },
      problem_count: 0,
    });

    expect(dacd("check", "--db", db).code).toBe(0);
    const prune = dacd("prune", "--db", db, "--keep-batches", "2", "--checkpoint", "1");
    expect(prune.code).toBe(0);
    // Batch id lists are summarised as a count and ranges, not listed one by one.
    expect(JSON.parse(prune.out)).toMatchObject({
      kept_batches: { count: 3, ranges: "1,4-5" },
      pruned_batches: { count: 3, ranges: "0,2-3" },
    });
    expect(dacd("check", "--db", db, "--deep", "--batch", "1,4,5").code).toBe(0);
    const pruned = dacd("proof", "--db", db, "vault", "1", "--batch", "2");
    expect(pruned.code).toBe(2);
    expect(pruned.err).toMatch(/batch 2 was pruned/);
    expect(dacd("check", "--db", db, "--deep", "--batch", "2").code).toBe(1);

    // A changed dump file is refused by name.
    const csv = join(out, "vaults.csv");
    await writeFile(csv, (await readFile(csv, "utf8")) + "99,0x1,0x1,5\n");
    const refused = dacd("load", "--db", join(dir, "db3"), "--from", out);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/vaults\.csv/);
  }, 180_000);
});
