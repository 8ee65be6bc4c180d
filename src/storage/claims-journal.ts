/**
 * The claims journal: an append-only file, kept outside the LevelDB directory, of every claim this
 * member has released (batch id, claim hash, signature). It is the member's memory of what it
 * promised, independent of the store: a store that lost its write-ahead log's tail, a restored old
 * backup or a store rebuilt from a dump can forget a batch, the journal cannot. A batch id is never
 * signed nor posted with a claim other than the journaled one.
 *
 * Format: one record per line, `<json>\t<crc32 of the json, 8 hex digits>\n`. The file is opened
 * with O_APPEND, so every record lands after the last one whatever a handle's position, and each is
 * fsynced before the signature it names leaves the process. A crash mid-append can therefore only
 * leave a last line without its newline: that torn line is cut off at the next open. A line that
 * ends in its newline and fails its checksum was written whole and damaged since; the batch id it
 * held is unknown, so the journal is refused until an operator repairs it (`dacd journal repair`).
 */
import { constants, existsSync } from "node:fs";
import { access, open, readFile, stat, type FileHandle } from "node:fs/promises";
import type { Stats } from "node:fs";
import { dirname, resolve } from "node:path";
import { crc32 } from "node:zlib";
import { DacdError } from "../errors.js";
import { inBatchRange } from "../model/batch-range.js";
import { memberSignatureProblem } from "../signer/member-signature.js";
import type { PostedSignature } from "../signer/signer.js";
import type { ClaimsGuard } from "../signer/claims-guard.js";
import { syncDir } from "../util/sync-dir.js";
import { ensureLocalDir } from "./local-dir.js";

export interface JournalEntry {
  readonly batch_id: number;
  readonly claim_hash: string;
  readonly signature: PostedSignature;
  readonly member_key?: string;
}

export { defaultClaimsJournalPath } from "./claims-journal-path.js";

/** What the operator should do about a conflicting claim; said in the error and in the docs. */
export const CONFLICT_ADVICE =
  "the store has lost or replaced this batch (a truncated write-ahead log, a restored old backup or a " +
  "rebuilt store) and the gateway now serves other data for it; nothing was signed. Do not delete the " +
  "claims journal: report the conflict to the operator, and restore the newest backup or wait until " +
  "the gateway serves the journaled batch again (dacd retries by itself)";

export class ClaimsJournal implements ClaimsGuard {
  private claims = new Map<number, string>();
  /**
   * Where each batch id's line is: a re-post reads its journaled signature back from the file, so
   * that signatures need not all be kept in memory and no lookup reads the whole file.
   */
  private readonly lines = new Map<number, LineSpan>();
  /** Records read at open that were cut off as a torn last append. */
  readonly tornTail: boolean;

  private constructor(
    readonly path: string,
    private readonly fh: FileHandle,
    tornTail: boolean,
    private readonly onConflict?: (batchId: number, journaled: string, offered: string) => void,
  ) {
    this.tornTail = tornTail;
  }

  /**
   * Opens (creating, with its directory, if needed) the journal at `path`: reads every record, cuts
   * a torn last line off, and fsyncs the directory when the file is new so that it cannot vanish.
   */
  static async open(
    path: string,
    opts: { onConflict?: (batchId: number, journaled: string, offered: string) => void } = {},
  ): Promise<ClaimsJournal> {
    const dir = dirname(path);
    let text: Buffer | undefined;
    try {
      text = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw journalError(path, "cannot be read", err);
    }
    if (text === undefined) {
      try {
        await ensureLocalDir(dir);
        const created = await open(path, constants.O_CREAT | constants.O_WRONLY | constants.O_EXCL, 0o600);
        await created.sync();
        await created.close();
        await syncDir(dir);
      } catch (err) {
        throw journalError(
          path,
          "cannot be created (set claims_journal_path to a writable place outside data_dir)",
          err,
        );
      }
      text = Buffer.alloc(0);
    }
    const { entries, spans, goodBytes } = parseJournal(path, text);
    let fh: FileHandle;
    try {
      if (goodBytes < text.length) await cutTornTail(path, goodBytes);
      fh = await open(path, "a");
    } catch (err) {
      throw journalError(path, "cannot be opened for appending", err);
    }
    const journal = new ClaimsJournal(path, fh, goodBytes < text.length, opts.onConflict);
    journal.bytes = goodBytes;
    try {
      journal.claims = claimsByBatch(path, entries);
    } catch (err) {
      await fh.close();
      throw err;
    }
    for (const [i, e] of entries.entries()) journal.lines.set(e.batch_id, spans[i]!);
    journal.firstSignature = entries[0]?.signature;
    return journal;
  }

