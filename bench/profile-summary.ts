import { createRequire } from "node:module";
import { readFile } from "node:fs/promises";
import { loadNativeAddon } from "../src/native/addon.js";

/**
 * `node dist/bench/profile-summary.js FILE [N]`: the N functions (default 30) that cost the most in
 * a profile written by `npm run bench -- --cpu-profile` or `--heap-profile`.
 * - A .cpuprofile: self time and its share of the profiled time. Garbage collection shows as
 *   "(garbage collector)", waiting for I/O or workers as "(idle)".
 * - A .heapprofile: bytes allocated (sampled, freed or not) by the function itself, then by stack.
 * - Calls into a native addon (dacd's, classic-level's) are named after the JavaScript function
 *   that made them: V8 names every Node-API function's samples after whichever such function was
 *   registered last (they share one entry point), so the name it records says nothing.
 * - With FILE.stalls.json beside it (`--catchup --cpu-profile`: the event-loop turns over 50 ms),
 *   also what ran during those turns: self time, and the stacks (innermost first) it was spent in.
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const [file, topArg = "30"] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary FILE.cpuprofile|FILE.heapprofile [N]");
const top = Number(topArg);
const name = (f: CallFrame): string => {
  const where = f.url ? `${f.url.replace(/^.*\/dist\//, "")}:${f.lineNumber + 1}` : "";
  return `${f.functionName || "(anonymous)"} ${where}`.trim();
};
const add = (m: Map<string, number>, k: string, v: number): void => void m.set(k, (m.get(k) ?? 0) + v);
const largest = (m: Map<string, number>): [string, number][] =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, top);

const data = JSON.parse(await readFile(file, "utf8")) as CpuProfile | { head: HeapNode };
if ("head" in data) {
  const bySelf = new Map<string, number>();
  const byStack = new Map<string, number>();
  let total = 0;
  const visit = (n: HeapNode, stack: string[]): void => {
    const here = [name(n.callFrame), ...stack];
    total += n.selfSize;
    add(bySelf, here[0]!, n.selfSize);
    add(byStack, here.slice(0, 4).join(" < "), n.selfSize);
    for (const c of n.children) visit(c, here);
  };
  visit(data.head, []);
  const mib = (b: number): string => (b / 2 ** 20).toFixed(1).padStart(7);
  console.log(`allocated ${mib(total).trim()} MiB`);
  for (const [k, b] of largest(bySelf)) console.log(`${mib(b)} MiB  ${k}`);
  console.log("\nby stack (innermost first):");
  for (const [k, b] of largest(byStack)) console.log(`${mib(b)} MiB  ${k}`);
} else {
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of data.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const addonFunctions = nodeApiFunctionNames();
  /** A sample's node by name; a call into an addon by its caller's. */
  const label = (id: number): string => {
    const frame = byId.get(id)!.callFrame;
    const caller = parent.get(id);
    if (frame.url !== "" || !addonFunctions.has(frame.functionName) || caller === undefined)
      return name(frame);
    return `(native addon call) from ${name(byId.get(caller)!.callFrame)}`;
  };
  const selfUs = new Map<string, number>();
  // Each sample's time is the delta to the next sample.
  data.samples.forEach((id, i) => add(selfUs, label(id), data.timeDeltas[i + 1] ?? 0));
  const total = data.endTime - data.startTime;
  console.log(`profiled ${(total / 1000).toFixed(0)} ms`);
  for (const [k, us] of largest(selfUs)) {
    console.log(
      `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
  }
  const stalls = await readFile(`${file}.stalls.json`, "utf8").then(
    (t) => JSON.parse(t) as [number, number][],
    () => undefined,
  );
  if (stalls) summariseStalls(data, byId, parent, label, stalls);
}

/** The functions the Node-API addons a dacd process loads register (dacd's own, classic-level's). */
function nodeApiFunctionNames(): Set<string> {
  const names = new Set(Object.keys(loadNativeAddon() ?? {}));
  const level = createRequire(import.meta.url)("classic-level/binding.js") as object;
  for (const key of Object.keys(level)) names.add(key);
  return names;
}

/** Self time and stacks of the samples taken inside the stall windows. */
function summariseStalls(
  data: CpuProfile,
  byId: Map<number, CpuProfile["nodes"][number]>,
  parent: Map<number, number>,
  label: (id: number) => string,
  stalls: [number, number][],
): void {
  const inStall = new Map<string, number>();
  const byStack = new Map<string, number>();
  let t = data.startTime;
  let w = 0;
  let spent = 0;
  const sorted = [...stalls].sort((a, b) => a[0] - b[0]);
  data.samples.forEach((id, i) => {
    t += data.timeDeltas[i] ?? 0;
    while (w < sorted.length && sorted[w]![1] < t) w++;
    if (w >= sorted.length || t < sorted[w]![0]) return;
    const dt = data.timeDeltas[i + 1] ?? 0;
    spent += dt;
    add(inStall, label(id), dt);
    const stack: string[] = [];
    for (let at: number | undefined = id; at !== undefined && stack.length < 4; at = parent.get(at))
      stack.push(at === id ? label(at) : name(byId.get(at)!.callFrame));
    add(byStack, stack.join(" < "), dt);
  });
  const ms = (us: number): string => (us / 1000).toFixed(0).padStart(6);
  console.log(`\nduring the ${stalls.length} event-loop turns over 50 ms (${ms(spent).trim()} ms sampled):`);
  for (const [k, us] of largest(inStall)) console.log(`${ms(us)} ms  ${k}`);
  console.log("\nby stack (innermost first):");
  for (const [k, us] of largest(byStack)) console.log(`${ms(us)} ms  ${k}`);
}
