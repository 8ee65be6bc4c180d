import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { crossCheckSequence } from "../../src/cli/reference-commands.js";
import { parseBatchId } from "../../src/cli/store-options.js";
import { isDacdError } from "../../src/errors.js";
import { parseBatchInfo, type StatedBatch } from "../../src/escape/reference-format.js";
import { FeederGateway } from "../../src/poller/gateway/gateway-client.js";
import { freePort } from "../helpers/free-port.js";

/**
 * A lying sequence number at reference import (issue 65, item 5): a file's is checked with the
 * feeder gateway's when it answers, and numbers and ids the member could not go on from are refused.
 */

const ROOT = "0".repeat(63) + "1";
const info = (seq: unknown): string =>
  JSON.stringify({ merkle_roots: { vault: ROOT, order: ROOT }, sequence_number: seq });

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** A feeder gateway on loopback whose get_batch_info states `seq` for every batch. */
async function feederStating(seq: number): Promise<{ feeder: FeederGateway; asked: string[] }> {
  const asked: string[] = [];
  server = createServer((req, res) => {
    asked.push(req.url ?? "");
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ sequence_number: seq, merkle_roots: { vault: ROOT, order: ROOT } }));
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { feeder: gateway(port), asked };
}

const gateway = (port: number): FeederGateway =>
  new FeederGateway({
    baseUrl: `http://127.0.0.1:${port}`,
    timeoutMs: 2000,
    deadlineMs: 3000,
    maxBodyBytes: 1 << 20,
    retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 50 },
    variant: "G",
  });

const stated = (seq: number): StatedBatch => parseBatchInfo(info(seq), "batch-6.json", 6);

describe("reference import: the sequence number", () => {
  it("refuses a --batch-info sequence number the feeder gateway contradicts, naming the file and the field", async () => {
    const { feeder, asked } = await feederStating(6);
    try {
      const err = await crossCheckSequence(stated(1000), feeder, () => undefined).catch((e: unknown) => e);
      expect(isDacdError(err, "BAD_INPUT")).toBe(true);
      expect((err as Error).message).toMatch(
        /batch 6: batch-6\.json, field sequence_number: 1000, but the feeder gateway's get_batch_info states 6/,
      );
      expect(asked[0]).toMatch(/get_batch_info\?batch_id=6/);
    } finally {
      await feeder.close();
    }
  });

  it("takes a sequence number the feeder agrees with", async () => {
    const { feeder } = await feederStating(6);
    try {
      await expect(crossCheckSequence(stated(6), feeder, () => undefined)).resolves.toBeUndefined();
    } finally {
      await feeder.close();
    }
  });

  it("warns, and takes the file's, when the feeder cannot be reached", async () => {
    const feeder = gateway(await freePort());
    const warnings: string[] = [];
    try {
      await crossCheckSequence(stated(6), feeder, (m) => warnings.push(m));
    } finally {
      await feeder.close();
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/batch 6: the sequence number of batch-6\.json could not be checked/);
  });

  it("refuses a feeder's sequence number the member could not go on from", async () => {
    const { feeder } = await feederStating(2 ** 53 - 1);
    try {
      await expect(crossCheckSequence(stated(6), feeder, () => undefined)).rejects.toThrow(
        /sequence_number: 9007199254740991 is out of range/,
      );
    } finally {
      await feeder.close();
    }
  });

  it("refuses 2^53 − 1 in a --batch-info file (the next batch's number would not be exact)", () => {
    expect(() => parseBatchInfo(info(2 ** 53 - 1), "batch-6.json", 6)).toThrow(
      /batch-6\.json, field sequence_number: 9007199254740991 is not an integer in 0 … 9007199254740990/,
    );
    expect(parseBatchInfo(info(2 ** 53 - 2), "batch-6.json", 6).batch_info.sequence_number).toBe(2 ** 53 - 2);
  });

  it("refuses a --batch id outside the range, and a negative one", () => {
    expect(() => parseBatchId("9007199254740991")).toThrow(/out of range/);
    expect(() => parseBatchId("100000000000000000000")).toThrow(/out of range/);
    expect(() => parseBatchId("-1")).toThrow(/not a non-negative integer/);
    expect(parseBatchId("9007199254740990")).toBe(2 ** 53 - 2);
  });
});