  /**
   * The chain kind the journaled signatures were made for: an {r, s} object is a STARK signature,
   * a hex string a secp256k1 one; undefined while the journal is empty.
   */
  get signatureKind(): "ethereum" | "starknet" | undefined {
    return this.firstSignature === undefined
      ? undefined
      : typeof this.firstSignature === "string"
        ? "ethereum"
        : "starknet";
  }

  private firstSignature: PostedSignature | undefined;
  /** The file's length as this process last wrote it; anything else means another writer. */
  private bytes = 0;

  get size(): number {
    return this.claims.size;
  }

  get(batchId: number): string | undefined {
    return this.claims.get(batchId);
  }

  /** Journaled batch ids, ascending. */
  ids(): number[] {
    return [...this.claims.keys()].sort((a, b) => a - b);
  }

  check(batchId: number, claimHash: string): void {
    const journaled = this.claims.get(batchId);
    if (journaled === undefined || journaled === claimHash.toLowerCase()) return;
    this.onConflict?.(batchId, journaled, claimHash);
    throw new DacdError(
      "CONFLICTING_CLAIM",
      `refusing claim ${claimHash}: this member already released claim ${journaled} for this batch ` +
        `(claims journal ${this.path}); ${CONFLICT_ADVICE}`,
      { batchId },
    );
  }

  async ensure(
    batchId: number,
    claimHash: string,
    signature: PostedSignature,
    memberKey?: string,
  ): Promise<PostedSignature> {
    this.check(batchId, claimHash);
    if (this.claims.has(batchId)) {
      const journaled =
        memberKey === undefined ? undefined : await this.journaledSignature(batchId, memberKey);
      return journaled ?? signature;
    }
    await this.append([
      { batch_id: batchId, claim_hash: claimHash.toLowerCase(), signature, member_key: memberKey },
    ]);
    return signature;
  }

  async journaledSignature(batchId: number, memberKey: string): Promise<PostedSignature | undefined> {
    const span = this.lines.get(batchId);
    if (!span) return undefined;
    const entry = await this.readRecord(batchId, span);
    // A rotated key signs afresh: the journaled signature is another member's now.
    if (entry.member_key !== undefined && entry.member_key.toLowerCase() !== memberKey.toLowerCase())
      return undefined;
    // Posted as this member's, so it must be: a signature another key made (a copy merged into the
    // journal that was not this member's) would be refused by the gateway at every try.
    const problem = memberSignatureProblem(entry.claim_hash, entry.signature, memberKey);
    if (problem !== undefined)
      throw new ForeignSignatureError(
        `the claims journal ${this.path} holds a signature for this batch that is not this member's (${problem}); ` +
          `nothing was posted. Stop dacd and run \`dacd journal repair\` with this member's own backups (docs/hardening.md)`,
        batchId,
      );
    return entry.signature;
  }

  /**
   * Records the claims of the store's batch records the journal does not hold yet (a store from
   * before the journal, or a journal that was started afresh), with one fsync. Returns the batch ids
   * whose stored claim differs from the journaled one: such a store must not be signed from.
   */
  async importMissing(records: AsyncIterable<JournalEntry> | Iterable<JournalEntry>): Promise<{
    added: number;
    conflicts: number[];
  }> {
    const missing: JournalEntry[] = [];
    const conflicts: number[] = [];
    for await (const r of records) {
      const journaled = this.claims.get(r.batch_id);
      // A batch loaded from a dump or an archive carries no signature: this member released nothing for it.
      if (journaled === undefined && isUnsigned(r.signature)) continue;
      if (journaled === undefined) missing.push({ ...r, claim_hash: r.claim_hash.toLowerCase() });
      else if (journaled !== r.claim_hash.toLowerCase()) conflicts.push(r.batch_id);
    }
    if (missing.length > 0) await this.append(missing);
    return { added: missing.length, conflicts };
  }

  private async readRecord(batchId: number, [start, length]: LineSpan): Promise<JournalEntry> {
    try {
      const fh = await open(this.path, "r");
      try {
        const { buffer } = await fh.read(Buffer.alloc(length), 0, length, start);
        const entry = parseLine(buffer.toString("utf8", 0, length - 1));
        if (entry?.batch_id === batchId) return entry;
      } finally {
        await fh.close();
      }
    } catch (err) {
      throw journalError(this.path, "cannot be read back", err);
    }
    throw journalError(
      this.path,
      `was changed while dacd ran (the record at byte ${start} no longer reads); ${REPAIR_ADVICE}`,
    );
  }

