/**
 * The member key in a PKCS#11 token (SoftHSM2): the member signs a vector chain end to end through
 * the token, a re-post after a restart reuses the journaled signature, a wrong PIN, curve or label
 * stops it at start (exit 78), a token that fails mid-run leaves batches unposted and the member
 * unready until it works again, and `dacd keygen --pkcs11` makes a key that never leaves the token.
 */
import { randomBytes } from "node:crypto";
import { readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { startDaemon, type Daemon } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/config/config.js";
import { createLogger } from "../../src/logging.js";
import { recoverAddress } from "../../src/signer/eth-signer.js";
import { Pkcs11Signer } from "../../src/signer/pkcs11/pkcs11-signer.js";
import { TokenSession } from "../../src/signer/pkcs11/token.js";
import { defaultClaimsJournalPath, readClaimsJournalEntries } from "../../src/storage/claims-journal.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { freePort } from "../helpers/free-port.js";
import { generateP256, importKey, initToken, PIN, softhsm, softhsmConf } from "../helpers/softhsm.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { toolAvailable } from "../helpers/tool-required.js";
import { VectorGateway, type Post } from "../helpers/vector-gateway.js";
import { loadChain, type Expected } from "../helpers/vectors.js";

const hsm = softhsm();
const haveHsm = toolAvailable(`PKCS#11: ${"missing" in hsm ? hsm.missing : ""}`, "module" in hsm);
if (!haveHsm) console.warn(`PKCS#11 signer tests skipped: ${"missing" in hsm ? hsm.missing : ""}`);
const describeHsm = haveHsm ? describe : describe.skip;
const MODULE = "module" in hsm ? hsm.module : "";
const TOKEN = "dacd-e2e";
const HALF_N = secp256k1.Point.CURVE().n / 2n;

let root = "";
let tokens = "";
const { responses, expected } = loadChain("spot-chain");

beforeAll(async () => {
  if (!("module" in hsm)) return;
  root = await tempDir("dacd-pkcs11-");
  tokens = await softhsmConf(root);
  initToken(TOKEN);
  // The vectors' key, so that the claims and the address are the chain's expected ones; its DER
  // files are removed at once (the token keeps its only copy).
  await importKey(MODULE, TOKEN, "member", expected.private_key, root);
  await rm(join(root, "member.key.der"));
  generateP256(MODULE, TOKEN, "p256");
});
afterAll(removeTempDirs);

function lowS(signature: string): boolean {
  return BigInt("0x" + signature.slice(66, 130)) <= HALF_N;
}

/**
 * A gateway serving the spot chain that accepts any signature recovering to the member with a low s,
 * and answers 503 to the POSTs of the batches in `failPosts`.
 */
async function hsmGateway(): Promise<{ gw: VectorGateway; posts: Post[]; failPosts: Set<number> }> {
  const gw = await new VectorGateway(responses, expected, "G").start();
  const posts: Post[] = [];
  const failPosts = new Set<number>();
  gw.interceptor = (_req, res, url, body) => {
    if (url.pathname !== "/availability_gateway/approve_new_roots") return false;
    const post = JSON.parse(body) as Post;
    posts.push(post);
    if (failPosts.has(post.batch_id)) {
      res.writeHead(503).end("unavailable");
      return true;
    }
    const want = expected.batches.find((b) => b.batch_id === post.batch_id);
    const ok =
      want !== undefined &&
      post.claim_hash === want.claim_hash &&
      post.member_key === expected.member_key &&
      recoverAddress(Buffer.from(post.claim_hash.slice(2), "hex"), post.signature) === expected.member_key &&
      lowS(post.signature);
    if (ok) gw.accepted.push(post);
    res
      .writeHead(ok ? 200 : 400, { "content-type": "application/str" })
      .end(ok ? "signature accepted" : "rejected");
    return true;
  };
  return { gw, posts, failPosts };
}

async function memberConfig(
  gatewayUrl: string,
  opts: { keyLabel?: string; pin?: string; extra?: string } = {},
) {
  const dir = await tempDir("dacd-pkcs11-member-");
  await writeFile(join(dir, "pin"), (opts.pin ?? PIN) + "\n", { mode: 0o600 });
  const yaml = [
    "profile: spot",
    `availability_gateway_url: "${gatewayUrl}"`,
    `feeder_gateway_url: "${gatewayUrl}"`,
    "data_dir: data",
    "polling_interval_s: 0.05",
    "http_request_timeout_s: 2",
    "validate_rollup: true",
    "signer: pkcs11",
    `pkcs11_module: ${MODULE}`,
    `pkcs11_token_label: ${TOKEN}`,
    `pkcs11_key_label: ${opts.keyLabel ?? "member"}`,
    "pkcs11_pin_path: pin",
    opts.extra ?? "",
  ].join("\n");
  const path = join(dir, "dacd.yaml");
  await writeFile(path, yaml + "\n");
  return { dir, path, config: loadConfig(path, {}) };
}

/** A daemon whose log lines are kept (to be searched for key bytes). */
async function start(config: Config, logs: string[]): Promise<Daemon> {
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString("utf8"));
      done();
    },
  });
  return startDaemon(config, { log: createLogger({ level: "debug", destination }), retryAttempts: 2 });
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

