/**
 * Seeded fuzzing of the member's run loop: a real local gateway serves mutated get_batch_data bodies
 * of the spot vector chain (each batch's genuine body after its share of mutants), and the member
 * (the daemon's run loop with its real HTTP client, fetches ahead, bounded parser, LevelDB store and
 * claims journal) must never sign anything but the expected claims, never fail with anything but a
 * DacdError, and end with every batch signed once.
 *
 * The gateway serves every batch at once, so that the member fetches ahead as it does catching up.
 * A batch's mutant is served to every fetch of that batch (ahead, in turn, or again) until the
 * member has failed on it or signed the batch: a fetch ahead that got the genuine body would
 * otherwise be the one verified, and the mutant would never be parsed.
 *
 * `node dist/bench/fuzz-daemon.js [--bodies N] [--seed S]` prints the figures (default 10,000
 * bodies); test/system/fuzz-daemon.test.ts runs 1,000 of them in CI.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../src/logging.js";
import { AvailabilityGateway } from "../src/poller/gateway/gateway-client.js";
import { Member } from "../src/poller/member/member.js";
import { createSigner } from "../src/signer/create-signer.js";
import { ClaimsJournal } from "../src/storage/claims-journal.js";
import { LevelStore } from "../src/storage/level-store.js";
import { createEngine } from "../src/verifier/hash/select.js";
import { makeProfile } from "../src/model/profile.js";
import { bindVerifyContext } from "../src/verifier/verify-batch.js";
import { prng } from "../src/util/prng.js";

export interface FuzzFigures {
  seed: number;
  bodies: number;
  batches: number;
  signedBatches: number;
  /** Posts whose signature is not the expected one for the batch (must be 0). */
  wrongSignatures: number;
  /** Batch ids posted with more than one claim (must be 0). */
  conflictingIds: number;
  /** Failures logged with a code other than a DacdError's (INTERNAL; must be 0). */
  internalErrors: number;
  /** Runs of the whole chain (each on a fresh store) it took to serve every body. */
  rounds: number;
  /** Mutants the member signed: the expected claim (a change that does not alter the batch). */
  mutantsSigned: number;
  /** Mutants the member failed on; with mutantsSigned, every mutant served (`bodies`). */
  mutantsRefused: number;
  /** Answers carrying a mutant: above `bodies` where fetches ahead got mutants too. */
  mutantServes: number;
  /** Failures of the member by code, over all mutants. */
  outcomes: Record<string, number>;
  durationMs: number;
  peakRssMiB: number;
}

/** The spot chain's vectors, from bench/ (vitest) or dist/bench/ (node). */
const FIXTURE = [join(import.meta.dirname, ".."), join(import.meta.dirname, "..", "..")]
  .map((root) => join(root, "test", "fixtures", "vectors", "spot-chain"))
  .find((dir) => existsSync(dir))!;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A mutant of `body` (the whole get_batch_data answer): a value-level or a text-level change. */
export function mutate(body: { update: unknown }, rnd: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const doc = JSON.parse(JSON.stringify(body)) as Json;
  const textual = rnd() < 0.3;
  if (!textual) {
    const rounds = 1 + Math.floor(rnd() * 3);
    for (let i = 0; i < rounds; i++) mutateValue(doc, rnd, pick);
    return JSON.stringify(doc);
  }
  let text = JSON.stringify(doc);
  const at = Math.floor(rnd() * text.length);
  switch (Math.floor(rnd() * 6)) {
    case 0:
      return text.slice(0, at); // truncated
    case 1: {
      const c = String.fromCharCode(32 + Math.floor(rnd() * 95));
      return text.slice(0, at) + c + text.slice(at + 1); // one character changed
    }
    case 2:
      return text.slice(0, at) + "[".repeat(1 + Math.floor(rnd() * 200)) + text.slice(at); // nesting
    case 3: {
      const len = Math.floor(rnd() * 64);
      return text.slice(0, at) + text.slice(at, at + len) + text.slice(at); // a segment repeated
    }
    case 4:
      return text.slice(0, at) + "\u0000\uffff\ud800" + text.slice(at); // odd characters
    default:
      text = text.replace(/"(\d+)"/, (_, d: string) => `"${d}${d}"`);
      return text; // an id or amount made longer
  }
}

/**
 * A mutant of batch `id`'s answer, other than one whose prev_batch_id names a batch before `id - 1`:
 * the member takes that, read when the batch before is refused, as the operator abandoning the
 * batch before, and skips it (a path of its own, not a malformed answer).
 */
function drawMutant(body: { update: unknown }, id: number, rnd: () => number): string {
  for (;;) {
    const text = mutate(body, rnd);
    if (!abandonsPrevious(text, id)) return text;
  }
}

