import { lstat, readFile, readlink, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { StarkSigner } from "../../src/signer/stark-signer.js";
import { ClaimsJournal, formatLine, readClaimsJournal } from "../../src/storage/claims-journal.js";
import { repairClaimsJournal } from "../../src/storage/claims-journal-repair.js";
import { hexToBytes32 } from "../../src/util/bytes.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * Journal repair attacked with copies that are not the member's own (issue 65, items 3, 4 and 8):
 * it restores only what the member key signed, in the form the member compares, and the member
 * never posts a journaled signature that is not its own.
 */

afterEach(removeTempDirs);

const member = new EthSigner(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
const other = new EthSigner(Uint8Array.from({ length: 32 }, (_, i) => 200 - i));
const claim = (n: number): string => `0x${(0xabc000 + n).toString(16).padStart(64, "0")}`;
const signed = (signer: EthSigner, c: string): string => signer.sign(hexToBytes32(c)!);
const opts = { memberKey: member.memberKey };

/** A record line as the journal writes it (its newline included). */
function line(batchId: unknown, claimHash: string, signature: unknown, memberKey = member.memberKey): string {
  return formatLine({
    batch_id: batchId as number,
    claim_hash: claimHash,
    signature: signature as string,
    member_key: memberKey,
    at: "2026-01-01T00:00:00.000Z",
  });
}

/** A journal of batches 0..n-1 signed by the member, as the daemon writes it. */
async function memberJournal(n: number): Promise<{ dir: string; path: string; text: string }> {
  const dir = await tempDir("dacd-repair-attack-");
  const path = join(dir, "claims.journal");
  const j = await ClaimsJournal.open(path);
  for (let id = 0; id < n; id++) await j.ensure(id, claim(id), signed(member, claim(id)), member.memberKey);
  await j.close();
  return { dir, path, text: await readFile(path, "utf8") };
}

async function copyOf(dir: string, lines: string[]): Promise<string> {
  const p = join(dir, `copy-${Math.random().toString(16).slice(2)}.journal`);
  await writeFile(p, lines.join(""));
  return p;
}

function damage(l: string): string {
  return l.slice(0, -2) + (l.at(-2) === "0" ? "1" : "0") + "\n";
}

describe("journal repair restores only what the member signed", () => {
  it("refuses a copy holding the true claim of an unsigned batch with another key's signature", async () => {
    const { dir, path, text } = await memberJournal(5);
    const copy = await copyOf(dir, [line(5, claim(5), signed(other, claim(5)))]);
    const err = await repairClaimsJournal(path, [copy], opts).catch((e: unknown) => e);
    expect(isDacdError(err, "CONFLICTING_CLAIM")).toBe(true);
    expect((err as Error).message).toMatch(
      /batch 5: the signature recovers to 0x[0-9a-fA-F]{40}, not to member/,
    );
    expect(await readFile(path, "utf8")).toBe(text);
  });

  it("restores a claim the member signed", async () => {
    const { dir, path } = await memberJournal(5);
    const copy = await copyOf(dir, [line(5, claim(5), signed(member, claim(5)))]);
    expect((await repairClaimsJournal(path, [copy], opts)).added).toEqual([5]);
    expect((await readClaimsJournal(path))?.get(5)).toBe(claim(5));
  });

  it("refuses STARK-form signatures on an Ethereum member", async () => {
    const { dir, path, text } = await memberJournal(2);
    const stark = new StarkSigner(Uint8Array.from({ length: 32 }, (_, i) => (i === 0 ? 0 : i)));
    const copy = await copyOf(dir, [line(2, claim(2), stark.sign(hexToBytes32(claim(2))!))]);
    await expect(repairClaimsJournal(path, [copy], opts)).rejects.toThrow(/STARK-form signature/);
    expect(await readFile(path, "utf8")).toBe(text);
  });

  it("does not restore negative, out-of-range or non-hash records", async () => {
    const { dir, path } = await memberJournal(2);
    const copy = await copyOf(dir, [
      line(-1, claim(7), signed(member, claim(7))),
      line(2 ** 53 - 1, claim(8), signed(member, claim(8))),
      line(4, "hello", signed(member, claim(4))),
    ]);
    const report = await repairClaimsJournal(path, [copy], opts);
    expect(report.added).toEqual([]);
    expect(report.unreadable).toEqual([1, 2, 3].map((line) => ({ from: copy, line })));
    expect([...(await readClaimsJournal(path))!.keys()]).toEqual([0, 1]);
  });

  it("does not restore records without a signature (loaded, never signed)", async () => {
    const { dir, path } = await memberJournal(2);
    const copy = await copyOf(dir, [line(2, claim(2), "", "")]);
    const report = await repairClaimsJournal(path, [copy], opts);
    expect(report.added).toEqual([]);
    expect(report.unsigned).toEqual([2]);
    expect((await readClaimsJournal(path))?.has(2)).toBe(false);
  });

  it("does not take a damaged line from a copy whose earlier lines cannot be read", async () => {
    const { dir, path } = await memberJournal(5);
    const lines = (await readFile(path, "utf8")).split(/(?<=\n)/);
    lines[2] = damage(lines[2]!);
    const damaged = lines.join("");
    await writeFile(path, damaged);
    const copy = await copyOf(dir, [
      damage(lines[0]!),
      damage(lines[1]!),
      line(99, claim(99), signed(member, claim(99))),
    ]);
    await expect(repairClaimsJournal(path, [copy], opts)).rejects.toThrow(/line 3 is damaged and none/);
    expect(await readFile(path, "utf8")).toBe(damaged);
  });

  it("writes claim hashes in lower case, so that the member accepts its own claim", async () => {
    const { dir, path } = await memberJournal(2);
    const upper = `0x${claim(2).slice(2).toUpperCase()}`;
    const copy = await copyOf(dir, [line(2, upper, signed(member, claim(2)))]);
    expect((await repairClaimsJournal(path, [copy], opts)).added).toEqual([2]);
    expect(await readFile(path, "utf8")).not.toContain(upper.slice(2));
    const j = await ClaimsJournal.open(path);
    try {
      expect(() => j.check(2, claim(2))).not.toThrow();
    } finally {
      await j.close();
    }
  });

  it("repairs a symlinked journal in its target's place, keeping the link", async () => {
    const { dir, path } = await memberJournal(4);
    const link = join(dir, "linked.journal");
    await symlink(path, link);
    const full = await copyOf(dir, (await readFile(path, "utf8")).split(/(?<=\n)/));
    const lines = (await readFile(path, "utf8")).split(/(?<=\n)/);
    lines[1] = damage(lines[1]!);
    await writeFile(path, lines.join(""));
    const report = await repairClaimsJournal(link, [full], opts);
    expect(report.recovered).toEqual([2]);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readlink(link)).toBe(path);
    expect([...(await readClaimsJournal(path))!.keys()]).toEqual([0, 1, 2, 3]);
  });
});

describe("the member never posts a journaled signature that is not its own", () => {
  it("stops at a journaled signature that recovers to another address, naming the batch and journal repair", async () => {
    const { dir } = await memberJournal(0);
    const path = join(dir, "claims.journal");
    await writeFile(path, line(5, claim(5), signed(other, claim(5))));
    const j = await ClaimsJournal.open(path);
    try {
      await expect(j.journaledSignature(5, member.memberKey)).rejects.toThrow(
        /batch 5: .*not this member's.*`dacd journal repair`/,
      );
      await expect(j.ensure(5, claim(5), signed(member, claim(5)), member.memberKey)).rejects.toThrow(
        /batch 5: .*journal repair/,
      );
      await expect(j.journaledSignature(5, member.memberKey)).rejects.toMatchObject({
        name: "ForeignSignatureError",
      });
    } finally {
      await j.close();
    }
  });

  it("posts its own journaled signature", async () => {
    const { path } = await memberJournal(3);
    const j = await ClaimsJournal.open(path);
    try {
      expect(await j.journaledSignature(1, member.memberKey)).toBe(signed(member, claim(1)));
    } finally {
      await j.close();
    }
  });

  it("never journals an empty signature from an imported (loaded) batch record", async () => {
    const { path } = await memberJournal(2);
    const j = await ClaimsJournal.open(path);
    try {
      const r = await j.importMissing([{ batch_id: 6, claim_hash: claim(6), signature: "", member_key: "" }]);
      expect(r.added).toBe(0);
      expect(j.get(6)).toBeUndefined();
    } finally {
      await j.close();
    }
    expect(await readFile(path, "utf8")).not.toContain('"signature":""');
  });
});
