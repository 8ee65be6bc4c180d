import { appendFile, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { EthSigner } from "../../src/signer/eth-signer.js";
import { ClaimsJournal, readClaimsJournal } from "../../src/storage/claims-journal.js";
import { hexToBytes32 } from "../../src/util/bytes.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterEach(removeTempDirs);
const tmp = (): Promise<string> => tempDir("dacd-journal-");
const claim = (n: number): string => `0x${n.toString(16).padStart(64, "0")}`;

describe("ClaimsJournal", () => {
  it("creates its directory and file, keeps claims across reopening, allows the same claim again", async () => {
    const path = join(await tmp(), "sub", "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xsig0");
    await j.ensure(1, claim(2), { r: "0x1", s: "0x2" });
    await j.ensure(1, claim(2), { r: "0x1", s: "0x2" }); // same claim: fine, not appended twice
    await j.close();
    expect((await readFile(path, "utf8")).trim().split("\n")).toHaveLength(2);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const again = await ClaimsJournal.open(path);
    expect(again.ids()).toEqual([0, 1]);
    expect(again.get(1)).toBe(claim(2));
    expect(again.signatureKind).toBe("ethereum");
    await again.close();
  });

  it("refuses another claim for a journaled batch id, before and after reopening", async () => {
    const path = join(await tmp(), "claims.journal");
    const conflicts: number[] = [];
    const j = await ClaimsJournal.open(path, { onConflict: (id) => conflicts.push(id) });
    await j.ensure(7, claim(7), "0xa");
    expect(() => j.check(7, claim(8))).toThrow(/CONFLICTING|already released claim/);
    await j.close();
    const again = await ClaimsJournal.open(path, { onConflict: (id) => conflicts.push(id) });
    const err = await again.ensure(7, claim(8), "0xb").catch((e: unknown) => e);
    expect(isDacdError(err, "CONFLICTING_CLAIM")).toBe(true);
    expect((err as Error).message).toContain(claim(7));
    expect(conflicts).toEqual([7, 7]);
    expect(await readClaimsJournal(path)).toEqual(new Map([[7, claim(7)]]));
    await again.close();
  });

  it("ignores and cuts off a torn last record, then appends cleanly after it", async () => {
    const path = join(await tmp(), "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xa");
    await j.close();
    const good = (await stat(path)).size;
    await appendFile(path, '{"batch_id":1,"claim_hash":"0x'); // a crash mid-append
    const again = await ClaimsJournal.open(path);
    expect(again.tornTail).toBe(true);
    expect(again.ids()).toEqual([0]);
    expect((await stat(path)).size).toBe(good);
    await again.ensure(1, claim(3), "0xb");
    await again.close();
    expect((await readClaimsJournal(path))!.get(1)).toBe(claim(3));
  });

  it("refuses a damaged complete line anywhere, the last one included; only an unterminated line is torn", async () => {
    const path = join(await tmp(), "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xa");
    await j.ensure(1, claim(2), "0xb");
    await j.close();
    const text = await readFile(path, "utf8");
    const [first, second] = text.trim().split("\n");
    for (const damaged of [
      `${first}\n${second!.replace('"batch_id":1', '"batch_id":9')}\n`, // the last line, terminated
      `${first!.replace('"batch_id":0', '"batch_id":5')}\n${second}\n`, // an earlier line
    ]) {
      await writeFile(path, damaged);
      const err = await ClaimsJournal.open(path).catch((e: unknown) => e);
      expect(isDacdError(err, "STORE")).toBe(true);
      expect((err as Error).message).toMatch(/line [12] is damaged .*dacd journal repair --from/);
      expect(await readFile(path, "utf8")).toBe(damaged); // nothing cut, nothing appended
    }
  });

  it("appends at the end after every reopening, whatever the lines' lengths (ids crossing digit counts)", async () => {
    const path = join(await tmp(), "claims.journal");
    const written: [number, string][] = [];
    let next = 0;
    // Each run appends a few claims whose lines are longer than the first ones (ids 9 -> 10, 99 -> 100),
    // as a member does over a growing chain; the file is read back after each run.
    for (const upTo of [3, 8, 12, 40, 99, 101, 130]) {
      const j = await ClaimsJournal.open(path);
      expect(j.ids()).toEqual(written.map(([id]) => id));
      for (; next < upTo; next++) {
        await j.ensure(next, claim(1000 + next), `0x${"ab".repeat(65)}`);
        written.push([next, claim(1000 + next)]);
      }
      await j.close();
      const lines = (await readFile(path, "utf8")).split("\n");
      expect(lines.pop()).toBe("");
      expect(lines).toHaveLength(written.length);
      expect(await readClaimsJournal(path)).toEqual(new Map(written));
    }
  });

  it("refuses to append to a journal replaced, truncated or written by someone else while open", async () => {
    const path = join(await tmp(), "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xa");
    const backup = await readFile(path);
    await j.ensure(1, claim(2), "0xb");
    await writeFile(path, backup); // truncated in place (a restore by copy)
    const err = await j.ensure(2, claim(3), "0xc").catch((e: unknown) => e);
    expect(isDacdError(err, "STORE")).toBe(true);
    expect((err as Error).message).toMatch(/was changed while dacd ran/);
    await j.close();

    const k = await ClaimsJournal.open(path);
    await writeFile(`${path}.new`, backup);
    await rename(`${path}.new`, path); // replaced (a restore by rename)
    const replaced = await k.ensure(1, claim(2), "0xb").catch((e: unknown) => e);
    expect((replaced as Error).message).toMatch(/was replaced while dacd ran/);
    await k.close();
  });

  it("adds the store's claims it lacks and reports stored claims that differ", async () => {
    const path = join(await tmp(), "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xa");
    const result = await j.importMissing([
      { batch_id: 0, claim_hash: claim(1), signature: "0xa" },
      { batch_id: 1, claim_hash: claim(2), signature: "0xb" },
      { batch_id: 0, claim_hash: claim(9), signature: "0xc" },
    ]);
    expect(result).toEqual({ added: 1, conflicts: [0] });
    expect(j.ids()).toEqual([0, 1]);
    await j.close();
  });

  it("reads a journaled signature back, before and after reopening, and none for another member key", async () => {
    const path = join(await tmp(), "claims.journal");
    const key = new EthSigner(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
    const sig = (id: number): string => key.sign(hexToBytes32(claim(id))!);
    const lower = key.memberKey.toLowerCase();
    const j = await ClaimsJournal.open(path);
    for (let id = 0; id < 12; id++) await j.ensure(id, claim(id), sig(id), key.memberKey);
    expect(await j.journaledSignature(11, lower)).toBe(sig(11));
    expect(await j.ensure(3, claim(3), "0xother", key.memberKey)).toBe(sig(3));
    await j.close();
    const again = await ClaimsJournal.open(path);
    await again.ensure(12, claim(12), sig(12), key.memberKey);
    for (const id of [0, 9, 10, 12]) expect(await again.journaledSignature(id, key.memberKey)).toBe(sig(id));
    expect(await again.journaledSignature(5, "0xBB")).toBeUndefined();
    expect(await again.journaledSignature(99, key.memberKey)).toBeUndefined();
    await again.close();
  });
});