  private async append(entries: readonly JournalEntry[]): Promise<void> {
    const texts = entries.map((e) => formatLine({ ...e, at: new Date().toISOString() }));
    const lines = Buffer.from(texts.join(""));
    await this.assertUnchanged();
    try {
      await this.fh.appendFile(lines);
      await this.fh.sync();
    } catch (err) {
      throw journalError(this.path, "cannot be written", err);
    }
    let at = this.bytes;
    for (const [i, e] of entries.entries()) {
      const length = Buffer.byteLength(texts[i]!);
      this.claims.set(e.batch_id, e.claim_hash);
      this.lines.set(e.batch_id, [at, length]);
      this.firstSignature ??= e.signature;
      at += length;
    }
    this.bytes += lines.length;
  }

  /**
   * Refuses to append when the file is no longer what this process read and wrote: replaced (a
   * restore while dacd ran), truncated or written by someone else. Its claims in memory would then
   * differ from those on disk, and the next start would read claims this process never checked.
   */
  private async assertUnchanged(): Promise<void> {
    let open: Stats, atPath: Stats;
    try {
      [open, atPath] = await Promise.all([this.fh.stat(), stat(this.path)]);
    } catch (err) {
      throw journalError(
        this.path,
        "cannot be checked before an append (moved or removed while dacd ran?)",
        err,
      );
    }
    if (open.ino !== atPath.ino || open.dev !== atPath.dev)
      throw journalError(this.path, `was replaced while dacd ran; nothing was signed. ${REPAIR_ADVICE}`);
    if (open.size !== this.bytes)
      throw journalError(
        this.path,
        `was changed while dacd ran (${open.size} bytes, this process wrote ${this.bytes}); nothing was signed. ${REPAIR_ADVICE}`,
      );
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}

/**
 * What opening the journal at `path` would refuse, found without creating or changing anything
 * (`dacd config check`): a damaged line, two claims for one batch, a file that cannot be read, or
 * no place to create it.
 */
export async function checkClaimsJournal(path: string): Promise<void> {
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw journalError(path, "cannot be read", err);
    const dir = await nearestExisting(dirname(path));
    try {
      await access(dir, constants.W_OK);
    } catch (err) {
      throw journalError(
        path,
        "cannot be created (set claims_journal_path to a writable place outside data_dir)",
        err,
      );
    }
    return;
  }
  claimsByBatch(path, parseJournal(path, text).entries);
}

/** The journal's claims by batch id; a batch id with two different claims means an edited file. */
function claimsByBatch(path: string, entries: readonly JournalEntry[]): Map<number, string> {
  const claims = new Map<number, string>();
  for (const e of entries) {
    const had = claims.get(e.batch_id);
    if (had !== undefined && had !== e.claim_hash)
      throw journalError(
        path,
        `holds two claims for batch ${e.batch_id} (${had} and ${e.claim_hash}); it has been edited`,
      );
    claims.set(e.batch_id, e.claim_hash);
  }
  return claims;
}

/** `dir`, or its nearest ancestor that exists (where creating it would start). */
async function nearestExisting(dir: string): Promise<string> {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (existsSync(d) || dirname(d) === d) return d;
  }
}

/** Reads a journal without opening it for writing (check, backup): its records by batch id. */
export async function readClaimsJournal(path: string): Promise<Map<number, string> | undefined> {
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw journalError(path, "cannot be read", err);
  }
  const out = new Map<number, string>();
  for (const e of parseJournal(path, text).entries) out.set(e.batch_id, e.claim_hash);
  return out;
}

/** The records of a journal file (none when it does not exist), without opening it for writing. */
export async function readClaimsJournalEntries(path: string): Promise<JournalEntry[]> {
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw journalError(path, "cannot be read", err);
  }
  return parseJournal(path, text).entries;
}

export function formatLine(record: JournalEntry & { at: string }): string {
  const body = JSON.stringify(record);
  return `${body}\t${crc32(body).toString(16).padStart(8, "0")}\n`;
}

/** One line of a journal file, as read back. */
export type JournalLine =
  | {
      readonly kind: "record";
      readonly line: number;
      readonly entry: JournalEntry;
      readonly text: string;
      /** The offset just after its newline. */
      readonly end: number;
    }
  /** Ends in its newline but fails its checksum or does not parse: written whole, damaged since. */
  | { readonly kind: "damaged"; readonly line: number; readonly text: string }
  /** The last line, without its newline: an append cut short by a crash, never acknowledged. */
  | { readonly kind: "torn"; readonly line: number; readonly text: string };

