import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { ClaimsJournal, readClaimsJournal } from "../../src/storage/claims-journal.js";
import { repairClaimsJournal } from "../../src/storage/claims-journal-repair.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { hexToBytes32 } from "../../src/util/bytes.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterEach(removeTempDirs);
const claim = (n: number): string => `0x${n.toString(16).padStart(64, "0")}`;
const member = new EthSigner(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
const sig = (c: string): string => member.sign(hexToBytes32(c)!);
const opts = { memberKey: member.memberKey };

/**
 * A journal of batches 0..n-1 (batch id's claim is claim(first + id)), and a copy of it taken when
 * it held `backupAt` lines.
 */
async function journalWithBackup(n: number, backupAt: number, first = 100) {
  const dir = await tempDir("dacd-repair-");
  const path = join(dir, "claims.journal");
  const backup = join(dir, "backup.journal");
  const j = await ClaimsJournal.open(path);
  for (let id = 0; id < n; id++) {
    if (id === backupAt) await writeFile(backup, await readFile(path));
    await j.ensure(id, claim(first + id), sig(claim(first + id)), member.memberKey);
  }
  await j.close();
  return { dir, path, backup, all: new Map([...Array(n).keys()].map((id) => [id, claim(first + id)])) };
}

/** Flips one checksum digit of line `line` (1-based): the line stays terminated, so it is damage. */
async function damageLine(path: string, line: number): Promise<string> {
  const lines = (await readFile(path, "utf8")).split("\n");
  const l = lines[line - 1]!;
  lines[line - 1] = l.slice(0, -1) + (l.endsWith("0") ? "1" : "0");
  const text = lines.join("\n");
  await writeFile(path, text);
  return text;
}

describe("dacd journal repair", () => {
  it("recovers a damaged line from a backup that holds it, keeps every later claim and the damaged file", async () => {
    const { path, backup, all } = await journalWithBackup(12, 6);
    const damaged = await damageLine(path, 4);
    await expect(ClaimsJournal.open(path)).rejects.toThrow(/line 4 is damaged/);
    const report = await repairClaimsJournal(path, [backup], opts);
    expect(report.recovered).toEqual([4]);
    expect(report.added).toEqual([]);
    expect(report.records).toBe(12);
    expect(await readClaimsJournal(path)).toEqual(all);
    expect(await readFile(report.kept_as!, "utf8")).toBe(damaged);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const reopened = await ClaimsJournal.open(path);
    expect(reopened.size).toBe(12);
    await reopened.close();
  });

  it("refuses, changing nothing, when no copy holds the damaged line (a backup older than the line)", async () => {
    const { path, backup } = await journalWithBackup(12, 6);
    const damaged = await damageLine(path, 9);
    const err = await repairClaimsJournal(path, [backup], opts).catch((e: unknown) => e);
    expect(isDacdError(err, "STORE")).toBe(true);
    expect((err as Error).message).toMatch(/line 9 is damaged and none of the given copies holds it/);
    expect(await readFile(path, "utf8")).toBe(damaged);
  });

  it("does not take a line from a copy of another journal (its earlier lines differ)", async () => {
    const { path } = await journalWithBackup(5, 5);
    // Other claims for the same batch ids: its lines differ whatever their times (two journals
    // written in the same millisecond with the same claims would be line for line the same).
    const other = await journalWithBackup(5, 5, 200);
    await damageLine(path, 3);
    await expect(repairClaimsJournal(path, [other.path], opts)).rejects.toThrow(
      /none of the given copies holds it/,
    );
  });

  it("merges an older backup instead of replacing: the claims released since stay", async () => {
    const { path, backup, all } = await journalWithBackup(20, 5);
    const report = await repairClaimsJournal(path, [backup], opts);
    expect(report).toMatchObject({ recovered: [], added: [], records: 20 });
    expect(report.kept_as).toBeUndefined();
    expect(await readClaimsJournal(path)).toEqual(all);
  });

  it("rebuilds a lost journal from copies, and refuses copies that disagree on a claim", async () => {
    const { dir, path, all } = await journalWithBackup(6, 6);
    const lost = join(dir, "lost", "claims.journal");
    const report = await repairClaimsJournal(lost, [path], opts);
    expect(report.added).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await readClaimsJournal(lost)).toEqual(all);

    const rogue = join(dir, "rogue.journal");
    const r = await ClaimsJournal.open(rogue);
    await r.ensure(3, claim(999), sig(claim(999)), member.memberKey);
    await r.close();
    const before = await readFile(lost, "utf8");
    const err = await repairClaimsJournal(lost, [rogue], opts).catch((e: unknown) => e);
    expect(isDacdError(err, "CONFLICTING_CLAIM")).toBe(true);
    expect((err as Error).message).toContain(claim(999));
    expect(await readFile(lost, "utf8")).toBe(before);
  });
});
