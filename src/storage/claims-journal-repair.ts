/**
 * Repairs a claims journal from copies of it (backups, a dump's `claims.journal`) by merging, never
 * by replacing: a backup is older than the journal, so putting it in the journal's place forgets
 * every claim released since, and the member could then sign those batch ids again with other
 * claims. The journal only ever grows by appends, so a backup is a copy of its first lines: a damaged
 * line N is recovered from a copy whose first N lines agree with the journal's readable ones and
 * whose line N is whole. The copies' other claims are added; a claim that contradicts one already
 * held stops the repair. The result replaces the journal atomically, and the damaged file stays
 * beside it.
 *
 * Only what the member signed is restored: every record taken from a copy must carry a signature
 * the member key made over its claim (a copy with another key's signature is not this member's,
 * and the member would post that signature at every try); records without a signature (batches
 * loaded from a dump, never signed) are left out. Claim hashes are written in lower case. A
 * journal reached through a symbolic link is repaired in its target's place: the link stays.
 */
import { link, lstat, readFile, realpath, rename, writeFile, open } from "node:fs/promises";
import { dirname } from "node:path";
import { DacdError } from "../errors.js";
import { memberSignatureProblem } from "../signer/member-signature.js";
import {
  canonicalText,
  isUnsigned,
  journalError,
  journalLines,
  type JournalEntry,
  type JournalLine,
} from "./claims-journal.js";
import { syncDir } from "../util/sync-dir.js";
import { ensureLocalDir } from "./local-dir.js";

export interface RepairReport {
  readonly path: string;
  /** Line numbers of damaged lines, each taken from a copy. */
  readonly recovered: number[];
  /** Whether a torn last line (a crash mid-append) was dropped. */
  readonly dropped_torn_tail: boolean;
  /** Batch ids added from the copies that the journal did not hold. */
  readonly added: number[];
  /** Batch ids of the copies' records without a signature (loaded, never signed): not restored. */
  readonly unsigned: number[];
  /**
   * The copies' lines that are not records (a bad checksum, a batch id out of range, a claim that is
   * not a hash): not restored.
   */
  readonly unreadable: { from: string; line: number }[];
  /** Where the journal as it was before the repair was kept (absent when there was none or nothing changed). */
  readonly kept_as?: string;
  readonly records: number;
}

/**
 * Merges the journals at `sources` into the one at `path` (created if missing), taking from them only
 * records signed by `memberKey` (the member's address, or its STARK key); see the module's comment.
 */
export async function repairClaimsJournal(
  path: string,
  sources: readonly string[],
  opts: { memberKey: string },
): Promise<RepairReport> {
  const file = await journalFile(path);
  const target = await readLines(file, true);
  const copies = await Promise.all(sources.map(async (s) => ({ path: s, lines: await readLines(s, false) })));
  const unsigned: number[] = [];
  /** Whether a copy's record is to be restored: signed by the member (else the repair stops), not unsigned. */
  const restorable = (entry: JournalEntry, from: string, line: number): boolean => {
    if (isUnsigned(entry.signature)) {
      unsigned.push(entry.batch_id);
      return false;
    }
    const problem = memberSignatureProblem(entry.claim_hash, entry.signature, opts.memberKey);
    if (problem !== undefined)
      throw new DacdError(
        "CONFLICTING_CLAIM",
        `${from} line ${line}, batch ${entry.batch_id}: ${problem}; this copy is not this member's ` +
          "(or holds what another key signed): nothing was changed",
      );
    return true;
  };

  const kept: string[] = [];
  const recovered: number[] = [];
  const claims = new Map<number, { claim: string; from: string }>();
  const hold = (entry: JournalEntry, from: string): boolean => {
    const had = claims.get(entry.batch_id);
    if (had === undefined) {
      claims.set(entry.batch_id, { claim: entry.claim_hash.toLowerCase(), from });
      return true;
    }
    if (had.claim !== entry.claim_hash.toLowerCase())
      throw new DacdError(
        "CONFLICTING_CLAIM",
        `batch ${entry.batch_id} has claim ${had.claim} in ${had.from} and ${entry.claim_hash} in ${from}: ` +
          "these journals are not all this member's; nothing was changed",
      );
    return false;
  };

  let normalised = false;
  const keep = (text: string): void => {
    const canonical = canonicalText(text);
    if (canonical !== text) normalised = true;
    kept.push(canonical);
  };
  for (const l of target) {
    if (l.kind === "torn") break;
    if (l.kind === "damaged") {
      recovered.push(l.line);
      const record = recoverLine(path, target, l.line, copies);
      // An unsigned record recovered is left out: the line held no claim this member released.
      if (!restorable(record.entry, record.from, l.line)) continue;
      if (hold(record.entry, record.from)) keep(record.text);
    } else if (hold(l.entry, path)) keep(l.text);
  }
  const added: number[] = [];
  const unreadable: { from: string; line: number }[] = [];
  for (const copy of copies) {
    for (const l of copy.lines) {
      if (l.kind === "damaged") unreadable.push({ from: copy.path, line: l.line });
      if (l.kind !== "record" || claims.has(l.entry.batch_id)) {
        if (l.kind === "record") hold(l.entry, copy.path);
        continue;
      }
      if (!restorable(l.entry, copy.path, l.line)) continue;
      hold(l.entry, copy.path);
      keep(l.text);
      added.push(l.entry.batch_id);
    }
  }

  const torn = target.at(-1)?.kind === "torn";
  const changed = recovered.length > 0 || added.length > 0 || torn || normalised;
  const report = {
    path,
    recovered,
    dropped_torn_tail: torn,
    added: added.sort((a, b) => a - b),
    unsigned: [...new Set(unsigned)].sort((a, b) => a - b),
    unreadable,
    records: kept.length,
  };
  if (!changed) return report;
  const keptAs =
    target.length > 0 ? `${file}.before-repair-${new Date().toISOString().replace(/[:.]/g, "-")}` : undefined;
  await replaceJournal(file, kept, keptAs);
  return keptAs ? { ...report, kept_as: keptAs } : report;
}

