import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { concatBytes, writeBigint32 } from "../../../util/bytes.js";
import { INDEX_FILE_ENTRIES, INDEX_MAX_DIGITS, indexPath } from "./format.js";
import { encodeIndex, INDEX_ENTRY_BYTES } from "./key-index.js";

/** Spill files: by the key's last two hex digits (its byte 31). */
const SPILL_FILES = 256;
/** Pairs a spill file's buffer holds before they are appended to it (16 KiB). */
const SPILL_BUFFER_PAIRS = Math.floor(16384 / INDEX_ENTRY_BYTES);

/**
 * The key index of a kit (key-index.ts): (stark key, leaf id) pairs added as the walk finds them,
 * then written as index files split by the keys' last hex digits. Ten million leaves make 400 MB
 * of pairs, so they are not held: each is appended to one of 256 spill files by its key's last two
 * digits (through a small buffer each), and each index file is made from the one spill file, or
 * the few, that hold its keys.
 */
export class KeyIndexWriter {
  private readonly buffers = Array.from(
    { length: SPILL_FILES },
    () => new Uint8Array(SPILL_BUFFER_PAIRS * INDEX_ENTRY_BYTES),
  );
  private readonly fill = new Uint32Array(SPILL_FILES);
  private readonly fds: (number | undefined)[] = new Array<number | undefined>(SPILL_FILES);
  private readonly pair = new Uint8Array(INDEX_ENTRY_BYTES);
  private readonly pairView = new DataView(this.pair.buffer);
  count = 0;

  /** `spillDir`: a directory of its own (created by `open`), removed by `write` or `discard`. */
  private constructor(
    private readonly spillDir: string,
    private readonly fileEntries: number,
  ) {}

  /** `fileEntries`: about the most pairs an index file holds (tests: small files). */
  static async open(spillDir: string, fileEntries = INDEX_FILE_ENTRIES): Promise<KeyIndexWriter> {
    await mkdir(spillDir);
    return new KeyIndexWriter(spillDir, fileEntries);
  }

  add(key: bigint, id: bigint): void {
    writeBigint32(key, this.pair, 0);
    this.pairView.setBigUint64(32, id);
    const b = this.pair[31]!;
    this.buffers[b]!.set(this.pair, this.fill[b]! * INDEX_ENTRY_BYTES);
    if (++this.fill[b]! === SPILL_BUFFER_PAIRS) this.spill(b);
    this.count++;
  }

  /** Appends spill file `b`'s buffered pairs to it. */
  private spill(b: number): void {
    const n = this.fill[b]!;
    if (n === 0) return;
    this.fds[b] ??= openSync(join(this.spillDir, String(b)), "a");
    writeSync(this.fds[b], this.buffers[b]!, 0, n * INDEX_ENTRY_BYTES);
    this.fill[b] = 0;
  }

  private closeSpills(): void {
    for (let b = 0; b < SPILL_FILES; b++) {
      const fd = this.fds[b];
      if (fd !== undefined) closeSync(fd);
      this.fds[b] = undefined;
    }
  }

  /**
   * Writes the index files under `dir` (as keys/SUFFIX.bin), under as many of the keys' last hex
   * digits (up to INDEX_MAX_DIGITS) as keep a file near `fileEntries`, each file's pairs sorted by
   * key then id; then removes the spill files. Returns the manifest's `suffix_digits` and each
   * file's SHA-256.
   */
  async write(dir: string): Promise<{ suffix_digits: number; files: Record<string, string> }> {
    let digits = 0;
    while (digits < INDEX_MAX_DIGITS && this.count / 16 ** digits > this.fileEntries) digits++;
    for (let b = 0; b < SPILL_FILES; b++) this.spill(b);
    const spilled = this.fds.map((fd) => fd !== undefined);
    this.closeSpills();
    const read = (b: number): Uint8Array =>
      spilled[b] ? new Uint8Array(readFileSync(join(this.spillDir, String(b)))) : new Uint8Array(0);
    const hashes = new Map<number, string>();
    const emit = async (f: number, pairs: Uint8Array): Promise<void> => {
      const body = sortedPairs(pairs);
      if (body.length === 0) return;
      const file = encodeIndex(body);
      await writeFile(join(dir, indexPath(suffixOf(f, digits))), file);
      hashes.set(f, createHash("sha256").update(file).digest("hex"));
    };
    if (digits <= 2) {
      // File f holds the spill files whose last `digits` digits are f's.
      const files = 16 ** digits;
      for (let f = 0; f < files; f++) {
        const parts: Uint8Array[] = [];
        for (let b = f; b < SPILL_FILES; b += files) parts.push(read(b));
        await emit(f, concatBytes(...parts));
      }
    } else {
      // Spill file b holds the files whose last two digits are b's, told apart by the third.
      for (let b = 0; b < SPILL_FILES; b++) {
        const pairs = read(b);
        const thirdOf = (at: number): number => pairs[at + 30]! & 0x0f;
        const counts = new Uint32Array(16);
        for (let at = 0; at < pairs.length; at += INDEX_ENTRY_BYTES) counts[thirdOf(at)]!++;
        const byThird = Array.from(counts, (c) => new Uint8Array(c * INDEX_ENTRY_BYTES));
        const fill = new Uint32Array(16);
        for (let at = 0; at < pairs.length; at += INDEX_ENTRY_BYTES) {
          const t = thirdOf(at);
          byThird[t]!.set(pairs.subarray(at, at + INDEX_ENTRY_BYTES), fill[t]!);
          fill[t]! += INDEX_ENTRY_BYTES;
        }
        for (let third = 0; third < 16; third++) await emit((third << 8) | b, byThird[third]!);
      }
    }
    await rm(this.spillDir, { recursive: true, force: true });
    const files: Record<string, string> = {};
    for (const f of [...hashes.keys()].sort((x, y) => x - y)) files[suffixOf(f, digits)] = hashes.get(f)!;
    return { suffix_digits: digits, files };
  }

  /** Closes and removes the spill files (a kit that failed). */
  async discard(): Promise<void> {
    this.closeSpills();
    await rm(this.spillDir, { recursive: true, force: true });
  }
}

function suffixOf(f: number, digits: number): string {
  return digits === 0 ? "" : f.toString(16).padStart(digits, "0");
}

/** `pairs` sorted by key then id (their bytes), into a new buffer. */
function sortedPairs(pairs: Uint8Array): Uint8Array {
  const order = Array.from({ length: pairs.length / INDEX_ENTRY_BYTES }, (_, i) => i * INDEX_ENTRY_BYTES);
  order.sort((a, b) => {
    for (let i = a, j = b, end = a + INDEX_ENTRY_BYTES; i < end; i++, j++) {
      const d = pairs[i]! - pairs[j]!;
      if (d !== 0) return d;
    }
    return 0;
  });
  const sorted = new Uint8Array(pairs.length);
  order.forEach((at, k) => sorted.set(pairs.subarray(at, at + INDEX_ENTRY_BYTES), k * INDEX_ENTRY_BYTES));
  return sorted;
}
