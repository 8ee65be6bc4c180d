import { spawnSync } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os, { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { gunzipSync } from "node:zlib";
import { exitPlan, type ExitProof } from "../src/escape/exit/plan.js";
import type { Kit2Manifest } from "../src/escape/kit/v2/format.js";
import { decodeShard } from "../src/escape/kit/v2/shard.js";
import { median } from "./dump-beside.js";
import { makeVaultDump } from "./vault-dump.js";

/**
 * `--only escape-page` (after `npm run build`): the escape page's time on a kit of realistic size,
 * as the page test (test/system/escape-page-ui.test.ts) times it on the small vector kit: headless
 * Chromium with its CPU slowed 4× (DevTools' throttling), from entering a stark key to the call
 * data shown (the manifest already read; the key's index file and one shard fetched, the shard's
 * SHA-256 checked, the root recomputed with Pedersen in the page). The kit is `--page-kit DIR`, or
 * one built here (untimed) from a generated spot-v4.0 state of `--kit-vaults N` vaults (default
 * 1,000,000), ids `--page-layout spread|sequential` (default spread). Served by node's http from this
 * process (static files, no compression, no caching; the fetches are loopback). The vault asked
 * for is the first of the kit's middle shard; the call data shown must equal the exit plan of
 * `dacd proof vault ID --format starkex --kit DIR`. `--page-runs N` (default 3) runs, each in a
 * fresh browser profile.
 */

export interface EscapePageBench {
  readonly kit: string;
  readonly leaves: number;
  readonly shards: number;
  readonly vault: string;
  readonly runs_ms: number[];
  readonly median_ms: number;
  readonly cpu: string;
  readonly load_average: string;
}

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const CHROMIUM = "/usr/bin/chromium";
const EXCHANGE = "0x5fdcca53617f4d2b9134b29090c87d01058e27e9";
const VERIFIER = "0xb8ef4a31b1d1e2bd2b1a3d0ac3d0f6f7bd9c6e4a";
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".bin": "application/octet-stream",
};

