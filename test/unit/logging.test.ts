import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, journalStdout, redactDeep, withSyslogPrefix } from "../../src/logging.js";

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

describe("log levels and journald priorities", () => {
  const capture = (opts: Parameters<typeof createLogger>[0] = {}) => {
    let out = "";
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    return { log: createLogger({ ...opts, destination: sink }), out: () => out };
  };

  it("names levels instead of pino's numbers", () => {
    const { log, out } = capture({ level: "debug" });
    log.debug("d");
    log.error("e");
    const lines = out()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { level: unknown; msg: string });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ["debug", "d"],
      ["error", "e"],
    ]);
  });

  it("prefixes each line with its syslog priority when writing to the journal", () => {
    const { log, out } = capture({ level: "trace", syslogPrefix: true });
    log.fatal("f");
    log.error("e");
    log.warn("w");
    log.info("i");
    log.debug("d");
    log.trace("t");
    const lines = out().trim().split("\n");
    expect(lines.map((l) => l.slice(0, 3))).toEqual(["<2>", "<3>", "<4>", "<6>", "<7>", "<7>"]);
    for (const l of lines) expect(() => JSON.parse(l.slice(3))).not.toThrow();
    expect(withSyslogPrefix('{"level":"error","msg":"x"}\n')).toBe('<3>{"level":"error","msg":"x"}\n');
  });

  it("detects the journal only when JOURNAL_STREAM names this very stdout", async () => {
    const { openSync, closeSync, fstatSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const fd = openSync(join(tmpdir(), `dacd-journal-${process.pid}`), "w");
    try {
      const st = fstatSync(fd);
      expect(journalStdout(`${st.dev}:${st.ino}`, fd)).toBe(true);
      expect(journalStdout(`${st.dev}:${st.ino + 1}`, fd)).toBe(false);
      expect(journalStdout(undefined, fd)).toBe(false);
      expect(journalStdout("garbage", fd)).toBe(false);
    } finally {
      closeSync(fd);
    }
  });
});
