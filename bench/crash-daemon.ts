/**
 * SIGKILLs at random moments: a real `dacd run` process against a local gateway serving the spot
 * vector chain is killed after a random delay, again and again, until every batch is accepted;
 * the gateway counts batch ids posted with two claims (must be 0) and wrong signatures (must be 0),
 * and the claims journal must read back (a torn last record at most) after every kill.
 *
 * `node dist/bench/crash-daemon.js [--rounds N] [--seed S] [--max-delay-ms M]` prints the figures.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClaimsJournal } from "../src/storage/claims-journal.js";
import { prng } from "../src/util/prng.js";

const ROOTS = [join(import.meta.dirname, ".."), join(import.meta.dirname, "..", "..")];
const ROOT = ROOTS.find((r) => existsSync(join(r, "test", "fixtures", "vectors", "spot-chain")))!;
const BIN = join(ROOT, "bin", "dacd.js");
const FIXTURE = join(ROOT, "test", "fixtures", "vectors", "spot-chain");

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const rounds = Number(arg("--rounds") ?? 5);
const rnd = prng(Number(arg("--seed") ?? 34));
const maxDelay = Number(arg("--max-delay-ms") ?? 8000);

const responses = JSON.parse(await readFile(join(FIXTURE, "responses.json"), "utf8")) as unknown[];
const expected = JSON.parse(await readFile(join(FIXTURE, "expected.json"), "utf8")) as {
  private_key: string;
  batches: { batch_id: number; claim_hash: string; signature: string }[];
};

let kills = 0;
let tornTails = 0;
let conflictingIds = 0;
let wrongSignatures = 0;
let starts = 0;
const started = performance.now();
for (let round = 0; round < rounds; round++) {
  const posts: { batch_id: number; claim_hash: string; signature: string }[] = [];
  const accepted = new Set<number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname.endsWith("/get_blockchain_type")) return void res.end("ETHEREUM");
      if (url.pathname.endsWith("/get_last_batch_id")) return void res.end(String(responses.length - 1));
      if (url.pathname.endsWith("/get_batch_data")) {
        const id = Number(url.searchParams.get("batch_id"));
        return void res.end(JSON.stringify(responses[id] ?? { update: null }));
      }
      if (url.pathname.endsWith("/approve_new_roots")) {
        const p = JSON.parse(Buffer.concat(chunks).toString()) as (typeof posts)[number];
        posts.push(p);
        const want = expected.batches[p.batch_id];
        if (!want || want.signature !== p.signature) {
          wrongSignatures++;
          return void res.writeHead(400).end("signature rejected");
        }
        accepted.add(p.batch_id);
        return void res.end("signature accepted");
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), "dacd-crash-"));
  await writeFile(join(dir, "member.key"), expected.private_key + "\n");
  await chmod(join(dir, "member.key"), 0o600);
  const config = join(dir, "dacd.yaml");
  await writeFile(
    config,
    [
      "profile: spot",
      `availability_gateway_url: "${url}"`,
      `feeder_gateway_url: "${url}"`,
      "private_key_path: member.key",
      "data_dir: data",
      "polling_interval_s: 0.05",
      "validate_rollup: true",
      "",
    ].join("\n"),
  );
  while (accepted.size < expected.batches.length) {
    starts++;
    const child = spawn(process.execPath, [BIN, "run", "--config", config], { stdio: "ignore" });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const delay = Math.floor(rnd() * maxDelay);
    const timer = setTimeout(() => {
      kills++;
      child.kill("SIGKILL");
    }, delay);
    const until = Date.now() + 60_000;
    while (child.exitCode === null && child.signalCode === null && accepted.size < expected.batches.length) {
      if (Date.now() > until) throw new Error("no progress for 60 s");
      await new Promise((r) => setTimeout(r, 10));
    }
    clearTimeout(timer);
    process.stderr.write(
      `round ${round + 1}: start ${starts}, kill after ${delay} ms, ${accepted.size} accepted\n`,
    );
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    const journalPath = join(dir, "data-claims", "claims.journal");
    if (existsSync(journalPath)) {
      const journal = await ClaimsJournal.open(journalPath);
      if (journal.tornTail) tornTails++;
      await journal.close();
    }
  }
  const claims = new Map<number, Set<string>>();
  for (const p of posts)
    (claims.get(p.batch_id) ?? claims.set(p.batch_id, new Set()).get(p.batch_id)!).add(p.claim_hash);
  conflictingIds += [...claims.values()].filter((s) => s.size > 1).length;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
}
process.stdout.write(
  JSON.stringify(
    {
      rounds,
      starts,
      kills,
      tornTails,
      conflictingIds,
      wrongSignatures,
      durationMs: Math.round(performance.now() - started),
    },
    null,
    2,
  ) + "\n",
);
process.exitCode = conflictingIds + wrongSignatures === 0 ? 0 : 1;
