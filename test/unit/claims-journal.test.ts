import { appendFile, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { ClaimsJournal, readClaimsJournal } from "../../src/storage/claims-journal.js";
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

  it("treats a complete last line with a wrong checksum as torn, but refuses a damaged earlier line", async () => {
    const path = join(await tmp(), "claims.journal");
    const j = await ClaimsJournal.open(path);
    await j.ensure(0, claim(1), "0xa");
    await j.ensure(1, claim(2), "0xb");
    await j.close();
    const text = await readFile(path, "utf8");
    const [first, second] = text.trim().split("\n");
    await writeFile(path, `${first}\n${second!.replace('"batch_id":1', '"batch_id":9')}\n`);
    const torn = await ClaimsJournal.open(path);
    expect(torn.ids()).toEqual([0]);
    await torn.close();
    await writeFile(path, `${first!.replace('"batch_id":0', '"batch_id":5')}\n${second}\n`);
    const err = await ClaimsJournal.open(path).catch((e: unknown) => e);
    expect(isDacdError(err, "STORE")).toBe(true);
    expect((err as Error).message).toMatch(/line 1 is damaged/);
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
});