function abandonsPrevious(text: string, id: number): boolean {
  let prev: unknown;
  try {
    prev = (JSON.parse(text) as { update?: { prev_batch_id?: unknown } } | null)?.update?.prev_batch_id;
  } catch {
    return false;
  }
  return typeof prev === "number" && Number.isSafeInteger(prev) && prev < id - 1;
}

function mutateValue(doc: Json, rnd: () => number, pick: <T>(xs: readonly T[]) => T): void {
  // Walk to a random container and change one of its entries.
  let node = doc;
  for (let depth = 0; depth < 6; depth++) {
    const kids = childrenOf(node);
    if (kids.length === 0 || (depth > 0 && rnd() < 0.3)) break;
    const next = pick(kids);
    const child = (node as Record<string, Json>)[next];
    if (child === null || typeof child !== "object") break;
    node = child;
  }
  const keys = childrenOf(node);
  if (keys.length === 0) return;
  const key = pick(keys);
  const obj = node as Record<string, Json>;
  const old = obj[key];
  const replacements: (() => Json)[] = [
    () => null,
    () => "",
    () => [],
    () => ({}),
    () => true,
    () => -1,
    () => 2 ** 53 + 2,
    () => 1.5,
    () => "0x" + "f".repeat(64),
    () => "1" + "0".repeat(80),
    () => "-" + String(old),
    () => (typeof old === "string" ? old.slice(0, -1) : String(old)),
    () => (typeof old === "string" && /^\d+$/.test(old) ? String(BigInt(old) + 1n) : "1"),
    () => (typeof old === "string" && /^0x[0-9a-f]+$/i.test(old) ? old.slice(0, -1) + "0" : "0x1"),
    () => "x".repeat(Math.floor(rnd() * 5000)),
  ];
  switch (Math.floor(rnd() * 4)) {
    case 0:
      if (Array.isArray(node)) node.splice(Number(key), 1);
      else delete obj[key];
      return;
    case 1:
      if (!Array.isArray(node)) obj[String(Math.floor(rnd() * 2 ** 31))] = old ?? null;
      return;
    default:
      obj[key] = pick(replacements)();
  }
}

function childrenOf(node: Json): string[] {
  if (Array.isArray(node)) return node.map((_, i) => String(i));
  if (node !== null && typeof node === "object") return Object.keys(node);
  return [];
}

export async function fuzzDaemon(opts: { bodies: number; seed: number }): Promise<FuzzFigures> {
  const rnd = prng(opts.seed);
  const started = performance.now();
  let total: FuzzFigures | undefined;
  for (let round = 1; (total?.bodies ?? 0) < opts.bodies; round++) {
    const f = await fuzzRound(opts.bodies - (total?.bodies ?? 0), rnd);
    if (!total) total = { ...f, seed: opts.seed };
    else {
      total.bodies += f.bodies;
      total.signedBatches = Math.min(total.signedBatches, f.signedBatches);
      total.wrongSignatures += f.wrongSignatures;
      total.conflictingIds += f.conflictingIds;
      total.internalErrors += f.internalErrors;
      total.mutantsSigned += f.mutantsSigned;
      total.mutantsRefused += f.mutantsRefused;
      total.mutantServes += f.mutantServes;
      for (const [k, v] of Object.entries(f.outcomes)) total.outcomes[k] = (total.outcomes[k] ?? 0) + v;
    }
    total.rounds = round;
  }
  total!.durationMs = Math.round(performance.now() - started);
  total!.peakRssMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  return total!;
}

