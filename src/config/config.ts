/**
 * Loads the one YAML configuration file, applies environment overrides and validates strictly.
 *
 * - Unknown keys, wrong types and out-of-range values are DacdError("CONFIG") naming the key
 *   (and its line) or the environment variable; all problems are reported together.
 * - String-valued keys (URLs, paths, cron strings, host) keep the text exactly as written even
 *   when YAML would read it as a number or boolean: `data_dir: 0x1f` is the path "0x1f", not 31.
 *   Number and boolean keys must be written unquoted.
 * - A key whose value is null (`key:` or `key: ~`) counts as absent.
 * - Relative paths in the file are resolved against the file's directory; relative paths from
 *   the environment against the current directory.
 * - Environment: `DACD_<KEY>` (upper case; nested keys as `DACD_HEIGHTS_ORDER`,
 *   `DACD_SCHEDULE_BACKUP`) override the file, parsed with the key's type (booleans: true/false,
 *   any case). The reference implementation's `PRIVATE_KEY_PATH`, `AVAILABILITY_GW_ENDPOINT` and
 *   `CERTIFICATES_PATH` also override the file but yield to `DACD_*`. Empty variables are ignored;
 *   a `DACD_` name that is neither a key nor one of OTHER_ENV is an error.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { validate as validateCron } from "node-cron";
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import { runtimeSettings } from "./runtime-settings.js";
import { isAddress } from "./address.js";
import { DacdError } from "../errors.js";
import { DEFAULT_HEIGHTS, type Heights, type ProfileName } from "../model/profile.js";
import { configField, REFERENCE_ENV, SCHEMA, type Config, type Field, type Schedule } from "./schema.js";

export { LOG_FORMATS, LOG_LEVELS, SCHEMA } from "./schema.js";
export type { Config, LogFormat, LogLevel, Schedule } from "./schema.js";

/** A YAML value reduced to what validation needs. */
type YNode =
  | { kind: "scalar"; value: unknown; source: string | undefined; plain: boolean; line: number }
  | { kind: "map"; entries: Map<string, YNode>; line: number }
  | { kind: "seq"; line: number };

/** Where a value came from, for messages, and how to resolve relative paths. */
type Input =
  | { from: "file"; node: YNode; label: string; baseDir: string }
  | { from: "env"; text: string; label: string; baseDir: string };

type Env = Readonly<Record<string, string | undefined>>;

const ENV_PREFIX = "DACD_";

/**
 * DACD_ variables that are not configuration keys but are read elsewhere (the config file's path,
 * the native addon's and the verifier's switches, the addon build's): not an error for these.
 */
export const OTHER_ENV: ReadonlySet<string> = new Set([
  "DACD_CONFIG",
  "DACD_HASH_KERNEL",
  "DACD_TREE_WALK",
  "DACD_NODE_CACHE",
  "DACD_SYSTEMD_NOTIFY",
  "DACD_LEVEL_BINDING",
  "DACD_NATIVE_ADDON",
  "DACD_SKIP_NATIVE",
  "DACD_NATIVE_REBUILD",
  "DACD_NATIVE_VERBOSE",
  "DACD_PEDERSEN_WINDOW_BITS",
  "DACD_REQUIRE_NATIVE",
  "DACD_REQUIRE_TOOLS",
  "DACD_BZIP2",
]);

class Problems {
  readonly list: string[] = [];
  add(message: string): undefined {
    this.list.push(message);
    return undefined;
  }
}

function toYNode(doc: Document, node: unknown, lc: LineCounter, depth = 0): YNode {
  let n = node;
  if (isAlias(n)) n = n.resolve(doc);
  const offset = (n as { range?: [number, number, number] } | null)?.range?.[0] ?? 0;
  const line = lc.linePos(offset).line;
  if (depth > 20) return { kind: "seq", line };
  if (isScalar(n)) {
    return {
      kind: "scalar",
      value: n.value,
      source: n.source,
      plain: n.type === "PLAIN" || n.type === undefined,
      line,
    };
  }
  if (isMap(n)) {
    const entries = new Map<string, YNode>();
    for (const pair of n.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(String(pair.key));
      entries.set(key, toYNode(doc, pair.value, lc, depth + 1));
    }
    return { kind: "map", entries, line };
  }
  if (isSeq(n)) return { kind: "seq", line };
  // `key:` with nothing after it.
  return { kind: "scalar", value: null, source: undefined, plain: true, line };
}

