import { describe, expect, it } from "vitest";
import { reloadMessage } from "../../src/cli/run.js";

describe("the SIGHUP log line", () => {
  it("agrees in number with the keys that wait for a restart", () => {
    expect(reloadMessage([])).toBe("configuration re-read");
    expect(reloadMessage(["polling_interval_s"])).toBe(
      "configuration re-read; polling_interval_s takes effect after a restart",
    );
    expect(reloadMessage(["polling_interval_s", "max_ready_lag"])).toBe(
      "configuration re-read; polling_interval_s, max_ready_lag take effect after a restart",
    );
  });
});
