/**
 * `dacd journal repair`: merges copies of the claims journal (backups, a dump's) into the member's
 * journal, recovering damaged lines from them. Runs only while no dacd holds the store, so that no
 * claim is appended while the journal is being replaced.
 */
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DacdError } from "../errors.js";
import { loadConfigFor } from "./config-path.js";
import { printJson } from "./output.js";
import { storeDirOf, storeOptions, type StoreOptions } from "./store-options.js";

type RepairOptions = StoreOptions & { from: string[]; journal?: string; memberKey?: string };

export function registerJournalCommand(program: Command): void {
  const journal = program.command("journal").description("the claims journal (docs/hardening.md)");
  storeOptions(
    journal
      .command("repair")
      .description(
        "merge copies of the claims journal into this member's, recovering damaged lines from them; never drops a claim",
      )
      .requiredOption("--from <file...>", "copies to merge: claims.journal of backups or dumps, newest first")
      .option("--journal <file>", "the journal to repair (default: the configuration's claims_journal_path)")
      .option(
        "--member-key <key>",
        "the member's address (or STARK key) whose signatures may be restored (default: the configuration's key)",
      ),
  ).action(async (opts: RepairOptions) => {
    const { dir, journal: configured } = storeDirOf(opts);
    const path = opts.journal ?? configured;
    const memberKey = await memberKeyOf(opts, path);
    const release = await holdStoreIfPresent(dir);
    // The journal's modules are loaded only when a repair runs, not for every dacd command.
    const { repairClaimsJournal } = await import("../storage/claims-journal-repair.js");
    try {
      printJson(await repairClaimsJournal(path, opts.from, { memberKey }));
    } finally {
      await release();
    }
  });
}

/**
 * Whose signatures the repair restores: --member-key, or the key the configuration names (a key
 * file, a keystore or a PKCS#11 token, loaded as `dacd run` loads it), for the configuration's
 * chain kind, else the kind of the journal's own signatures, else Ethereum's.
 */
async function memberKeyOf(opts: RepairOptions, journal: string): Promise<string> {
  if (opts.memberKey !== undefined) {
    if (!/^0x[0-9a-fA-F]{1,64}$/.test(opts.memberKey))
      throw new DacdError(
        "USAGE",
        `--member-key ${JSON.stringify(opts.memberKey)} is neither an address (0x and 40 hex digits) nor a STARK key`,
      );
    return opts.memberKey;
  }
  if (opts.db !== undefined && opts.config === undefined)
    throw new DacdError(
      "USAGE",
      "--db names no member key: give --member-key ADDRESS (or --config, whose key is used) so that only this member's signatures are restored",
    );
  const config = loadConfigFor(opts.config);
  const [{ readClaimsJournalEntries }, { loadMemberKey, signerFor }] = await Promise.all([
    import("../storage/claims-journal.js"),
    import("../service/member-signer.js"),
  ]);
  const first = (await readClaimsJournalEntries(journal).catch(() => []))[0];
  const journalKind =
    first === undefined ? undefined : typeof first.signature === "string" ? "ethereum" : "starknet";
  const member = await loadMemberKey(config);
  const signer = signerFor(member, config.chain ?? journalKind ?? "ethereum");
  try {
    return signer.memberKey;
  } finally {
    await signer.close?.();
  }
}

/** Takes the store's lock while the journal is replaced; refuses while a dacd process holds it. */
async function holdStoreIfPresent(dir: string): Promise<() => Promise<void>> {
  if (!existsSync(join(dir, "LOCK"))) return async () => undefined;
  const { isLockError, LevelStore } = await import("../storage/level-store.js");
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
