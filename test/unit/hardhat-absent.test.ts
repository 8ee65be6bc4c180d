import { describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { requireHardhat } from "../../src/devnet/exchange/eth-node.js";

/**
 * `dacd demo --chain` and `devnet --chain` in an installed package, where Hardhat (a development
 * dependency) is absent (issue 65, item 9): one clear line, before anything is started or written.
 */
describe("--chain without Hardhat", () => {
  it("is refused in one line naming what to do", () => {
    let caught: unknown;
    try {
      requireHardhat(() => {
        throw Object.assign(new Error("Cannot find module 'hardhat/package.json'"), {
          code: "MODULE_NOT_FOUND",
        });
      });
    } catch (err) {
      caught = err;
    }
    expect(isDacdError(caught, "CONFIG")).toBe(true);
    const message = (caught as Error).message;
    expect(message).not.toContain("\n");
    expect(message).toMatch(/--chain needs Hardhat.*npm ci.*npm install hardhat@2/);
  });

  it("passes where Hardhat is installed (this checkout)", () => {
    expect(() => requireHardhat()).not.toThrow();
  });
});
