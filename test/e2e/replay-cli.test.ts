import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CHAINS, FIXTURES, loadChain } from "../helpers/vectors.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
afterAll(removeTempDirs);

function replay(args: string[]): { code: number | null; lines: Record<string, unknown>[]; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, "replay", ...args], { encoding: "utf8", timeout: 120_000 });
  const lines = r.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code: r.status, lines, stderr: r.stderr };
}

const tmp = (): Promise<string> => tempDir("dacd-replay-");

describe("dacd replay", () => {
  it.each(CHAINS)("%s reproduces expected.json exactly, and again from the same store", async (chain) => {
    const { expected } = loadChain(chain);
    const dir = await tmp();
    await writeFile(join(dir, "key"), expected.private_key + "\n", { mode: 0o600 });
    const args = [
      "--profile",
      expected.profile,
      "--key-file",
      join(dir, "key"),
      "--input",
      join(FIXTURES, chain, "responses.json"),
      "--db",
      join(dir, "db"),
    ];
    const first = replay(args);
    expect(first.code).toBe(0);
    expect(first.lines).toEqual(
      expected.batches.map((b) => ({
        batch_id: b.batch_id,
        sequence_number: b.seq,
        roots: b.roots,
        claim_hash: b.claim_hash,
        signature: b.signature,
        member_key: expected.member_key,
      })),
    );
    const second = replay(args);
    expect(second.code).toBe(0);
    expect(second.lines).toEqual(first.lines);
  });

  it("reports a failing batch as an error line, stores nothing for it, continues, and exits non-zero", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const dir = await tmp();
    const broken = JSON.parse(JSON.stringify(responses)) as { update: Record<string, unknown> }[];
    broken[2]!.update.vault_root = "0".repeat(64);
    await writeFile(join(dir, "in.json"), JSON.stringify(broken));
    await writeFile(join(dir, "key"), expected.private_key, { mode: 0o600 });
    const r = replay([
      "--profile",
      "spot",
      "--key-file",
      join(dir, "key"),
      "--input",
      join(dir, "in.json"),
      "--db",
      join(dir, "db"),
    ]);
    expect(r.code).not.toBe(0);
    expect(r.lines[2]).toEqual({ batch_id: 2, error: expect.stringMatching(/^batch 2, field vault_root: /) });
    // Batch 3 builds on batch 1, so it still verifies; batches 4 and 5 follow it.
    expect(r.lines.filter((l) => "signature" in l).map((l) => l.batch_id)).toEqual([0, 1, 3, 4, 5]);
    expect(r.lines[3]).toMatchObject({ claim_hash: expected.batches[3]!.claim_hash });
  });

  it("takes the order root as given with --no-validate-orders", async () => {
    const { responses, expected } = loadChain("spot-golden");
    const dir = await tmp();
    const changed = JSON.parse(JSON.stringify(responses)) as { update: Record<string, unknown> }[];
    changed[0]!.update.order_root = "0".repeat(63) + "7";
    await writeFile(join(dir, "in.json"), JSON.stringify(changed));
    await writeFile(join(dir, "key"), expected.private_key, { mode: 0o600 });
    const base = ["--profile", "spot", "--key-file", join(dir, "key"), "--input", join(dir, "in.json")];
    expect(replay([...base, "--db", join(dir, "a")]).lines[0]).toMatchObject({
      error: expect.stringMatching(/order_root/),
    });
    const r = replay([...base, "--db", join(dir, "b"), "--no-validate-orders"]);
    expect(r.code).toBe(0);
    expect(r.lines[0]).toMatchObject({ roots: { order: "0".repeat(63) + "7" } });
  });
});
