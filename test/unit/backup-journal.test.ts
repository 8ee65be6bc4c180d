import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { backupStore } from "../../src/service/backup.js";
import { ClaimsJournal } from "../../src/storage/claims-journal.js";
import { LevelStore } from "../../src/storage/level-store.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

it("a backup carries the claims journal, and the backup still opens as a store", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dacd-backup-journal-"));
  dirs.push(dir);
  const store = await LevelStore.open(join(dir, "data"));
  await store.meta.ensureIdentity({ profile: "spot", heights: { vault: 31, order: 251 } });
  const journalPath = join(dir, "data-claims", "claims.journal");
  const journal = await ClaimsJournal.open(journalPath);
  await journal.ensure(0, "0x" + "ab".repeat(32), "0xsig");
  const result = await backupStore(store, join(dir, "backups"), { keep: 2, claimsJournalPath: journalPath });
  await store.close();
  await journal.close();
  expect(await readFile(join(result.path, "claims.journal"), "utf8")).toBe(
    await readFile(journalPath, "utf8"),
  );
  const restored = await LevelStore.open(result.path);
  expect(await restored.meta.identity()).toEqual({ profile: "spot", heights: { vault: 31, order: 251 } });
  await restored.close();
});
