import { readFile } from "node:fs/promises";

/**
 * `node dist/bench/profile-summary.js FILE [N]`: the N functions (default 30) that cost the most in
 * a profile written by `npm run bench -- --cpu-profile` or `--heap-profile`.
 * - A .cpuprofile: self time and its share of the profiled time. Garbage collection shows as
 *   "(garbage collector)", waiting for I/O or workers as "(idle)".
 * - A .heapprofile: bytes allocated (sampled, freed or not) by the function itself, then by stack.
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
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
  const selfUs = new Map<string, number>();
  // Each sample's time is the delta to the next sample.
  data.samples.forEach((id, i) => add(selfUs, name(byId.get(id)!.callFrame), data.timeDeltas[i + 1] ?? 0));
  const total = data.endTime - data.startTime;
  console.log(`profiled ${(total / 1000).toFixed(0)} ms`);
  for (const [k, us] of largest(selfUs)) {
    console.log(
      `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
  }
}