function describeNode(node: YNode): string {
  if (node.kind === "map") return "a mapping";
  if (node.kind === "seq") return "a list";
  const v = node.value;
  if (typeof v === "string") return `the string ${JSON.stringify(v)}`;
  if (typeof v === "boolean" || typeof v === "number" || typeof v === "bigint")
    return `${typeof v} ${node.source ?? String(v)}`;
  return String(v);
}

/** The text of a string-typed value, or undefined after recording why it is not one. */
function stringOf(input: Input, p: Problems): string | undefined {
  if (input.from === "env") return input.text;
  const node = input.node;
  if (node.kind === "scalar") {
    if (typeof node.value === "string") return node.value;
    // Plain scalars YAML reads as numbers/booleans (0x1f, 1e3, true): keep them as written.
    if (node.plain && node.source !== undefined) return node.source;
  }
  return p.add(`${input.label} must be a string, got ${describeNode(node)}`);
}

function isNull(input: Input): boolean {
  return input.from === "file" && input.node.kind === "scalar" && input.node.value === null;
}

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function numberOf(input: Input, p: Problems): number | undefined {
  if (input.from === "env") {
    const t = input.text.trim();
    if (!DECIMAL.test(t)) return p.add(`${input.label} must be a number, got ${JSON.stringify(input.text)}`);
    return Number(t);
  }
  const node = input.node;
  if (node.kind === "scalar" && typeof node.value === "number" && Number.isFinite(node.value))
    return node.value;
  const hint = node.kind === "scalar" && typeof node.value === "string" ? " (write numbers unquoted)" : "";
  return p.add(`${input.label} must be a number, got ${describeNode(node)}${hint}`);
}

function boolOf(input: Input, p: Problems): boolean | undefined {
  if (input.from === "env") {
    const t = input.text.trim().toLowerCase();
    if (t === "true") return true;
    if (t === "false") return false;
    return p.add(`${input.label} must be true or false, got ${JSON.stringify(input.text)}`);
  }
  const node = input.node;
  if (node.kind === "scalar" && typeof node.value === "boolean") return node.value;
  const hint = node.kind === "scalar" && typeof node.value === "string" ? " (write true/false unquoted)" : "";
  return p.add(`${input.label} must be true or false, got ${describeNode(node)}${hint}`);
}

