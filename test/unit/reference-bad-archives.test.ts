import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeArchive, type ArchiveEntry } from "../../src/escape/reference-archive.js";
import { importReference } from "../../src/escape/reference-load.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { readArchiveFiles } from "../helpers/reference-archive.js";
import { FIXTURES } from "../helpers/vectors.js";
import { engine } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * Damaged archives, made from the spot vector's own files with the same tar and bzip2 code the
 * export uses: each is refused with one line naming the file, the line and the field, and leaves
 * nothing on disk.
 */

const ARCHIVE = join(FIXTURES, "reference-state-spot", "state.bz2");
let original: Map<string, string>;

beforeAll(async () => {
  original = await readArchiveFiles(ARCHIVE);
});
afterAll(removeTempDirs);

type Files = Map<string, string>;
const rows = (text: string): string[] => text.split("\r\n").slice(0, -1);
const csv = (r: string[]): string => r.map((x) => x + "\r\n").join("");
/** Replaces field `f` of row `i` (0-based) of a file. */
function setField(files: Files, name: string, i: number, f: number, value: string): void {
  const r = rows(files.get(name)!);
  const fields = r[i]!.split(",");
  fields[f] = value;
  r[i] = fields.join(",");
  files.set(name, csv(r));
}
const P = 2n ** 251n + 17n * 2n ** 192n + 1n;