function expectAllValid(posts: Post[], exp: Expected): void {
  for (const p of posts) {
    const want = exp.batches.find((b) => b.batch_id === p.batch_id)!;
    expect(p.claim_hash).toBe(want.claim_hash);
    expect(p.member_key).toBe(exp.member_key);
    expect(recoverAddress(Buffer.from(p.claim_hash.slice(2), "hex"), p.signature)).toBe(exp.member_key);
    expect(lowS(p.signature)).toBe(true);
  }
}

describeHsm("signer: pkcs11 (SoftHSM2)", () => {
  it("signs the chain through the token: expected claims, recovering to the member with low s; no key byte in store, journal or logs", async () => {
    const { gw, posts } = await hsmGateway();
    const m = await memberConfig(gw.url);
    const logs: string[] = [];
    const daemon = await start(m.config, logs);
    try {
      expect(daemon.signer.memberKey).toBe(expected.member_key);
      await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all accepted");
    } finally {
      await daemon.stop();
      await gw.close();
    }
    expect(gw.accepted.map((p) => p.batch_id)).toEqual(expected.batches.map((b) => b.batch_id));
    expectAllValid(posts, expected);

    const key = Buffer.from(expected.private_key.replace(/^0x/, ""), "hex");
    const files = [
      ...(await filesUnder(m.config.dataDir)),
      ...(await filesUnder(join(m.config.dataDir, "..", "data-claims"))),
    ];
    expect(files.length).toBeGreaterThan(3);
    for (const f of files) {
      const bytes = await readFile(f);
      expect(bytes.includes(key), f).toBe(false);
      expect(bytes.toString("latin1").toLowerCase().includes(key.toString("hex")), f).toBe(false);
    }
    const logText = logs.join("");
    expect(logText).toContain(expected.member_key);
    expect(logText.toLowerCase()).not.toContain(key.toString("hex"));
  });

  it("a re-post after a restart, with the store kept or lost, uses the journaled signature", async () => {
    const { gw, posts, failPosts } = await hsmGateway();
    const m = await memberConfig(gw.url);
    const journalPath = defaultClaimsJournalPath(m.config.dataDir);
    // Batches 0 and 1 are accepted; batch 2 is journaled and its POST fails (refused from the start:
    // turned on after two acceptances, it would race the member's third POST).
    gw.available = 3;
    failPosts.add(2);
    let daemon = await start(m.config, []);
    await waitFor(() => posts.some((p) => p.batch_id === 2), 20_000, "batch 2 posted");
    expect(gw.acceptedIds()).toEqual([0, 1]);
    await daemon.stop();
    const journaled = new Map(
      (await readClaimsJournalEntries(journalPath)).map((e) => [e.batch_id, e.signature]),
    );
    expect([...journaled.keys()].sort()).toEqual([0, 1, 2]);

    // Restart with the store: batch 2 is re-posted from it.
    failPosts.delete(2);
    const before = posts.length;
    daemon = await start(m.config, []);
    await waitFor(() => gw.accepted.some((p) => p.batch_id === 2), 20_000, "batch 2 accepted");
    await daemon.stop();
    // Restart without the store: every batch is verified again, and signed with the journal's signature.
    await rm(m.config.dataDir, { recursive: true });
    const lost = posts.length;
    daemon = await start(m.config, []);
    try {
      await waitFor(() => posts.slice(lost).some((p) => p.batch_id === 2), 20_000, "batch 2 posted again");
    } finally {
      await daemon.stop();
      await gw.close();
    }
    expect(posts.length).toBeGreaterThan(before);
    for (const p of posts.filter((p) => journaled.has(p.batch_id)))
      expect(p.signature, `batch ${p.batch_id}`).toBe(journaled.get(p.batch_id));
    expectAllValid(posts, expected);
  });

  it("a wrong PIN, a P-256 key or a missing label stops it at start: one line, exit 78", async () => {
    const cases = [
      { pin: "000000", says: /PIN for token "dacd-e2e" is refused \(CKR_PIN_INCORRECT\)/ },
      { keyLabel: "p256", says: /is on P-256 \(prime256v1\), not secp256k1/ },
      { keyLabel: "absent", says: /no private key labelled "absent" in token "dacd-e2e"/ },
    ];
    for (const c of cases) {
      const m = await memberConfig("http://127.0.0.1:9", c);
      const checked = await dacdAsync(["config", "check", "--config", m.path]);
      expect(checked.code, checked.err).toBe(78);
      expect(checked.err.trim().split("\n")).toHaveLength(1);
      expect(checked.err).toMatch(c.says);
      const run = await dacdAsync(["run", "--config", m.path]);
      expect(run.code, run.err).toBe(78);
      expect(run.err).toMatch(c.says);
    }
    const ok = await memberConfig("http://127.0.0.1:9");
    const checked = await dacdAsync(["config", "check", "--config", ok.path]);
    expect(checked.code, checked.err).toBe(0);
    expect(checked.out).toContain(
      `# member address ${expected.member_key} (PKCS#11 token "dacd-e2e", key "member")`,
    );
  });

  it("a token that fails mid-run: nothing posted, /readyz unready with the reason, dacd_signer_errors_total; then it recovers", async () => {
    const { gw, posts } = await hsmGateway();
    const port = await freePort();
    const m = await memberConfig(gw.url, { extra: `metrics_port: ${port}` });
    gw.available = 2;
    const daemon = await start(m.config, []);
    const away = `${tokens}-away`;
    try {
      await waitFor(() => gw.accepted.length === 2, 60_000, "two accepted");
      const status = await dacdAsync(["status", "--config", m.path, "--no-json"]);
      expect(status.out).toMatch(/signer\s+PKCS#11 token "dacd-e2e", key "member"/);
      // The token's objects disappear under the open session, as with a removed token.
      await rename(tokens, away);
      const postsBefore = posts.length;
      gw.available = expected.batches.length;
      let ready: { status: string; reason: string } | undefined;
      await waitFor(
        async () => {
          const r = await fetch(`http://127.0.0.1:${port}/readyz`);
          ready = (await r.json()) as { status: string; reason: string };
          return r.status === 503 && ready.status === "signer_unavailable";
        },
        30_000,
        "unready: signer_unavailable",
      );
      expect(ready!.reason).toMatch(/token is failing \(batch 2 waits unsigned\): .*PKCS#11 token/);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(Number(/^dacd_signer_errors_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(posts.length).toBe(postsBefore);
      expect(daemon.member.state.nextBatchId).toBe(2);

      await rename(away, tokens);
      await waitFor(
        () => gw.accepted.length === expected.batches.length,
        60_000,
        "all accepted after recovery",
      );
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
        30_000,
        "ready again",
      );
    } finally {
      await stat(away).then(
        () => rename(away, tokens),
        () => undefined,
      );
      await daemon.stop();
      await gw.close();
    }
    expectAllValid(posts, expected);
  });

  it("keygen --pkcs11 makes a non-extractable key in the token, refuses its label again; signing latency", async () => {
    const m = await memberConfig("http://127.0.0.1:9", { keyLabel: "fresh" });
    const made = await dacdAsync(["keygen", "--pkcs11", "--config", m.path]);
    expect(made.code, made.err).toBe(0);
    const address = made.out.trim();
    expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const again = await dacdAsync(["keygen", "--pkcs11", "--config", m.path]);
    expect(again.code).toBe(78);
    expect(again.err).toMatch(/already holds a key labelled "fresh"; refusing to overwrite/);

    const session = TokenSession.open(
      { module: MODULE, tokenLabel: TOKEN, keyLabel: "fresh", pin: PIN },
      { findKey: true },
    );
    try {
      expect(session.key!.address).toBe(address);
      const [priv] = session.find("CKO_PRIVATE_KEY", "fresh");
      expect(session.privateKeyFlags(priv!)).toEqual({ sensitive: true, extractable: false, token: true });
    } finally {
      session.close();
    }

    const signer = await Pkcs11Signer.open({
      spec: { module: MODULE, tokenLabel: TOKEN, keyLabel: "fresh", pin: PIN },
    });
    const times: number[] = [];
    try {
      expect(signer.memberKey).toBe(address);
      for (let i = 0; i < 100; i++) {
        const claim = new Uint8Array(randomBytes(32));
        const t = performance.now();
        const sig = await signer.sign(claim);
        times.push(performance.now() - t);
        expect(recoverAddress(claim, sig)).toBe(address);
        expect(lowS(sig)).toBe(true);
      }
    } finally {
      await signer.close();
    }
    times.sort((a, b) => a - b);
    const q = (f: number): string => times[Math.floor(f * (times.length - 1))]!.toFixed(2);
    console.log(
      `SoftHSM2 signing latency per claim (100 claims, worker round trip included): median ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms`,
    );
  });
});