function checkUrl(text: string, label: string, p: Problems): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return p.add(`${label} must be an http(s) URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return p.add(`${label} must be an http(s) URL, got scheme ${url.protocol}`);
  }
  if (url.search || url.hash) return p.add(`${label} must not carry a query or fragment`);
  if (url.username || url.password) {
    // Never echoed: the text holds a password.
    return p.add(
      `${label} must not carry credentials (user:password@${url.host}): they would never be sent; remove them (client authentication uses certificates_path)`,
    );
  }
  return text;
}

/** A scalar field's value from one input, validated; undefined when absent or invalid. */
function scalarValue(field: Exclude<Field, { kind: "object" }>, input: Input, p: Problems): unknown {
  if (isNull(input)) return undefined;
  const label = input.label;
  switch (field.kind) {
    case "string": {
      const s = stringOf(input, p);
      if (s === undefined) return undefined;
      return s.trim() === "" ? p.add(`${label} must not be empty`) : s;
    }
    case "url": {
      const s = stringOf(input, p);
      return s === undefined ? undefined : checkUrl(s.trim(), label, p);
    }
    case "path": {
      const s = stringOf(input, p);
      if (s === undefined) return undefined;
      if (s.trim() === "") return p.add(`${label} must not be empty`);
      if (s.includes("\0")) return p.add(`${label} must not contain NUL characters`);
      return isAbsolute(s) ? resolve(s) : resolve(input.baseDir, s);
    }
    case "cron": {
      const s = stringOf(input, p);
      if (s === undefined) return undefined;
      return validateCron(s.trim())
        ? s.trim()
        : p.add(`${label} is not a valid cron expression: ${JSON.stringify(s)}`);
    }
    case "enum": {
      const s = stringOf(input, p);
      if (s === undefined) return undefined;
      if (!field.values.includes(s)) {
        return p.add(`${label} must be one of ${field.values.join(", ")}; got ${JSON.stringify(s)}`);
      }
      return s;
    }
    case "bool":
      return boolOf(input, p);
    case "number": {
      const n = numberOf(input, p);
      if (n === undefined) return undefined;
      if (field.exclusiveMin !== undefined && !(n > field.exclusiveMin)) {
        return p.add(`${label} must be greater than ${field.exclusiveMin}, got ${n}`);
      }
      if (field.min !== undefined && n < field.min)
        return p.add(`${label} must be at least ${field.min}, got ${n}`);
      return n;
    }
    case "int": {
      const n = numberOf(input, p);
      if (n === undefined) return undefined;
      if (!Number.isSafeInteger(n)) return p.add(`${label} must be an integer, got ${n}`);
      if ((field.min !== undefined && n < field.min) || (field.max !== undefined && n > field.max)) {
        const range =
          field.max !== undefined ? `between ${field.min ?? "-∞"} and ${field.max}` : `at least ${field.min}`;
        return p.add(`${label} must be ${range}, got ${n}`);
      }
      return n;
    }
  }
}

interface Layer {
  fileLabel: (key: string, line: number) => string;
  env: Map<string, { name: string; text: string }>;
  configDir: string;
  cwd: string;
}

/** Validates the fields of one mapping level (top level or `heights`/`schedule`). */
function validateLevel(
  fields: Readonly<Record<string, Field>>,
  fileMap: YNode | undefined,
  prefix: string,
  layer: Layer,
  p: Problems,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const entries = fileMap?.kind === "map" ? fileMap.entries : new Map<string, YNode>();
  for (const [key, node] of entries) {
    if (!(key in fields)) p.add(`${layer.fileLabel(prefix + key, node.line)} is not a known key`);
  }
  for (const [key, field] of Object.entries(fields)) {
    const path = prefix + key;
    const node = entries.get(key);
    if (field.kind === "object") {
      if (layer.env.has(path)) {
        const envName = layer.env.get(path)?.name ?? "";
        p.add(`environment variable ${envName} cannot set a mapping; set ${envName}_<KEY> instead`);
      }
      if (node !== undefined && node.kind !== "map" && !(node.kind === "scalar" && node.value === null)) {
        p.add(`${layer.fileLabel(path, node.line)} must be a mapping, got ${describeNode(node)}`);
        continue;
      }
      out[key] = validateLevel(field.fields, node, `${path}.`, layer, p);
      continue;
    }
    const env = layer.env.get(path);
    const before = p.list.length;
    let value: unknown;
    if (env !== undefined) {
      value = scalarValue(
        field,
        { from: "env", text: env.text, label: `environment variable ${env.name}`, baseDir: layer.cwd },
        p,
      );
    } else if (node !== undefined) {
      const label = layer.fileLabel(path, node.line);
      value = scalarValue(field, { from: "file", node, label, baseDir: layer.configDir }, p);
    }
    if (value === undefined && field.default !== undefined) value = field.default;
    if (value === undefined && field.required && p.list.length === before)
      p.add(`required key ${path} is missing`);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** Maps environment variables onto key paths ("polling_interval_s", "heights.order"). */
function readEnv(
  env: Env,
  warnings: string[],
  unknown: string[],
): Map<string, { name: string; text: string }> {
  const byEnvName = new Map<string, string>();
  for (const [key, field] of Object.entries(SCHEMA)) {
    byEnvName.set(`${ENV_PREFIX}${key.toUpperCase()}`, key);
    if (field.kind === "object") {
      for (const sub of Object.keys(field.fields)) {
        byEnvName.set(`${ENV_PREFIX}${key.toUpperCase()}_${sub.toUpperCase()}`, `${key}.${sub}`);
      }
    }
  }
  const out = new Map<string, { name: string; text: string }>();
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || text === undefined || text === "") continue;
    const path = byEnvName.get(name);
    if (path === undefined) {
      if (!OTHER_ENV.has(name)) unknown.push(`environment variable ${name} is not a configuration key`);
      continue;
    }
    out.set(path, { name, text });
  }
  for (const [name, path] of Object.entries(REFERENCE_ENV)) {
    const text = env[name];
    if (text === undefined || text === "") continue;
    const shadow = out.get(path);
    if (shadow !== undefined) {
      if (shadow.name.startsWith(ENV_PREFIX)) warnings.push(`${name} is ignored: ${shadow.name} is set`);
      continue;
    }
    out.set(path, { name, text });
  }
  return out;
}

function buildHeights(
  profile: ProfileName,
  raw: Record<string, unknown>,
  p: Problems,
  source: string,
): Heights {
  const defaults = DEFAULT_HEIGHTS[profile];
  const heights: Heights = { ...defaults };
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value !== "number") continue;
    const tree = key as keyof Heights;
    if (defaults[tree] === undefined) {
      p.add(`${source}: heights.${key} does not apply to profile ${profile} (it has no such tree)`);
      continue;
    }
    heights[tree] = value;
  }
  return heights;
}

/** The base chain is followed with both its endpoint and the contract, or not at all. */
function checkBaseChain(raw: Record<string, unknown>, p: Problems): void {
  const url = raw.base_chain_rpc_url;
  const address = raw.starkex_contract_address;
  if (typeof address === "string" && !/^0x[0-9a-fA-F]{40}$/.test(address))
    p.add(`starkex_contract_address must be 0x and 40 hex digits, got ${JSON.stringify(address)}`);
  // An invalid value is reported as such, not again as missing.
  const invalid = p.list.some((m) =>
    /base_chain_rpc_url|starkex_contract_address|BASE_CHAIN_RPC_URL/.test(m),
  );
  if (!invalid && (url === undefined) !== (address === undefined))
    p.add(
      url === undefined
        ? "starkex_contract_address is set but base_chain_rpc_url is not: set both to follow the base chain"
        : "base_chain_rpc_url is set but starkex_contract_address is not: set both to follow the base chain",
    );
}

/** The configuration file could not be read at all (missing, unreadable): a CONFIG error of its own kind. */
export class UnreadableConfigFile extends DacdError {}

/** Reads, overrides with `env`, and validates the configuration file at `path`. */
const PKCS11_KEYS = ["pkcs11_module", "pkcs11_token_label", "pkcs11_key_label", "pkcs11_pin_path"] as const;

/** The keys each signer needs; those of the other signer are ignored with a warning, never read. */
function checkSigner(raw: Record<string, unknown>, p: Problems, warnings: string[]): void {
  if (raw.signer === "pkcs11") {
    // No HSM offers the STARK curve: a Starknet member keeps a file key.
    if (raw.chain === "starknet")
      p.add(
        "signer: pkcs11 does not apply to chain: starknet (no HSM offers the STARK curve; use signer: file)",
      );
    for (const key of ["pkcs11_module", "pkcs11_token_label", "pkcs11_key_label"])
      if (raw[key] === undefined) p.add(`required key ${key} is missing (signer: pkcs11)`);
    for (const key of ["private_key_path", "private_key_password_path"])
      if (raw[key] !== undefined) warnings.push(`${key} is not read with signer: pkcs11`);
    return;
  }
  if (raw.private_key_path === undefined) p.add("required key private_key_path is missing");
  for (const key of PKCS11_KEYS)
    if (raw[key] !== undefined) warnings.push(`${key} is not read with signer: file`);
}

export function loadConfig(path: string, env: Env = runtimeSettings().environment): Config {
  const configPath = resolve(path);
  const { root, warnings } = readConfigFile(configPath);
  const p = new Problems();
  const layer: Layer = {
    fileLabel: (key, line) => `key ${key} (line ${line})`,
    // A DACD_ name that is no key is an error like an unknown key in the file (a typo is not ignored).
    env: readEnv(env, warnings, p.list),
    configDir: dirname(configPath),
    cwd: process.cwd(),
  };
  const raw = validateLevel(SCHEMA, root, "", layer, p);
  const checked = checkAcrossKeys(raw, p, warnings);
  if (p.list.length > 0) {
    const body = p.list.length === 1 ? (p.list[0] ?? "") : `\n  - ${p.list.join("\n  - ")}`;
    throw new DacdError("CONFIG", `invalid config ${configPath}: ${body}`);
  }
  return configOf(configPath, raw, checked, warnings);
}

/** The file's top-level mapping, and YAML's warnings about it. */
function readConfigFile(configPath: string): { root: Extract<YNode, { kind: "map" }>; warnings: string[] } {
  let text: string;
  try {
    text = readFileSync(configPath, "utf8");
  } catch (e) {
    const detail = e instanceof Error ? e.message : String(e);
    throw new UnreadableConfigFile("CONFIG", `cannot read config file ${configPath}: ${detail}`, {
      cause: e,
    });
  }
  const lc = new LineCounter();
  // YAML 1.2 core schema; string keys are recovered from the source text (see stringOf).
  const doc = parseDocument(text, { lineCounter: lc, schema: "core", uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const detail = doc.errors.map((e) => (e.message.split("\n")[0] ?? "").replace(/:$/, "")).join("; ");
    throw new DacdError("CONFIG", `config ${configPath} is not valid YAML: ${detail}`);
  }
  const warnings = doc.warnings.map((w) => `config ${configPath}: ${w.message.split("\n")[0]}`);
  const root = toYNode(doc, doc.contents, lc);
  if (root.kind === "scalar" && root.value === null) {
    throw new DacdError("CONFIG", `config ${configPath} is empty`);
  }
  if (root.kind !== "map") {
    throw new DacdError(
      "CONFIG",
      `config ${configPath} must be a mapping of keys to values, got ${describeNode(root)}`,
    );
  }
  return { root, warnings };
}

/** What the checks that span several keys derive: the tree heights and the escape contracts. */
interface CrossChecked {
  readonly heights: Heights;
  readonly contracts: { exchange: string; verifier: string } | undefined;
}

/** The rules between keys: heights and profile, TLS, signer, base chain. */
function checkAcrossKeys(raw: Record<string, unknown>, p: Problems, warnings: string[]): CrossChecked {
  const profile = raw.profile as ProfileName | undefined;
  let heights: Heights = { order: 0 };
  if (profile !== undefined) {
    heights = buildHeights(profile, (raw.heights as Record<string, unknown> | undefined) ?? {}, p, "config");
    if (raw.validate_rollup === true && DEFAULT_HEIGHTS[profile].rollup_vault === undefined) {
      p.add(`validate_rollup: true does not apply to profile ${profile} (it has no rollup vault tree)`);
    }
  }
  const contracts = escapeContracts(
    raw.escape_contracts as Record<string, string | undefined> | undefined,
    p,
  );
  const availability = raw.availability_gateway_url as string | undefined;
  if (raw.certificates_path !== undefined && availability !== undefined && availability.startsWith("http:")) {
    p.add(`certificates_path is set but availability_gateway_url ${availability} is not https`);
  }
  checkSigner(raw, p, warnings);
  checkBaseChain(raw, p);
  return { heights, contracts };
}

/**
 * The validated keys as a Config: each scalar key under its camelCase name (configField), in the
 * schema's order, when set (the schema has filled in every default); the objects as cross-checked.
 */
function configOf(
  configPath: string,
  raw: Record<string, unknown>,
  { heights, contracts }: CrossChecked,
  warnings: string[],
): Config {
  const fields: Record<string, unknown> = { configPath };
  for (const [key, field] of Object.entries(SCHEMA)) {
    if (field.kind === "object") continue;
    if (raw[key] !== undefined) fields[configField(key)] = raw[key];
  }
  const config = fields as unknown as Config;
  config.heights = heights;
  config.schedule = { ...((raw.schedule ?? {}) as Schedule) };
  if (contracts) config.escapeContracts = contracts;
  config.warnings = warnings;
  return config;
}

/** `escape_contracts`: both addresses or neither, each a 20-byte address (EIP-55 when mixed case). */
function escapeContracts(
  raw: Record<string, string | undefined> | undefined,
  p: Problems,
): { exchange: string; verifier: string } | undefined {
  const { exchange, verifier } = raw ?? {};
  if (exchange === undefined && verifier === undefined) return undefined;
  let ok = true;
  for (const [key, value] of [
    ["exchange", exchange],
    ["verifier", verifier],
  ] as const) {
    if (value === undefined) {
      p.add(`escape_contracts.${key} is missing: give both the exchange and the verifier, or neither`);
      ok = false;
    } else if (!isAddress(value)) {
      p.add(
        `escape_contracts.${key} ${JSON.stringify(value.slice(0, 60))} is not an address (0x and 40 hex digits, EIP-55 checksum when mixed case)`,
      );
      ok = false;
    }
  }
  return ok ? { exchange: exchange!, verifier: verifier! } : undefined;
}
