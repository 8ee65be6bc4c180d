import { describe, expect, it } from "vitest";
import { openFileLimit, tableFilesWithinLimit } from "../../src/storage/open-files.js";
import { walkOpenFiles } from "../../src/storage/walk-opening.js";

// The layout of /proc/self/limits (Linux), trimmed.
const limits = (soft: string, hard: string): string =>
  [
    "Limit                     Soft Limit           Hard Limit           Units     ",
    "Max processes             95461                95461                processes ",
    `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
    "Max locked memory         8388608              8388608              bytes     ",
  ].join("\n");

describe("open-file limit", () => {
  it("reads the soft limit from /proc/self/limits' text", () => {
    expect(openFileLimit(limits("20000", "524288"))).toBe(20000);
    expect(openFileLimit(limits("unlimited", "unlimited"))).toBe(Infinity);
    expect(openFileLimit("Limit  Soft Limit  Hard Limit  Units\n")).toBeUndefined();
    expect(openFileLimit(limits("-1", "1"))).toBeUndefined();
  });

  it("reads this process's limit on Linux", () => {
    if (process.platform !== "linux") return;
    const limit = openFileLimit();
    expect(limit).toBeGreaterThan(0);
  });

  it("keeps LevelDB's open tables within the limit, leaving descriptors for the rest", () => {
    // Room enough: the configured count.
    expect(tableFilesWithinLimit(16000, 524288)).toBe(16000);
    expect(tableFilesWithinLimit(16000, Infinity)).toBe(16000);
    expect(tableFilesWithinLimit(16000, undefined)).toBe(16000);
    // A limit of 20,000 leaves 1,024 for sockets, logs and workers.
    expect(tableFilesWithinLimit(20000, 20000)).toBe(18976);
    // A small limit keeps half of it; never below LevelDB's own floor of 74.
    expect(tableFilesWithinLimit(5000, 1024)).toBe(512);
    expect(tableFilesWithinLimit(5000, 100)).toBe(74);
  });
});

describe("a whole-store walk's open files", () => {
  it("keeps a file for every table of 2 MiB, and others, up to 8,192", () => {
    expect(walkOpenFiles(0)).toBe(100);
    // A store of 10M vaults spread over the tree: 3.7 GiB, 1,895 tables' worth.
    expect(walkOpenFiles(3.7 * 2 ** 30)).toBe(1895 + 100);
    expect(walkOpenFiles(2 * 2 ** 20 + 1)).toBe(102);
    expect(walkOpenFiles(100 * 2 ** 30)).toBe(8192);
  });
});
