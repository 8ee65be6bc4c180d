import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The kit reader runs in the escape page: every module it imports, transitively, is free of
 * node: modules and Node's Buffer and process, and the packages it reaches are the browser-safe
 * ones (viem's encoder, @noble/hashes, @scure/starknet).
 */

const ROOT = resolve(import.meta.dirname, "../../src/escape/kit/v2/reader.ts");
const PACKAGES = /^(viem|@noble\/hashes\/[a-z0-9.]+|@scure\/starknet)$/;
const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?[^'"]*?from\s*["']([^"']+)["']/g;

describe("the kit reader's imports", () => {
  it("reach no node: module, Buffer or process", () => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, "");
      expect(code, file).not.toMatch(/\bBuffer\b|\bprocess\b|\brequire\(/);
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[3]!;
        if (m[2]) continue; // a type import is gone at run time
        if (spec.startsWith(".")) visit(join(dirname(file), spec.replace(/\.js$/, ".ts")));
        else packages.add(spec);
      }
    };
    visit(ROOT);
    expect(seen.size).toBeGreaterThan(5);
    for (const p of packages) expect(p, `${p} (imported by the reader)`).toMatch(PACKAGES);
  });
});
