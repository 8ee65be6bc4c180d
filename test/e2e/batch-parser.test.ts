import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { makeProfile, type Profile } from "../../src/model/profile.js";
import { parseBatchAnswer, type BatchParseRequest } from "../../src/poller/gateway/batch-answer.js";
import { BatchParser } from "../../src/poller/gateway/batch-parser.js";
import { DEFAULT_JSON_LIMITS } from "../../src/poller/gateway/bounded-json.js";
import { AvailabilityGateway } from "../../src/poller/gateway/gateway-client.js";
import { gatewayLoader } from "../../src/poller/member/prefetch.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * Reading get_batch_data answers in worker threads (src/poller/gateway/batch-parser.ts, the compiled worker
 * under dist/): the same updates, refusals and gateway failures as on the main thread, over a real
 * HTTP gateway.
 */

const spot = makeProfile("spot");
const perp = makeProfile("perpetual");
const encode = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

function request(body: unknown, profile: Profile, batchId: number, scanned = false): BatchParseRequest {
  return {
    bytes: encode(body),
    batchId,
    profile,
    validateRollup: profile.variant === "G" ? true : undefined,
    limits: DEFAULT_JSON_LIMITS,
    scanned,
  };
}

/** A reply without its timings. */
function outcome<T extends { jsonParseMs: number; parseMs: number }>(reply: T) {
  const { jsonParseMs, parseMs, ...rest } = reply;
  expect(jsonParseMs).toBeGreaterThanOrEqual(0);
  expect(parseMs).toBeGreaterThanOrEqual(0);
  return rest;
}

/** Answers that lead to each kind of reply. */
function answers(): { name: string; body: unknown; profile: Profile; batchId: number }[] {
  const spotChain = loadChain("spot-chain").responses;
  const perpChain = loadChain("perpetual-chain").responses;
  const badLeaf = structuredClone(spotChain[1]!) as { update: Record<string, Record<string, unknown>> };
  badLeaf.update.orders![Object.keys(badLeaf.update.orders!)[0]!] = { fulfilled_amount: "-1" };
  const badRoot = structuredClone(perpChain[0]!) as { update: Record<string, unknown> };
  badRoot.update.position_root = "xyz";
  return [
    ...spotChain.map((body, id) => ({ name: `spot batch ${id}`, body, profile: spot, batchId: id })),
    ...perpChain.map((body, id) => ({ name: `perpetual batch ${id}`, body, profile: perp, batchId: id })),
    { name: "a batch not made yet", body: { update: null }, profile: spot, batchId: 9 },
    { name: "a bad leaf", body: badLeaf, profile: spot, batchId: 1 },
    { name: "a bad root", body: badRoot, profile: perp, batchId: 0 },
    { name: "no update key", body: { updates: {} }, profile: spot, batchId: 2 },
    { name: "an update that is an array", body: { update: [] }, profile: spot, batchId: 2 },
    { name: "not JSON", body: '{"update": {"prev_batch_id": ', profile: spot, batchId: 3 },
    { name: "nested too deep", body: "[".repeat(100) + "]".repeat(100), profile: spot, batchId: 4 },
  ];
}

