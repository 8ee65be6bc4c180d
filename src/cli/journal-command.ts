/**
 * `dacd journal repair`: merges copies of the claims journal (backups, a dump's) into the member's
 * journal, recovering damaged lines from them. Runs only while no dacd holds the store, so that no
 * claim is appended while the journal is being replaced.
 */
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DacdError } from "../errors.js";
import { repairClaimsJournal } from "../storage/claims-journal-repair.js";
import { isLockError, LevelStore } from "../storage/level-store.js";
import { printJson } from "./output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "./store-options.js";

export function registerJournalCommand(program: Command): void {
  const journal = program.command("journal").description("the claims journal (docs/hardening.md)");
  storeOptions(
    journal
      .command("repair")
      .description(
        "merge copies of the claims journal into this member's, recovering damaged lines from them; never drops a claim",
      )
      .requiredOption("--from <file...>", "copies to merge: claims.journal of backups or dumps, newest first")
      .option("--journal <file>", "the journal to repair (default: the configuration's claims_journal_path)"),
  ).action(async (opts: StoreOptions & { from: string[]; journal?: string }) => {
    const { dir, journal: configured } = storeDirOf(opts);
    const release = await holdStoreIfPresent(dir);
    try {
      printJson(await repairClaimsJournal(opts.journal ?? configured, opts.from));
    } finally {
      await release();
    }
  });
}

/** Takes the store's lock while the journal is replaced; refuses while a dacd process holds it. */
async function holdStoreIfPresent(dir: string): Promise<() => Promise<void>> {
  if (!existsSync(join(dir, "LOCK"))) return async () => undefined;
  try {
    const store = await LevelStore.open(dir, {}, { existing: true });
    return () => store.close();
  } catch (err) {
    if (isLockError(err))
      throw new DacdError(
        "STORE",
        `the store ${dir} is in use by another dacd process: stop dacd before repairing its claims journal`,
      );
    // A store that cannot be opened for another reason is not writing to the journal either.
    return async () => undefined;
  }
}
