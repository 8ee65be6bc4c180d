import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactDeep } from "../../src/logging.js";

describe("logging", () => {
  it("redacts secret-looking fields at every depth", () => {
    expect(
      redactDeep({
        private_key: "k",
        a: { b: [{ password: "p", member_key: "m" }], bearer_token: "t" },
        privateKey: "x",
      }),
    ).toEqual({
      private_key: "[redacted]",
      a: { b: [{ password: "[redacted]", member_key: "m" }], bearer_token: "[redacted]" },
      privateKey: "[redacted]",
    });
  });

  it("writes JSON lines without the secrets", () => {
    let out = "";
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const log = createLogger({ destination: sink });
    log.info(
      { batch_id: 3, config: { tls: { client_key: "SECRET-A" } }, private_key: "SECRET-B" },
      "batch signed",
    );
    const line = JSON.parse(out.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ batch_id: 3, msg: "batch signed", private_key: "[redacted]" });
    expect(out).not.toMatch(/SECRET/);
  });
});