describe("parseBatchAnswer", () => {
  it("gives parseStateUpdate's update, or its refusal as data, for every chain's answer", () => {
    for (const { body, profile, batchId } of answers().filter((a) =>
      /batch \d|bad (leaf|root)/.test(a.name),
    )) {
      const raw = (body as { update: unknown }).update;
      const opts = { validateRollup: profile.variant === "G" ? true : undefined };
      const reply = parseBatchAnswer(request(body, profile, batchId));
      let expected: unknown;
      try {
        expect(reply).toMatchObject({
          kind: "update",
          update: parseStateUpdate(raw, profile, batchId, opts),
        });
        continue;
      } catch {
        // a refused update: compared below
      }
      try {
        parseStateUpdate(raw, profile, batchId, opts);
      } catch (err) {
        expected = err;
      }
      expect(expected).toBeInstanceOf(DacdError);
      const e = expected as DacdError;
      expect(reply).toMatchObject({
        kind: "refused",
        error: { code: e.code, message: e.message, batchId: e.batchId, field: e.field },
      });
    }
  });

  it("names what is wrong with the envelope or the JSON", () => {
    const reasons = Object.fromEntries(
      answers()
        .filter((a) => !/batch \d|bad (leaf|root)/.test(a.name))
        .map((a) => [a.name, outcome(parseBatchAnswer(request(a.body, a.profile, a.batchId)))]),
    );
    expect(reasons).toEqual({
      "a batch not made yet": { kind: "none" },
      "no update key": { kind: "bad-response", reason: 'answer has no "update" key' },
      "an update that is an array": {
        kind: "bad-response",
        reason: '"update" is not an object but an array',
      },
      "not JSON": {
        kind: "bad-response",
        reason: expect.stringMatching(/^answer is not valid JSON \(.+\): \{"update": \{"prev_batch_id":$/),
      },
      "nested too deep": { kind: "bad-response", reason: "answer refused: nested deeper than 64 levels" },
    });
  });
});

describe("BatchParser", () => {
  it("answers in its workers as parseBatchAnswer does on the main thread, several at once", async () => {
    const parser = BatchParser.create(2);
    expect(parser).not.toBeNull();
    try {
      const all = answers();
      const replies = await Promise.all(all.map((a) => parser!.parse(request(a.body, a.profile, a.batchId))));
      for (const [i, a] of all.entries())
        expect(outcome(replies[i]!), a.name).toEqual(
          outcome(parseBatchAnswer(request(a.body, a.profile, a.batchId))),
        );
      // The workers are kept and serve the next answers.
      const again = await parser!.parse(request(all[0]!.body, spot, 0));
      expect(outcome(again)).toEqual(outcome(replies[0]!));
    } finally {
      parser!.close();
    }
  });

  it("takes the body's buffer over, and stops a parse at once when aborted", async () => {
    const parser = BatchParser.create(2)!;
    try {
      const req = request(loadChain("spot-chain").responses[1], spot, 1);
      const reply = parser.parse(req);
      expect(req.bytes.byteLength).toBe(0); // moved to the worker, not copied
      expect((await reply).kind).toBe("update");
      const aborted = new AbortController();
      const huge = request(
        {
          update: {
            prev_batch_id: 0,
            vaults: Object.fromEntries(
              Array.from({ length: 200_000 }, (_, i) => [
                String(i),
                { stark_key: "0x1", token: "0x2", balance: "3" },
              ]),
            ),
          },
        },
        spot,
        1,
      );
      const parsing = parser.parse(huge, aborted.signal);
      aborted.abort(new Error("shutting down"));
      await expect(parsing).rejects.toThrow("shutting down");
      expect((await parser.parse(request({ update: null }, spot, 5))).kind).toBe("none");
      // Closed, it still reads an answer (in a worker it does not keep).
      parser.close();
      expect((await parser.parse(request({ update: null }, spot, 6))).kind).toBe("none");
    } finally {
      parser.close();
    }
  });
});

describe("the member's loader with a BatchParser, over HTTP", () => {
  let server: Server;
  let url: string;
  const bodies = new Map<number, string>();
  beforeAll(async () => {
    const chain = loadChain("spot-chain").responses;
    chain.forEach((r, id) => bodies.set(id, JSON.stringify(r)));
    const bad = structuredClone(chain[1]!) as { update: Record<string, unknown> };
    bad.update.vault_root = "0xnothex";
    bodies.set(50, JSON.stringify(bad));
    bodies.set(51, '{"update": [1]}');
    server = createServer((req, res) => {
      const id = Number(new URL(req.url!, "http://x").searchParams.get("batch_id"));
      res.setHeader("content-type", "application/json");
      res.end(bodies.get(id) ?? '{"update": null}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("loads updates, refusals in the batch's turn, and gateway failures as the main-thread loader does", async () => {
    const gateway = new AvailabilityGateway({ baseUrl: url, retry: { attempts: 1 } });
    const parser = BatchParser.create(2)!;
    try {
      const inWorker = gatewayLoader(gateway, spot, true, parser);
      const onThread = gatewayLoader(gateway, spot, true, null);
      for (const id of [0, 1, 2, 50, 7]) {
        const [a, b] = await Promise.all([inWorker(id), onThread(id)]);
        if (b === null) {
          expect(a, `batch ${id}`).toBeNull();
          continue;
        }
        let expected: unknown;
        try {
          expected = b.update();
        } catch (err) {
          expected = err;
        }
        if (expected instanceof DacdError) {
          expect(() => a!.update()).toThrow(expected.message);
          try {
            a!.update();
          } catch (err) {
            expect(err).toBeInstanceOf(DacdError);
            expect(err).toMatchObject({ code: "BAD_INPUT", batchId: id, field: expected.field });
          }
        } else expect(a!.update(), `batch ${id}`).toEqual(expected);
      }
      const failed = await inWorker(51).catch((e: unknown) => e);
      const failedToo = await onThread(51).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(DacdError);
      expect((failed as DacdError).message).toBe((failedToo as DacdError).message);
      expect((failed as DacdError).message).toContain('"update" is not an object but an array');
    } finally {
      parser.close();
      await gateway.close();
    }
  });
});
