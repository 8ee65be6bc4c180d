import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "..", "..", "src");

/** The src/ modules `dacd` loads before any command's action runs: main.ts's static imports, transitively. */
function staticallyLoaded(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/^(import|export)\s(?!type\s)[^;]*?from\s+"(\.[^"]+)"/gms))
      visit(resolve(dirname(file), m[2]!.replace(/\.js$/, ".ts")));
  };
  visit(join(SRC, entry));
  return new Set([...seen].map((f) => relative(SRC, f)));
}

describe("dacd's start-up", () => {
  // Every dacd invocation (--version, --help, each command) pays for what main.ts loads statically;
  // a command's implementation is loaded by its action.
  const loaded = staticallyLoaded("cli/main.ts");

  it("loads no command's implementation before the command runs", () => {
    for (const heavy of [
      "app.ts",
      "devnet/main.ts",
      "storage/level-store.ts",
      "storage/claims-journal.ts",
      "verifier/verify-batch.ts",
      "verifier/hash/select.ts",
      "escape/proof.ts",
      "escape/dump.ts",
      "maintenance/integrity-check.ts",
      "service/startup-checks.ts",
      "logging.ts",
    ])
      expect(loaded, heavy).not.toContain(heavy);
  });

  it("still loads the command definitions and the checks every command runs", () => {
    for (const needed of ["cli/run.ts", "cli/escape/proof-command.ts", "config/env-check.ts"])
      expect(loaded, needed).toContain(needed);
  });
});