async function fuzzRound(bodies: number, rnd: () => number): Promise<FuzzFigures> {
  const responses = JSON.parse(await readFile(join(FIXTURE, "responses.json"), "utf8")) as {
    update: unknown;
  }[];
  const expected = JSON.parse(await readFile(join(FIXTURE, "expected.json"), "utf8")) as {
    private_key: string;
    heights: Record<string, number>;
    batches: { batch_id: number; claim_hash: string; signature: string }[];
  };
  const batches = expected.batches.length;
  const perBatch = Math.ceil(bodies / batches);
  /** The mutant each batch is served until the member fails on it or signs the batch. */
  const current = new Map<number, string>();
  const drawnFor = new Map<number, number>();
  let mutantsSigned = 0;
  let mutantsRefused = 0;
  let mutantServes = 0;
  let served = 0;
  const answerFor = (id: number): string => {
    let text = current.get(id);
    if (text === undefined && (drawnFor.get(id) ?? 0) < perBatch && served < bodies) {
      text = drawMutant(responses[id]!, id, rnd);
      current.set(id, text);
      drawnFor.set(id, (drawnFor.get(id) ?? 0) + 1);
      served++;
    }
    if (text === undefined) return JSON.stringify(responses[id]);
    mutantServes++;
    return text;
  };
  const posts: { batch_id: number; claim_hash: string; signature: string }[] = [];
  let wrongSignatures = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://gateway");
      if (url.pathname.endsWith("/get_blockchain_type")) return void res.end("ETHEREUM");
      if (url.pathname.endsWith("/approve_new_roots")) {
        const post = JSON.parse(Buffer.concat(chunks).toString()) as (typeof posts)[number];
        posts.push(post);
        const want = expected.batches[post.batch_id];
        if (!want || want.signature !== post.signature || want.claim_hash !== post.claim_hash) {
          wrongSignatures++;
          return void res.writeHead(400).end("signature rejected");
        }
        // The batch is done: the mutant being served was the body signed; the rest are not served.
        if (current.delete(post.batch_id)) mutantsSigned++;
        drawnFor.set(post.batch_id, perBatch);
        return void res.end("signature accepted");
      }
      if (url.pathname.endsWith("/get_batch_data")) {
        const id = Number(url.searchParams.get("batch_id"));
        res.setHeader("content-type", "application/json");
        if (!(id >= 0 && id < batches)) return void res.end('{"update":null}');
        return void res.end(answerFor(id));
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const dir = await mkdtemp(join(tmpdir(), "dacd-fuzz-"));
  const outcomes: Record<string, number> = {};
  let internalErrors = 0;
  const log = createLogger({
    level: "info",
    destination: {
      write(line: string) {
        const rec = JSON.parse(line) as { outcome?: string; code?: string; batch_id?: number };
        if (rec.outcome !== "failed") return;
        const code = rec.code ?? "?";
        outcomes[code] = (outcomes[code] ?? 0) + 1;
        if (code === "INTERNAL") internalErrors++;
        // The member failed on the batch in turn: its mutant was parsed; the next fetch gets the next.
        if (rec.batch_id !== undefined && current.delete(rec.batch_id)) mutantsRefused++;
      },
    },
  });
  const store = await LevelStore.open(join(dir, "data"));
  const journal = await ClaimsJournal.open(join(dir, "claims", "claims.journal"));
  const engine = createEngine("auto", { threads: "auto" });
  const availability = new AvailabilityGateway({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timeoutMs: 10_000,
    deadlineMs: 30_000,
    retry: { attempts: 1 },
  });
  const abort = new AbortController();
  try {
    const key = new Uint8Array(Buffer.from(expected.private_key.replace(/^0x/, ""), "hex"));
    const ctx = await bindVerifyContext(store, {
      profile: makeProfile("spot", expected.heights),
      engine,
      signer: createSigner("ethereum", key),
      options: { validateOrders: true, validateRollup: true },
      claims: journal,
    });
    const member = new Member(ctx, availability, undefined, log, {
      pollIntervalMs: 1,
      maxBackoffMs: 1,
      validateRollup: true,
    });
    const done = member.run(abort.signal);
    const until = Date.now() + Math.max(120_000, bodies * 200);
    while (member.state.nextBatchId < batches) {
      if (Date.now() > until) throw new Error(`fuzz run stuck at batch ${member.state.nextBatchId}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    abort.abort(new Error("done"));
    await done;
    const claims = new Map<number, Set<string>>();
    for (const p of posts)
      (claims.get(p.batch_id) ?? claims.set(p.batch_id, new Set()).get(p.batch_id)!).add(p.claim_hash);
    return {
      seed: 0,
      rounds: 1,
      mutantsSigned,
      mutantsRefused,
      mutantServes,
      bodies: served,
      batches,
      signedBatches: new Set(
        posts.filter((p) => expected.batches[p.batch_id]?.signature === p.signature).map((p) => p.batch_id),
      ).size,
      wrongSignatures,
      conflictingIds: [...claims.values()].filter((s) => s.size > 1).length,
      internalErrors,
      outcomes,
      durationMs: 0,
      peakRssMiB: 0,
    };
  } finally {
    abort.abort(new Error("done"));
    await availability.close();
    await store.close();
    await journal.close();
    await engine.close?.();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop()!)) {
  const figures = await fuzzDaemon({
    bodies: Number(arg("--bodies") ?? 10_000),
    seed: Number(arg("--seed") ?? 34),
  });
  process.stdout.write(JSON.stringify(figures, null, 2) + "\n");
  process.exitCode = figures.wrongSignatures + figures.conflictingIds + figures.internalErrors === 0 ? 0 : 1;
}