function dacd(args: string[]): string {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`dacd ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

/** The kit's files over HTTP on 127.0.0.1, as a static host serves them. */
async function serve(root: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://kit").pathname));
    const file = join(root, path.endsWith("/") ? path + "index.html" : path);
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    stat(file).then(
      (s) => {
        if (!s.isFile()) return void res.writeHead(404).end();
        res.writeHead(200, {
          "content-type": TYPES[extname(file)] ?? "application/octet-stream",
          "content-length": s.size,
          "cache-control": "no-store",
        });
        createReadStream(file).pipe(res);
      },
      () => void res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The first vault of the kit's middle shard: its id and stark key. */
async function middleVault(kit: string, m: Kit2Manifest): Promise<{ id: bigint; key: bigint }> {
  const n = m.shards.length >> 1;
  const stored = await readFile(join(kit, "shards", `${n}.bin`));
  const raw = m.shards[n]!.encoding === "gzip" ? gunzipSync(stored) : stored;
  const leaf = decodeShard(new Uint8Array(raw), `shard ${n}`).leaves[0]!;
  if (!leaf.vault) throw new Error("the page bench takes a spot kit (vaults)");
  return { id: leaf.id, key: leaf.vault.key };
}

/** A kit of `vaults` vaults (untimed) in `dir`/kit, with the contracts the page's call data need. */
async function buildKit(
  dir: string,
  vaults: number,
  spread: boolean,
  log: (s: string) => void,
): Promise<string> {
  await mkdir(join(dir, "dump"));
  log(`escape-page bench: generating and loading ${vaults} vaults, ids ${spread ? "spread" : "sequential"}`);
  await makeVaultDump(join(dir, "dump"), vaults, { spread });
  dacd(["load", "--from", join(dir, "dump"), "--db", join(dir, "db")]);
  await rm(join(dir, "dump"), { recursive: true });
  log("escape-page bench: building its kit (dacd escape-kit)");
  const kit = join(dir, "kit");
  dacd([
    "escape-kit",
    ...["--db", join(dir, "db"), "--out", kit, "--chain-id", "31337"],
    ...["--exchange", EXCHANGE, "--verifier", VERIFIER],
  ]);
  await rm(join(dir, "db"), { recursive: true });
  return kit;
}

export async function runEscapePageBench(opts: {
  kit?: string;
  vaults: number;
  spread: boolean;
  runs: number;
  log: (s: string) => void;
}): Promise<EscapePageBench> {
  const { chromium } = await import("playwright-core");
  const work = await mkdtemp(join(tmpdir(), "dacd-page-bench-"));
  let server: Server | undefined;
  try {
    const kit = opts.kit ?? (await buildKit(work, opts.vaults, opts.spread, opts.log));
    const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as Kit2Manifest;
    const { id, key } = await middleVault(kit, manifest);
    const proof = JSON.parse(
      dacd(["proof", "vault", id.toString(), "--format", "starkex", "--kit", kit]),
    ) as ExitProof;
    const contracts = {
      exchange: (manifest.exchange ?? EXCHANGE) as `0x${string}`,
      verifier: (manifest.verifier ?? VERIFIER) as `0x${string}`,
    };
    const expected = Object.fromEntries(
      exitPlan(proof, contracts)
        .steps.filter((s) => s.data)
        .map((s) => [s.step, s.data]),
    );
    const served = await serve(kit);
    server = served.server;
    const loadBefore = os.loadavg();
    const runs: number[] = [];
    for (let r = 0; r < opts.runs; r++) {
      const browser = await chromium.launchPersistentContext(join(work, `profile-${r}`), {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
        ],
      });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on("pageerror", (e) => problems.push(e.message));
        await page.goto(`${served.url}/`);
        await page.waitForSelector('body[data-ready="kit"]', { timeout: 60_000 });
        const cdp = await browser.newCDPSession(page);
        await cdp.send("Emulation.setCPUThrottlingRate", { rate: 4 });
        const started = performance.now();
        await page.fill("#leaf-id", "0x" + key.toString(16));
        await page.click("#lookup button[type=submit]");
        const which = await Promise.race([
          page.waitForSelector("#result:not([hidden])", { timeout: 120_000 }).then(() => "result"),
          page.waitForSelector("#matches button", { timeout: 120_000 }).then(() => "matches"),
          page.waitForSelector("#status.error", { timeout: 120_000 }).then(() => "error"),
        ]);
        if (which === "error") throw new Error(`the page refused: ${await page.textContent("#status")}`);
        if (which === "matches") {
          await page.click(`#matches button:text("vault ${id}")`);
          await page.waitForSelector("#result:not([hidden])", { timeout: 120_000 });
        }
        const calls: Record<string, string> = {};
        for (const area of await page.$$("textarea[data-call]"))
          calls[(await area.getAttribute("data-call"))!] = await area.inputValue();
        const ms = performance.now() - started;
        if (JSON.stringify(calls) !== JSON.stringify(expected))
          throw new Error(`the page's call data for vault ${id} differ from dacd proof's exit plan`);
        if (problems.length > 0) throw new Error(`the page failed: ${problems.join("; ")}`);
        opts.log(`escape-page bench: run ${r + 1}: ${ms.toFixed(0)} ms`);
        runs.push(ms);
      } finally {
        await browser.close();
      }
    }
    const loadAfter = os.loadavg();
    return {
      kit: opts.kit ?? `built here (${opts.spread ? "spread" : "sequential"} ids)`,
      leaves: manifest.leaves,
      shards: manifest.shards.length,
      vault: id.toString(),
      runs_ms: runs.map((x) => Math.round(x)),
      median_ms: Math.round(median(runs)),
      cpu: `${os.cpus()[0]?.model ?? "?"} × ${os.cpus().length}`,
      load_average: `${loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} after`,
    };
  } finally {
    server?.close();
    await rm(work, { recursive: true, force: true });
  }
}

export function escapePageTable(r: EscapePageBench): string[] {
  return [
    `\nThe escape page on a kit of ${r.leaves.toLocaleString("en")} vaults (${r.shards} shards; ${r.kit}), headless Chromium, CPU throttled 4×: stark key entered → call data shown (target ≤ 2,000 ms)`,
    "| vault | runs ms | median ms |",
    "|---|---|---|",
    `| ${r.vault} | ${r.runs_ms.join(", ")} | ${r.median_ms} |`,
    `CPU: ${r.cpu}; load average ${r.load_average}`,
  ];
}