const cases: [string, (files: Files) => ArchiveEntry[] | void, RegExp][] = [
  ["a missing vaults.csv", (f) => void f.delete("vaults.csv"), /state\.bz2: the archive has no vaults\.csv$/],
  [
    "a missing info.json (and no batch named)",
    (f) => void f.delete("info.json"),
    /state\.bz2 has no info\.json \(the reference member's dump_state writes none\): name its batch with --batch N/,
  ],
  ["a missing order subtree", (f) => void f.delete("orders_6.csv"), /the archive has no orders_6\.csv$/],
  ["an extra file", (f) => void f.set("notes.txt", "hello"), /extra file "notes\.txt"/],
  [
    "an order subtree beyond n",
    (f) => void f.set("orders_8.csv", ""),
    /extra file orders_8\.csv \(info\.json has 4 order subtrees/,
  ],
  [
    "a duplicated file",
    (f) => [
      ...[...f].map(([name, data]) => ({ name, data })),
      { name: "vaults.csv", data: f.get("vaults.csv")! },
    ],
    /vaults\.csv appears twice in the archive/,
  ],
  [
    "a row with 3 fields",
    (f) => {
      const r = rows(f.get("vaults.csv")!);
      r[2] = r[2]!.split(",").slice(0, 3).join(",");
      f.set("vaults.csv", csv(r));
    },
    /^vaults\.csv line 3: 3 fields, expected 4 \(vault_id,stark_key,token,balance\)$/,
  ],
  [
    "an empty row",
    (f) => {
      const r = rows(f.get("orders_5.csv")!);
      r.splice(4, 0, "");
      f.set("orders_5.csv", csv(r));
    },
    /^orders_5\.csv line 5: 1 fields, expected 2/,
  ],
  [
    "a row longer than the row cap (many short fields)",
    (f) => {
      const r = rows(f.get("vaults.csv")!);
      r[3] = r[3] + ",1".repeat(600);
      f.set("vaults.csv", csv(r));
    },
    /^vaults\.csv line 4: longer than 1024 bytes, the most a row may hold$/,
  ],
  [
    "a field longer than the field cap",
    (f) => setField(f, "vaults.csv", 1, 1, "7".repeat(300)),
    /^vaults\.csv line 2, field stark_key: longer than 128 bytes$/,
  ],
  [
    "a last row without a line end longer than the field cap",
    (f) => void f.set("orders_5.csv", f.get("orders_5.csv")! + "12," + "3".repeat(200)),
    /^orders_5\.csv line \d+, field fulfilled_amount: longer than 128 bytes$/,
  ],
  [
    "a non-decimal balance",
    (f) => setField(f, "vaults.csv", 1, 3, "12a"),
    /^vaults\.csv line 2, field balance: "12a" is not a decimal number$/,
  ],
  [
    "a hex token",
    (f) => setField(f, "vaults.csv", 6, 2, "0x1f"),
    /^vaults\.csv line 7, field token: "0x1f" is not a decimal/,
  ],
  [
    "a stark key of 81 digits (leading zeros), as the wire and dump parsers refuse it",
    (f) => setField(f, "vaults.csv", 1, 1, "0".repeat(80) + "7"),
    /^vaults\.csv line 2, field stark_key: "0{80}7" is not a decimal number$/,
  ],
  [
    "a vault with a balance and stark key 0, as the wire and dump parsers refuse it",
    (f) => {
      setField(f, "vaults.csv", 2, 1, "0");
      setField(f, "vaults.csv", 2, 3, "5");
    },
    /^vaults\.csv line 3, field stark_key: is 0 in a vault with a balance$/,
  ],
  [
    "a vault with a balance and token 0",
    (f) => {
      setField(f, "vaults.csv", 3, 2, "0");
      setField(f, "vaults.csv", 3, 3, "5");
    },
    /^vaults\.csv line 4, field token: is 0 in a vault with a balance$/,
  ],
  [
    "a vault id ≥ 2^31",
    (f) => setField(f, "vaults.csv", 3, 0, String(2n ** 31n)),
    /^vaults\.csv line 4, field vault_id: 2147483648 is out of range \(must be below 2\^height/,
  ],
  [
    "a stark key ≥ p",
    (f) => setField(f, "vaults.csv", 4, 1, String(P)),
    /^vaults\.csv line 5, field stark_key: \d+ is out of range \(must be below the field prime p\)$/,
  ],
  [
    "a balance ≥ 2^63",
    (f) => setField(f, "vaults.csv", 5, 3, String(2n ** 63n)),
    /^vaults\.csv line 6, field balance: 9223372036854775808 is out of range \(must be below 2\^63\)$/,
  ],
  [
    "a fulfilled amount ≥ 2^63",
    (f) => setField(f, "orders_7.csv", 0, 1, String(2n ** 63n)),
    /^orders_7\.csv line 1, field fulfilled_amount: .* out of range/,
  ],
  [
    "an order id ≥ 2^251",
    (f) => setField(f, "orders_7.csv", 2, 0, String(2n ** 251n)),
    /^orders_7\.csv line 3, field order_id: .* out of range/,
  ],
  [
    "an order under another subtree",
    (f) => {
      const id = rows(f.get("orders_4.csv")!)[0]!.split(",")[0]!;
      setField(f, "orders_6.csv", 3, 0, id);
    },
    /^orders_6\.csv line 4, field order_id: order \d+ is not under the order tree's node 6/,
  ],
  [
    "a repeated vault id (next row)",
    (f) => {
      const r = rows(f.get("vaults.csv")!);
      r[8] = r[7]!.split(",")[0] + "," + r[8]!.split(",").slice(1).join(",");
      f.set("vaults.csv", csv(r));
    },
    /^vaults\.csv line 9, field vault_id: id \d+ is repeated \(line 8\)$/,
  ],
  [
    "a repeated order id (rows out of order)",
    (f) => {
      const r = rows(f.get("orders_5.csv")!);
      r.push(r[2]!.split(",")[0] + ",77");
      f.set("orders_5.csv", csv(r));
    },
    /^orders_5\.csv line \d+, field order_id: id \d+ is repeated \(line 3\)$/,
  ],
  [
    "a changed balance (vault root differs)",
    (f) => setField(f, "vaults.csv", 10, 3, "12345"),
    /^info\.json, field batch_info\.merkle_roots\.vault: the vault tree root built from the archive is [0-9a-f]{64}, info\.json states 01f6c289495e21cc4d74bd487ca73a9159b4df5c21566ed532ae1ce0218cdbb6$/,
  ],
  [
    "a changed order (order root differs)",
    (f) => setField(f, "orders_4.csv", 1, 1, "1"),
    /^info\.json, field batch_info\.merkle_roots\.order: the order tree root built from the archive is [0-9a-f]{64}, info\.json states 015dd282/,
  ],
  [
    "a wrong subtree root",
    (f) => {
      const info = JSON.parse(f.get("info.json")!) as { order_subtree_roots: string[] };
      info.order_subtree_roots[2] = "0".repeat(63) + "1";
      f.set("info.json", JSON.stringify(info));
    },
    /^info\.json, field order_subtree_roots\[2\]: the root of order subtree 6 built from orders_6\.csv is [0-9a-f]{64}, info\.json states 0{63}1$/,
  ],
  [
    "a malformed root",
    (f) => {
      const info = JSON.parse(f.get("info.json")!) as { batch_info: { merkle_roots: { vault: string } } };
      info.batch_info.merkle_roots.vault = "0x1234";
      f.set("info.json", JSON.stringify(info));
    },
    /^info\.json, field batch_info\.merkle_roots\.vault: "0x1234" is not 64 hex digits$/,
  ],
  [
    "3 subtree roots",
    (f) => {
      const info = JSON.parse(f.get("info.json")!) as { order_subtree_roots: string[] };
      info.order_subtree_roots.pop();
      f.set("info.json", JSON.stringify(info));
    },
    /^info\.json, field order_subtree_roots: 3 entries/,
  ],
];

async function refusedLeavesNothing(archive: string, want: RegExp): Promise<void> {
  const parent = await tempDir();
  const err = (await importReference(engine, {
    archive,
    dataDir: join(parent, "data"),
    profile: "spot",
  }).then(
    () => undefined,
    (e: unknown) => e,
  )) as Error | undefined;
  expect(err, "refused").toBeInstanceOf(Error);
  expect(err!.message).not.toContain("\n");
  expect(err!.message).toMatch(want);
  expect(await readdir(parent)).toEqual([]);
}

describe("a damaged reference state archive", () => {
  it.each(cases)("is refused: %s", async (_name, mutate, want) => {
    const files = new Map(original);
    const entries = mutate(files) ?? [...files].map(([name, data]) => ({ name, data }));
    const archive = join(await tempDir(), "state.bz2");
    await writeArchive(archive, entries);
    await refusedLeavesNothing(archive, want);
  });

  it("is refused when it is not bzip2 or not a tar", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "plain.bz2"), "just text, not an archive\n");
    await refusedLeavesNothing(join(dir, "plain.bz2"), /^plain\.bz2: bzip2 decompression failed: .*/);
    const notTar = join(dir, "nottar.bz2");
    await writeArchive(join(dir, "x.bz2"), []); // a valid empty tar: no vaults.csv, no info.json
    await refusedLeavesNothing(join(dir, "x.bz2"), /x\.bz2: the archive has no vaults\.csv$/);
    // bzip2 of bytes that are not a tar
    const { bzip2 } = await import("../../src/escape/bzip2.js");
    const bz = bzip2("nottar.bz2");
    const { createWriteStream } = await import("node:fs");
    const out = pipeline(bz.output, createWriteStream(notTar));
    bz.input.end(Buffer.alloc(2048, 7));
    await Promise.all([out, bz.done]);
    await refusedLeavesNothing(notTar, /^nottar\.bz2: not a tar archive/);
    await refusedLeavesNothing(join(dir, "missing.bz2"), /cannot read the archive/);
    // Cut short: bzip2's own reason, not the tar stream's.
    const whole = await readFile(ARCHIVE);
    await writeFile(join(dir, "cut.bz2"), whole.subarray(0, whole.length >> 1));
    await refusedLeavesNothing(
      join(dir, "cut.bz2"),
      /^cut\.bz2: bzip2 decompression failed: .*(ends unexpectedly|integrity)/i,
    );
  });
});

