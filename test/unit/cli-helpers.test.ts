import { describe, expect, it } from "vitest";
import { configPathOf, DEFAULT_CONFIG_PATH } from "../../src/cli/config-path.js";
import { redactUrl } from "../../src/cli/config-command.js";
import { EXIT, exitCodeFor } from "../../src/cli/exit-codes.js";
import { idRanges, idSummary, snakeKeys } from "../../src/cli/output.js";
import { environmentProblems } from "../../src/config/env-check.js";
import { shortCommit, versionLine } from "../../src/build-info.js";
import { parseBatchId } from "../../src/cli/store-options.js";
import { isDacdError } from "../../src/errors.js";

describe("command-line helpers", () => {
  it("batch id lists become ranges", () => {
    expect(idRanges([])).toBe("");
    expect(idRanges([5])).toBe("5");
    expect(idRanges([7, 0, 1, 2, 5, 8, 2])).toBe("0-2,5,7-8");
    const million = Array.from({ length: 1_000_000 }, (_, i) => i);
    expect(idSummary(million)).toEqual({ count: 1_000_000, ranges: "0-999999" });
  });

  it("a batch id on the command line: a non-negative decimal integer, else a usage error", () => {
    expect(parseBatchId("0")).toBe(0);
    expect(parseBatchId("1234")).toBe(1234);
    for (const bad of ["", "-1", "01", "1.5", "0x10", " 7", "1e3"]) {
      let caught: unknown;
      try {
        parseBatchId(bad);
      } catch (err) {
        caught = err;
      }
      expect(isDacdError(caught, "USAGE"), bad).toBe(true);
    }
  });

  it("JSON keys are snake_case at every depth, values untouched", () => {
    expect(
      snakeKeys({
        nextBatchId: 3,
        runtime: { lastSigned: { batch_id: 2, roots: { vault: "0xAbC" } } },
        list: [{ gatewayReachable: true }],
      }),
    ).toEqual({
      next_batch_id: 3,
      runtime: { last_signed: { batch_id: 2, roots: { vault: "0xAbC" } } },
      list: [{ gateway_reachable: true }],
    });
  });

  it("the configuration file: --config, else DACD_CONFIG, else /etc/dacd/dacd.yaml", () => {
    expect(DEFAULT_CONFIG_PATH).toBe("/etc/dacd/dacd.yaml");
    expect(configPathOf("a.yaml", { DACD_CONFIG: "b.yaml" })).toBe("a.yaml");
    expect(configPathOf(undefined, { DACD_CONFIG: "b.yaml" })).toBe("b.yaml");
    expect(configPathOf(undefined, {})).toBe("/etc/dacd/dacd.yaml");
  });

  it("DACD_* variables: unknown names and bad switch values are problems; config keys are left to loadConfig", () => {
    expect(
      environmentProblems({ DACD_TREE_WALK: "js", DACD_HASH_ENGINE: "wasm", DACD_POLLING_INTERVAL_S: "x" }),
    ).toEqual([]);
    expect(environmentProblems({ DACD_TREE_WALK: "" })).toEqual([]);
    expect(environmentProblems({ DACD_NODE_CACHE: "js" })).toEqual([]);
    expect(environmentProblems({ DACD_NODE_CACHE: "c" })).toEqual([
      'environment variable DACD_NODE_CACHE="c" must be one of auto, js',
    ]);
    expect(environmentProblems({ DACD_SYSTEMD_NOTIFY: "exec" })).toEqual([]);
    expect(environmentProblems({ DACD_SYSTEMD_NOTIFY: "spawn" })).toEqual([
      'environment variable DACD_SYSTEMD_NOTIFY="spawn" must be one of auto, exec',
    ]);
    expect(environmentProblems({ DACD_LEVEL_BINDING: "stock" })).toEqual([]);
    expect(environmentProblems({ DACD_LEVEL_BINDING: "patched" })).toEqual([
      'environment variable DACD_LEVEL_BINDING="patched" must be one of auto, stock',
    ]);
    const problems = environmentProblems({
      DACD_TREE_WALK: "fast",
      DACD_HASH_ENGINE: "gpu",
      DACD_PEDERSEN_WINDOW_BITS: "20",
      DACD_NATIVE_ADDON: "/no/such/addon.node",
      DACD_HASH_KERNEL: "AVX 512",
      DACD_TYPO: "1",
      PATH: "/bin",
    });
    expect(problems).toHaveLength(6);
    expect(problems.join("\n")).toMatch(/DACD_TREE_WALK="fast" must be one of auto, native, js/);
    expect(problems.join("\n")).toMatch(/DACD_TYPO is not a dacd setting/);
  });

  it("URL credentials are redacted; other values are printed as they are", () => {
    expect(redactUrl("https://u:p@gw.example.com:8443/x")).toBe("https://redacted@gw.example.com:8443/x");
    expect(redactUrl("http://127.0.0.1:9")).toBe("http://127.0.0.1:9");
    expect(redactUrl("/var/lib/dacd")).toBe("/var/lib/dacd");
  });

  it("exit codes: usage 64, configuration 78, anything else that stops a command 2", () => {
    expect(exitCodeFor("USAGE")).toBe(EXIT.USAGE);
    expect(EXIT.USAGE).toBe(64);
    expect(exitCodeFor("CONFIG")).toBe(78);
    expect(exitCodeFor("STORE")).toBe(2);
    expect(exitCodeFor("GATEWAY")).toBe(2);
    expect(EXIT.INVALID).toBe(1);
  });

  it("the version line", () => {
    expect(versionLine({ version: "1.2.3", commit: "a".repeat(40), node: "v20.20.0" })).toBe(
      "dacd 1.2.3 (commit aaaaaaaaaaaa, node v20.20.0)",
    );
    expect(shortCommit("unknown")).toBe("unknown");
  });
});
