import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import * as starknet from "@scure/starknet";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/app.js";
import { createLogger } from "../../src/logging.js";
import {
  STARK_CURVE_ORDER,
  starknetMessageFromClaim,
  verifyStarkSignature,
} from "../../src/signer/stark-signer.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { loadChain, privateKeyBytes } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

/** A STARK private key (0 < k < n) used only here. */
const STARK_KEY = "0x04" + "5a".repeat(31);

interface StarkPost {
  batch_id: number;
  claim_hash: string;
  signature: { r: string; s: string };
  member_key: string;
}

/**
 * A local availability + feeder gateway on a Starknet-kind chain: serves a vector chain's
 * get_batch_data answers, reports the chain type, records every approve_new_roots body and accepts it.
 */
async function starknetGateway(responses: { update: unknown }[], chainType = "STARKNET") {
  const posts: StarkPost[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://gw");
      const body = Buffer.concat(chunks).toString("utf8");
      switch (url.pathname) {
        case "/availability_gateway/get_blockchain_type":
          res.writeHead(200, { "content-type": "application/str" }).end(chainType);
          return;
        case "/feeder_gateway/v2/get_last_batch_id":
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify(responses.length - 1));
          return;
        case "/availability_gateway/get_batch_data": {
          const id = Number(url.searchParams.get("batch_id"));
          const update = id >= 0 && id < responses.length ? responses[id]!.update : null;
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ update }));
          return;
        }
        case "/availability_gateway/approve_new_roots":
          posts.push(JSON.parse(body) as StarkPost);
          res.writeHead(200, { "content-type": "application/str" }).end("signature accepted");
          return;
        default:
          res.writeHead(404).end("not found");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return { url, posts, close };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("a Starknet-kind base chain", () => {
  it("signs every batch with the STARK key; each posted {r, s} verifies against member_key over the claim", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const gw = await starknetGateway(responses);
    cleanups.push(gw.close);
    const setup = await memberSetup({
      profile: "spot",
      privateKey: STARK_KEY,
      gatewayUrl: gw.url,
      feeder: true,
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startDaemon(setup.config, { log: createLogger({ level: "silent" }), env: {} });
    try {
      expect(daemon.signer.chainKind).toBe("starknet");
      await waitFor(() => gw.posts.length >= expected.batches.length, 60_000, "all batches posted");
    } finally {
      await daemon.stop();
    }

    const privateKey = privateKeyBytes(STARK_KEY);
    const memberKey = starknet.getStarkKey(privateKey);
    const publicKey = starknet.getPublicKey(privateKey, false);
    expect(gw.posts.map((p) => p.batch_id)).toEqual(expected.batches.map((b) => b.batch_id));
    for (const post of gw.posts) {
      const want = expected.batches[post.batch_id]!;
      // The claim does not depend on the chain kind; only the signature scheme does.
      expect(post.claim_hash).toBe(want.claim_hash);
      expect(post.member_key).toBe(memberKey);
      expect(Object.keys(post.signature).sort()).toEqual(["r", "s"]);
      const claim = Buffer.from(post.claim_hash.slice(2), "hex");
      expect(verifyStarkSignature(claim, post.signature, post.member_key)).toBe(true);
      // Directly with @scure/starknet, over the documented message: the claim's low 251 bits.
      const msg = starknetMessageFromClaim(claim);
      expect(msg).toBe(BigInt(post.claim_hash) & ((1n << 251n) - 1n));
      const sig = new starknet.Signature(BigInt(post.signature.r), BigInt(post.signature.s));
      expect(starknet.verify(sig, "0x" + msg.toString(16), publicKey)).toBe(true);
      // Not a signature of anything else.
      const other = Uint8Array.from(claim);
      other[31]! ^= 1;
      expect(verifyStarkSignature(other, post.signature, post.member_key)).toBe(false);
    }
  });

  it("refuses to start (CONFIG) with a key that does not fit the chain kind", async () => {
    const { responses, expected } = loadChain("spot-chain");
    // The vectors' key is a valid secp256k1 key above the STARK curve order.
    expect(BigInt(expected.private_key)).toBeGreaterThanOrEqual(STARK_CURVE_ORDER);
    const gw = await starknetGateway(responses);
    cleanups.push(gw.close);
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    await expect(
      startDaemon(setup.config, { log: createLogger({ level: "silent" }), env: {} }),
    ).rejects.toMatchObject({
      name: "DacdError",
      code: "CONFIG",
      message: expect.stringMatching(/not a valid STARK private key/) as unknown,
    });
    expect(gw.posts).toEqual([]);

    // The command: one line on stderr, exit status 78 (EX_CONFIG), nothing posted.
    const child = spawn(process.execPath, [BIN, "run", "--config", setup.configPath], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    const code = await new Promise<number | null>((r) => child.once("exit", r));
    expect(code).toBe(78);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/^dacd: the member key is not a valid STARK private key/);
    expect(gw.posts).toEqual([]);
  });
});