describe("the store an import makes", () => {
  it("is never put over a non-empty store without force; with force, only once the import succeeded", async () => {
    const parent = await tempDir();
    const dataDir = join(parent, "data");
    await mkdir(dataDir);
    await writeFile(join(dataDir, "keep"), "old");
    await expect(importReference(engine, { archive: ARCHIVE, dataDir, profile: "spot" })).rejects.toThrow(
      /is not empty.*--force/,
    );
    expect(await readdir(dataDir)).toEqual(["keep"]);

    // A refused archive with --force leaves the old store as it was.
    const bad = new Map(original);
    setField(bad, "vaults.csv", 0, 3, "1");
    const badArchive = join(await tempDir(), "bad.bz2");
    await writeArchive(
      badArchive,
      [...bad].map(([name, data]) => ({ name, data })),
    );
    await expect(
      importReference(engine, { archive: badArchive, dataDir, profile: "spot", force: true }),
    ).rejects.toThrow(/merkle_roots\.vault/);
    expect(await readdir(parent)).toEqual(["data"]);
    expect(await readdir(dataDir)).toEqual(["keep"]);

    // A store in use is not replaced, even with --force.
    const other = join(parent, "other");
    await importReference(engine, { archive: ARCHIVE, dataDir: other, profile: "spot" });
    const open = await LevelStore.open(other);
    try {
      await expect(
        importReference(engine, { archive: ARCHIVE, dataDir: other, profile: "spot", force: true }),
      ).rejects.toThrow(/in use by another process/);
    } finally {
      await open.close();
    }

    const r = await importReference(engine, { archive: ARCHIVE, dataDir, profile: "spot", force: true });
    expect(r.batch_id).toBe(4);
    expect((await readdir(parent)).sort()).toEqual(["data", "other"]);
    expect(await readdir(dataDir)).not.toContain("keep");
  });
});
