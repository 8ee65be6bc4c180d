#!/usr/bin/env node
/* global process, console */
// Fails when src/ has an import cycle or an import against the layers below: a folder may import
// only from folders of a lower layer (and from itself), and a PRIVATE file only from its own
// folder; and when a module other than src/config/runtime-settings.ts reads process.env. Run by
// `npm run lint`.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Lower layers first. Files directly in src/ are named with their extension. */
const LAYERS = [
  ["errors.ts"],
  ["util", "logging.ts", "build-info.ts"],
  ["model"],
  ["native"],
  ["verifier/hash"],
  ["wire"],
  ["signer", "config"],
  ["storage"],
  ["verifier/trees"],
  ["inspect", "verifier"],
  ["escape"],
  ["maintenance"],
  ["poller/gateway", "chain"],
  ["poller/member"],
  ["control", "service"],
  ["api"],
  ["devnet"],
  ["app.ts"],
  ["cli"],
];

/**
 * The one file that may import classic-level at run time (type imports aside): it loads dacd's
 * build of the binding first (src/storage/level-binding.ts), which an earlier import would miss.
 */
const CLASSIC_LEVEL_DOOR = path.join("storage", "classic-level.ts");
const CLASSIC_LEVEL_IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s*["']classic-level["']/;
/**
 * The one file that reads the environment (runtimeSettings, read once and passed down): no other
 * module reads process.env or changes it.
 */
const ENVIRONMENT_DOOR = path.join("config", "runtime-settings.ts");
const PROCESS_ENV = /\bprocess\.env\b/;
/** Files only their own folder may import: LevelDB itself stays behind LevelStore's methods. */
const PRIVATE = new Set([path.join("storage", "level-db.ts")]);

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "src");
const layerOf = new Map(LAYERS.flatMap((names, rank) => names.map((n) => [n, rank])));

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/**
 * The part of src/ a file belongs to: the longest layer entry holding it (a folder such as
 * `verifier/trees` within `verifier`, or a file's own name), else its top-level folder.
 */
function unitOf(file) {
  const rel = path.relative(src, file).split(path.sep).join("/");
  let best = null;
  for (const name of layerOf.keys())
    if ((rel === name || rel.startsWith(name + "/")) && (best === null || name.length > best.length))
      best = name;
  return best ?? rel.split("/")[0];
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*["'](\.[^"']+)["']|(?:^|\n)\s*import\s*["'](\.[^"']+)["']/g;
const files = tsFiles(src);
const known = new Set(files);
const edges = new Map(files.map((f) => [f, []]));
const problems = [];

for (const file of files) {
  const text = readFileSync(file, "utf8");
  if (CLASSIC_LEVEL_IMPORT.test(text) && path.relative(src, file) !== CLASSIC_LEVEL_DOOR)
    problems.push(
      `${path.relative(src, file)} imports classic-level: import it from src/${CLASSIC_LEVEL_DOOR}`,
    );
  if (PROCESS_ENV.test(text) && path.relative(src, file) !== ENVIRONMENT_DOOR)
    problems.push(
      `${path.relative(src, file)} reads process.env: take the setting from src/${ENVIRONMENT_DOOR} (passed down)`,
    );
  for (const m of text.matchAll(IMPORT)) {
    const target = path.resolve(path.dirname(file), m[1] ?? m[2]).replace(/\.js$/, ".ts");
    if (!known.has(target)) continue;
    edges.get(file).push(target);
    const from = unitOf(file);
    const to = unitOf(target);
    if (PRIVATE.has(path.relative(src, target)) && from !== to)
      problems.push(
        `${path.relative(src, file)} imports ${path.relative(src, target)}, which is private to src/${to}`,
      );
    if (from === to) continue;
    const rf = layerOf.get(from);
    const rt = layerOf.get(to);
    if (rf === undefined) problems.push(`src/${from} is in no layer (scripts/check-imports.mjs)`);
    else if (rt === undefined) problems.push(`src/${to} is in no layer (scripts/check-imports.mjs)`);
    else if (rt >= rf)
      problems.push(
        `${path.relative(src, file)} imports ${path.relative(src, target)}: ${from} is below ${to}`,
      );
  }
}

// Tarjan's strongly connected components: any component of more than one file is a cycle.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function visit(v) {
  index.set(v, counter);
  low.set(v, counter++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(path.relative(src, w));
    } while (w !== v);
    if (component.length > 1) problems.push(`import cycle: ${component.sort().join(" <-> ")}`);
  }
}
for (const f of files) if (!index.has(f)) visit(f);

for (const p of new Set(problems)) console.error(p);
if (problems.length > 0) process.exit(1);
console.log(`imports: ${files.length} files, no cycle, every import runs down the layers`);
