import { rm } from "node:fs/promises";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/app.js";
import { get } from "../../src/devnet/client.js";
import { startDevnet } from "../../src/devnet/main.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import { createLogger } from "../../src/logging.js";
import { ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { freePort } from "../helpers/free-port.js";

const KEY = "0x1111111111111111111111111111111111111111111111111111111111111111";
const ADDRESS = ethAddressFromPrivateKey(new Uint8Array(Buffer.from(KEY.slice(2), "hex")));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A logger whose JSON lines are kept. */
function capturingLogger(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger({ level: "debug", destination }), lines };
}

/** Lines at error level or above, whether the logger writes level numbers (pino's) or names. */
const errorLines = (lines: Record<string, unknown>[]): Record<string, unknown>[] =>
  lines.filter((l) =>
    typeof l.level === "number" ? l.level >= 50 : l.level === "error" || l.level === "fatal",
  );

/** Successful get_batch_data calls so far, from the member's own metrics. */
async function batchDataPolls(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith('dacd_gateway_requests_total{endpoint="get_batch_data",outcome="ok"}'));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}

describe("a member without a feeder gateway against the devnet", () => {
  it('reads {"update": null} as "not yet": ready, no error logged, signs each batch once it is cut', async () => {
    // No traffic and no timer: batches are cut only when the test asks.
    const dn = await startDevnet({ variant: "G", committee: [ADDRESS], quorum: 1, batchIntervalMs: 0 });
    cleanups.push(() => dn.close());
    const notYet = await get(`${dn.urls.availability}/availability_gateway/get_batch_data?batch_id=0`);
    expect(notYet.status).toBe(200);
    expect(notYet.json).toEqual({ update: null });

    const port = await freePort();
    const s = await memberSetup({
      profile: "spot",
      privateKey: KEY,
      gatewayUrl: dn.urls.availability,
      extra: `metrics_port: ${port}`,
    });
    cleanups.push(() => rm(s.dir, { recursive: true, force: true }));
    expect(s.config.feederGatewayUrl).toBeUndefined();
    const { log, lines } = capturingLogger();
    const daemon = await startDaemon(s.config, { log, retryAttempts: 2, env: {} });
    cleanups.push(() => daemon.stop());
    const base = `http://127.0.0.1:${port}`;

    // Waiting for batch 0, which does not exist yet: many polls, each answered null.
    await waitFor(async () => (await batchDataPolls(base)) >= 10, 60_000, "ten polls of get_batch_data");
    let ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { status: string }).status).toBe("ok");
    expect(daemon.member.state.phase).toBe("idle");
    expect(daemon.member.state.failing).toBeUndefined();
    expect(daemon.member.state.nextBatchId).toBe(0);

    // A batch appears: the member signs it and waits for the next one, still ready.
    const batch0 = await dn.cutBatch(true);
    expect(batch0?.batchId).toBe(0);
    const q = await dn.waitForQuorum(0, 60_000);
    expect(q.signers).toEqual([ADDRESS]);
    await waitFor(() => daemon.member.state.nextBatchId === 1, 30_000, "cursor past batch 0");
    // What it signed: the empty state's roots, against a naive computation (the devnet's are dacd's).
    await expectMemberRootsNaive(dn.chain, daemon.store, [0]);
    const polled = await batchDataPolls(base);
    await waitFor(async () => (await batchDataPolls(base)) >= polled + 10, 60_000, "ten more polls");
    ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(daemon.member.state.failing).toBeUndefined();
    expect(daemon.member.state.lastSigned?.batch_id).toBe(0);

    expect(errorLines(lines)).toEqual([]);
    expect(lines.some((l) => l.msg === "batch signed" && l.batch_id === 0)).toBe(true);
  });
});
