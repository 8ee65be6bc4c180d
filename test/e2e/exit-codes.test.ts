import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The same kind of mistake has the same exit status in every command (docs/operations.md, "Exit
 * codes"): a bad id or a missing flag is a usage error (64), found before any store is opened.
 */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const NO_STORE = join(import.meta.dirname, "no-such-store");

function dacd(...args: string[]): { code: number | null; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
    timeout: 60_000,
  });
  return { code: r.status, err: r.stderr };
}

function usage(args: string[], pattern: RegExp): void {
  const r = dacd(...args);
  expect(r.code, r.err).toBe(64);
  expect(r.err.trim().split("\n"), r.err).toHaveLength(1);
  expect(r.err).toMatch(pattern);
}

describe("exit codes agree across commands", () => {
  it("a bad id or leaf kind is a usage error (64) in show and proof alike", () => {
    usage(["show", "batch", "abc", "--db", NO_STORE], /batch id "abc"/);
    usage(["show", "leaf", "vault", "abc", "--db", NO_STORE], /leaf id "abc"/);
    usage(["proof", "vault", "abc", "--db", NO_STORE], /leaf id "abc"/);
    usage(
      ["proof", "vaultz", "1", "--db", NO_STORE],
      /"vaultz" is not one of position, vault, order, rollup_vault/,
    );
    usage(["proof", "vault", "1", "--batch", "x", "--db", NO_STORE], /batch id "x"/);
  }, 60_000);

  it("load --from-reference --db without --profile, or with an unknown one, is a usage error (64)", () => {
    usage(["load", "--from-reference", "state.bz2", "--db", NO_STORE], /--db DIR with --profile/);
    usage(
      ["load", "--from-reference", "state.bz2", "--db", NO_STORE, "--profile", "spotty"],
      /--profile "spotty" is not a profile name/,
    );
  }, 60_000);
});
