import { describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { storeFailure } from "../../src/storage/store-errors.js";

const levelError = (code: string, message: string): Error => Object.assign(new Error(message), { code });

describe("storeFailure", () => {
  it("a full disk is a STORE error that is retried, said as a full disk", () => {
    const f = storeFailure(
      levelError("LEVEL_IO_ERROR", "IO error: /d/000012.log: No space left on device"),
      "/d",
    )!;
    expect(f.fatal).toBe(false);
    expect(f.error.code).toBe("STORE");
    expect(f.error.message).toMatch(/^the disk holding the store \/d is full .*resumes by itself/);
    const errno = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    expect(storeFailure(errno, "/d")!.fatal).toBe(false);
  });
  it("a full disk met by a table or the manifest is fatal: LevelDB takes no more writes until reopened", () => {
    for (const file of ["000005.ldb", "000007.sst", "MANIFEST-000002"]) {
      const f = storeFailure(
        levelError("LEVEL_IO_ERROR", `IO error: /d/${file}: No space left on device`),
        "/d",
      )!;
      expect(f.fatal).toBe(true);
      expect(f.error.code).toBe("STORE");
      expect(f.error.message).toMatch(
        new RegExp(`^the disk holding the store /d filled up while LevelDB wrote ${file} .*start dacd again`),
      );
    }
    // Node's own ENOSPC (a spill file of a load) names no LevelDB file: retried.
    const spill = Object.assign(new Error("ENOSPC: no space left on device, write '/d/spill/3.ldb'"), {
      code: "ENOSPC",
    });
    expect(storeFailure(spill, "/d")!.fatal).toBe(false);
  });
  it("corruption and unreadable tables are fatal, one line naming the file and what to do", () => {
    const c = storeFailure(
      levelError("LEVEL_CORRUPTION", "Corruption: block checksum mismatch: /d/000005.ldb"),
      "/d",
    )!;
    expect(c.fatal).toBe(true);
    expect(c.error.message).toMatch(
      /the store \/d is damaged \(Corruption: block checksum mismatch: \/d\/000005.ldb\): .*restore the newest backup.*check --deep/,
    );
    expect(c.error.message).not.toContain("\n");
    const io = storeFailure(levelError("LEVEL_IO_ERROR", "IO error: /d/000005.ldb: Invalid argument"), "/d")!;
    expect(io.fatal).toBe(true);
    expect(io.error.message).toContain("cannot be read");
  });
  it("leaves other errors alone", () => {
    expect(storeFailure(new DacdError("GATEWAY", "x"), "/d")).toBeUndefined();
    expect(storeFailure(new TypeError("x"), "/d")).toBeUndefined();
    expect(storeFailure(Object.assign(new Error("x"), { code: "ECONNRESET" }), "/d")).toBeUndefined();
  });
});
