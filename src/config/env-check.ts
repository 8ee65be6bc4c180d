/**
 * Every `DACD_*` environment variable is checked before a command runs: a name dacd does not know
 * (a typo such as DACD_POLLING_INTERVAL) or a value a switch does not accept is an error naming
 * the variable, never silently ignored. Configuration keys' values (DACD_<KEY>) are checked with
 * the file by loadConfig; this covers the names and the switches read outside the configuration.
 */
import { existsSync } from "node:fs";
import { DacdError } from "../errors.js";
import { OTHER_ENV } from "./config.js";
import { HASH_ENGINES, TREE_WALKS } from "../model/engines.js";
import { runtimeSettings } from "./runtime-settings.js";
import { SCHEMA } from "./schema.js";

type Env = Readonly<Record<string, string | undefined>>;

/** DACD_<KEY> for every configuration key, nested ones as DACD_<KEY>_<SUB>. */
function configVariableNames(): Set<string> {
  const names = new Set<string>();
  for (const [key, field] of Object.entries(SCHEMA)) {
    names.add(`DACD_${key.toUpperCase()}`);
    if (field.kind === "object")
      for (const sub of Object.keys(field.fields))
        names.add(`DACD_${key.toUpperCase()}_${sub.toUpperCase()}`);
  }
  return names;
}

const oneOf =
  (values: readonly string[]) =>
  (v: string): string | undefined =>
    values.includes(v) ? undefined : `must be one of ${values.join(", ")}`;

/** Checks of the switches' values; undefined when the value is acceptable. */
const SWITCHES: Readonly<Record<string, (value: string) => string | undefined>> = {
  DACD_TREE_WALK: oneOf(TREE_WALKS),
  // All but the install scripts' switches are read once, by runtime-settings.ts.
  DACD_NODE_CACHE: oneOf(["auto", "js"]),
  DACD_SYSTEMD_NOTIFY: oneOf(["auto", "exec"]),
  DACD_LEVEL_BINDING: oneOf(["auto", "stock"]),
  // Also the hash_engine key, but read by every command, with or without a configuration.
  DACD_HASH_ENGINE: oneOf(HASH_ENGINES),
  // The kernel's availability is checked when the native engine loads; here only its form.
  DACD_HASH_KERNEL: (v) =>
    /^[a-z0-9_]+$/.test(v) ? undefined : "must be a kernel name such as adx or portable",
  DACD_NATIVE_ADDON: (v) => (existsSync(v) ? undefined : "names a file that does not exist"),
  DACD_CONFIG: (v) => (v.includes("\0") ? "must be a path" : undefined),
  // Read by scripts/build-native.mjs when the addon is built; checked here so a typo is seen.
  DACD_SKIP_NATIVE: oneOf(["0", "1"]),
  DACD_NATIVE_REBUILD: oneOf(["0", "1"]),
  DACD_NATIVE_VERBOSE: oneOf(["0", "1"]),
  DACD_PEDERSEN_WINDOW_BITS: oneOf(["12", "13", "14", "15", "16"]),
  // Read by the install scripts and the tests: a native build or test that cannot run fails.
  DACD_REQUIRE_NATIVE: oneOf(["0", "1"]),
  // Read by the tests (CI sets it, and its children inherit it): a test whose tool is missing fails.
  DACD_REQUIRE_TOOLS: oneOf(["0", "1"]),
};

/** The problems with the DACD_* variables of `env` (empty when all are fine). */
export function environmentProblems(env: Env = runtimeSettings().environment): string[] {
  const known = configVariableNames();
  const problems: string[] = [];
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith("DACD_") || raw === undefined || raw === "") continue;
    const check = SWITCHES[name];
    if (!check) {
      if (known.has(name)) continue; // its value is checked with the configuration
      if (!OTHER_ENV.has(name))
        problems.push(
          `environment variable ${name} is not a dacd setting (unset it; docs/operations.md lists the names)`,
        );
      continue;
    }
    const value = raw.trim();
    const why = check(value);
    if (why) problems.push(`environment variable ${name}=${JSON.stringify(raw)} ${why}`);
  }
  return problems;
}

/** Throws DacdError("CONFIG") with every problem of environmentProblems, one per line. */
export function checkEnvironment(env: Env = runtimeSettings().environment): void {
  const problems = environmentProblems(env);
  if (problems.length === 1) throw new DacdError("CONFIG", problems[0]!);
  if (problems.length > 1) throw new DacdError("CONFIG", problems.join("; "));
}
