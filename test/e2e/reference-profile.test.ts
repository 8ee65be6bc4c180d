import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES } from "../helpers/vectors.js";

/** A reference archive loaded with the other spot profile is refused with a line that says so. */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-ref-profile-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("load --from-reference with the wrong profile", () => {
  it.each([
    ["reference-state-spot", "spot-v4.0", "spot"],
    ["reference-state-spot-v4.0", "spot", "spot-v4.0"],
  ])(
    "%s loaded as %s: the profile does not match (use %s), exit 2, nothing left",
    (name, wrong, right) => {
      const db = join(dir, `${name}-as-${wrong}`);
      const r = spawnSync(
        process.execPath,
        [BIN, "load", "--from-reference", join(FIXTURES, name, "state.bz2"), "--db", db, "--profile", wrong],
        { encoding: "utf8", env: { ...process.env, DACD_HASH_ENGINE: "wasm" }, timeout: 120_000 },
      );
      expect(r.status, r.stderr).toBe(2);
      const lines = r.stderr.split("\n").filter((l) => !l.startsWith("dacd load: ") && l !== "");
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^dacd: orders_\\d\\.csv line \\d+, field order_id: .*the profile does not match the archive \\(load it with profile ${right.replace(".", "\\.")}\\)$`,
        ),
      );
      expect(existsSync(db)).toBe(false);
    },
    120_000,
  );
});
