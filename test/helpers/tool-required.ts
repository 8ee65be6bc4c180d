/**
 * The tests that need a tool outside npm (SoftHSM2 and OpenSC, Chromium, nginx, promtool,
 * openssl, mounting a tmpfs as root) run where it is there and are skipped where it is not. Under
 * DACD_REQUIRE_TOOLS=1 (CI sets it, and installs the tools) a missing one is an error instead: the
 * test file fails rather than passing with that part untested.
 */
export const toolsRequired = process.env.DACD_REQUIRE_TOOLS === "1";

/**
 * `available`, for a test's skipIf(!…); throws, failing the test file, when `what` (named in the
 * error, with how to get it) is not available and DACD_REQUIRE_TOOLS=1.
 */
export function toolAvailable(what: string, available: boolean): boolean {
  if (!available && toolsRequired)
    throw new Error(`${what} is not available, and DACD_REQUIRE_TOOLS=1 requires it`);
  return available;
}