/** Splits a journal file into its lines, classified; lines are numbered from 1. */
export function journalLines(text: Buffer): JournalLine[] {
  const out: JournalLine[] = [];
  let at = 0;
  while (at < text.length) {
    const line = out.length + 1;
    const nl = text.indexOf(0x0a, at);
    if (nl === -1) {
      out.push({ kind: "torn", line, text: text.subarray(at).toString("utf8") });
      break;
    }
    const body = text.subarray(at, nl).toString("utf8");
    const entry = parseLine(body);
    out.push(
      entry
        ? { kind: "record", line, entry, text: body, end: nl + 1 }
        : { kind: "damaged", line, text: body },
    );
    at = nl + 1;
  }
  return out;
}

/** What an operator does about a damaged or replaced journal; said in the error and in docs/hardening.md. */
export const REPAIR_ADVICE =
  "dacd signs nothing until it is repaired: stop dacd, keep this file, and run `dacd journal repair " +
  '--from <newest backup>/claims.journal` (it merges, never replaces; docs/hardening.md, "A damaged or lost claims journal")';

/** Where a record's line lies in the file: offset and length, its newline included. */
type LineSpan = [start: number, length: number];

/** The records of a journal, and where its torn last line (if any) starts; a damaged line is an error. */
function parseJournal(
  path: string,
  text: Buffer,
): { entries: JournalEntry[]; spans: LineSpan[]; goodBytes: number } {
  const entries: JournalEntry[] = [];
  const spans: LineSpan[] = [];
  let goodBytes = 0;
  for (const l of journalLines(text)) {
    if (l.kind === "damaged")
      throw journalError(
        path,
        `line ${l.line} is damaged (it ends in a newline but fails its checksum: not a crash mid-append, so the claim it held is unknown); ${REPAIR_ADVICE}`,
      );
    if (l.kind === "torn") break;
    entries.push(l.entry);
    spans.push([goodBytes, l.end - goodBytes]);
    goodBytes = l.end;
  }
  return { entries, spans, goodBytes };
}

const CLAIM_HASH = /^0x[0-9a-fA-F]{64}$/;

/**
 * A line's record, or undefined when it is not one: a bad checksum, a batch id outside the range
 * dacd takes, a claim that is not a 32-byte hash, a signature of neither form. The claim hash is
 * read in lower case, the form every comparison uses.
 */
function parseLine(line: string): JournalEntry | undefined {
  const tab = line.lastIndexOf("\t");
  if (tab === -1) return undefined;
  const body = line.slice(0, tab);
  if (line.slice(tab + 1) !== crc32(body).toString(16).padStart(8, "0")) return undefined;
  try {
    const v = JSON.parse(body) as Partial<JournalEntry>;
    if (!inBatchRange(v.batch_id) || typeof v.claim_hash !== "string" || !CLAIM_HASH.test(v.claim_hash))
      return undefined;
    if (!isSignatureForm(v.signature)) return undefined;
    return { ...v, claim_hash: v.claim_hash.toLowerCase() } as JournalEntry;
  } catch {
    return undefined;
  }
}

function isSignatureForm(v: unknown): v is PostedSignature {
  if (typeof v === "string") return true;
  const o = v as { r?: unknown; s?: unknown } | null;
  return typeof o === "object" && o !== null && typeof o.r === "string" && typeof o.s === "string";
}

/** An empty signature: a batch record loaded from a dump or an archive, never signed by this member. */
export function isUnsigned(signature: PostedSignature | undefined): boolean {
  return signature === undefined || signature === "";
}

/**
 * The line of a record with its claim hash in lower case (a copy may hold it in another case; the
 * member compares claims in lower case), its other fields and their order as they were.
 */
export function canonicalText(text: string): string {
  const body = text.slice(0, text.lastIndexOf("\t"));
  const v = JSON.parse(body) as { claim_hash: string };
  if (v.claim_hash === v.claim_hash.toLowerCase()) return text;
  const fixed = JSON.stringify({ ...v, claim_hash: v.claim_hash.toLowerCase() });
  return `${fixed}\t${crc32(fixed).toString(16).padStart(8, "0")}`;
}

/**
 * A journaled signature that is not the member's: the member stops (it would be refused at every
 * post) until the journal is repaired from the member's own copies.
 */
export class ForeignSignatureError extends DacdError {
  constructor(message: string, batchId: number) {
    super("STORE", message, { batchId });
    this.name = "ForeignSignatureError";
  }
}

/** Cuts a torn last line off, durably, before anything is appended after it. */
async function cutTornTail(path: string, goodBytes: number): Promise<void> {
  const fh = await open(path, "r+");
  try {
    await fh.truncate(goodBytes);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export function journalError(path: string, what: string, cause?: unknown): DacdError {
  const detail = cause instanceof Error ? `: ${cause.message}` : "";
  return new DacdError("STORE", `the claims journal ${path} ${what}${detail}`, { cause });
}
