/**
 * Repairs a claims journal from copies of it (backups, a dump's `claims.journal`) by merging, never
 * by replacing: a backup is older than the journal, so putting it in the journal's place forgets
 * every claim released since, and the member could then sign those batch ids again with other
 * claims. The journal only ever grows by appends, so a backup is a copy of its first lines: a damaged
 * line N is recovered from a copy whose first N lines agree with the journal's readable ones and
 * whose line N is whole. The copies' other claims are added; a claim that contradicts one already
 * held stops the repair. The result replaces the journal atomically, and the damaged file stays
 * beside it.
 */
import { link, readFile, rename, writeFile, open } from "node:fs/promises";
import { dirname } from "node:path";
import { DacdError } from "../errors.js";
import { journalError, journalLines, type JournalEntry, type JournalLine } from "./claims-journal.js";
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
  /** Where the journal as it was before the repair was kept (absent when there was none or nothing changed). */
  readonly kept_as?: string;
  readonly records: number;
}

/** Merges the journals at `sources` into the one at `path` (created if missing); see the module's comment. */
export async function repairClaimsJournal(path: string, sources: readonly string[]): Promise<RepairReport> {
  const target = await readLines(path, true);
  const copies = await Promise.all(sources.map(async (s) => ({ path: s, lines: await readLines(s, false) })));

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

  for (const l of target) {
    if (l.kind === "torn") break;
    const record = l.kind === "record" ? { ...l, from: path } : recoverLine(path, target, l.line, copies);
    if (l.kind === "damaged") recovered.push(l.line);
    if (hold(record.entry, record.from)) kept.push(record.text);
  }
  const added: number[] = [];
  for (const copy of copies) {
    for (const l of copy.lines) {
      if (l.kind !== "record") continue;
      if (hold(l.entry, copy.path)) {
        kept.push(l.text);
        added.push(l.entry.batch_id);
      }
    }
  }

  const torn = target.at(-1)?.kind === "torn";
  const changed = recovered.length > 0 || added.length > 0 || torn;
  const report = {
    path,
    recovered,
    dropped_torn_tail: torn,
    added: added.sort((a, b) => a - b),
    records: kept.length,
  };
  if (!changed) return report;
  const keptAs =
    target.length > 0 ? `${path}.before-repair-${new Date().toISOString().replace(/[:.]/g, "-")}` : undefined;
  await replaceJournal(path, kept, keptAs);
  return keptAs ? { ...report, kept_as: keptAs } : report;
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
    const agrees = target
      .slice(0, line - 1)
      .every(
        (t, i) => t.kind !== "record" || copy.lines[i]?.kind !== "record" || copy.lines[i]!.text === t.text,
      );
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