/**
 * The file to repair: `path`, or the file a symbolic link at `path` points to, so that the repaired
 * journal takes the target's place and the link stays (renaming onto the link would replace it by
 * a file, and whatever else reads the target would keep the damaged one). A link to nothing is refused.
 */
async function journalFile(path: string): Promise<string> {
  let isLink: boolean;
  try {
    isLink = (await lstat(path)).isSymbolicLink();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return path;
    throw journalError(path, "cannot be read", err);
  }
  if (!isLink) return path;
  try {
    return await realpath(path);
  } catch (err) {
    throw journalError(
      path,
      "is a symbolic link to a file that cannot be reached; nothing was changed: point it at the journal, or name the journal itself with --journal",
      err,
    );
  }
}

type Copy = { path: string; lines: JournalLine[] };

/** Line `line` of the journal from the first copy that holds it whole and agrees with the journal before it. */
function recoverLine(
  path: string,
  target: JournalLine[],
  line: number,
  copies: readonly Copy[],
): { entry: JournalEntry; text: string; from: string } {
  for (const copy of copies) {
    const candidate = copy.lines[line - 1];
    if (candidate?.kind !== "record") continue;
    // Every earlier line of the copy must be whole and, where the journal's is readable, the same:
    // a copy whose earlier lines cannot be read says nothing of whether it is this journal's copy.
    const agrees = target.slice(0, line - 1).every((t, i) => {
      const c = copy.lines[i];
      return c?.kind === "record" && (t.kind !== "record" || c.text === t.text);
    });
    if (agrees) return { entry: candidate.entry, text: candidate.text, from: copy.path };
  }
  throw new DacdError(
    "STORE",
    `the claims journal ${path} line ${line} is damaged and none of the given copies holds it (a copy must be ` +
      `a backup of this journal taken after that line was written, with its first ${line} lines readable); ` +
      "nothing was changed: give a newer backup or the journal of a dump taken since",
  );
}

async function readLines(path: string, mayBeMissing: boolean): Promise<JournalLine[]> {
  try {
    return journalLines(await readFile(path));
  } catch (err) {
    if (mayBeMissing && (err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw journalError(path, "cannot be read", err);
  }
}

/**
 * Writes the merged journal beside the old one, fsyncs it, keeps the old file under `keptAs` (a
 * hard link: its bytes stay as they were) and renames the new one into place, so that `path` holds
 * one whole journal or the other at every moment.
 */
async function replaceJournal(
  path: string,
  texts: readonly string[],
  keptAs: string | undefined,
): Promise<void> {
  const tmp = `${path}.repair-${process.pid}`;
  try {
    await ensureLocalDir(dirname(path));
    await writeFile(tmp, texts.map((t) => `${t}\n`).join(""), { mode: 0o600, flag: "wx" });
    const fh = await open(tmp, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (keptAs) await link(path, keptAs);
    await rename(tmp, path);
    await syncDir(dirname(path));
  } catch (err) {
    throw journalError(path, "cannot be replaced by its repaired copy", err);
  }
}
