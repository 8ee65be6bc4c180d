import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The template unit's comments name its own paths (issue 65, item 9): an instance's credentials are
 * under /run/credentials/dacd@NAME.service, not the main unit's directory.
 */
const template = readFileSync(join(import.meta.dirname, "..", "..", "systemd", "dacd@.service"), "utf8");

describe("systemd/dacd@.service", () => {
  it("names the instance's credentials directory, not dacd.service's", () => {
    expect(template).not.toContain("/run/credentials/dacd.service");
    expect(template).toContain("/run/credentials/dacd@NAME.service/dacd-key-password");
  });
});
