/**
 * The tests that need dacd's native code (the addon, dacd's build of LevelDB's binding) run where
 * it is built and are skipped where it is not, as dacd then falls back. Under
 * DACD_REQUIRE_NATIVE=1 (CI sets it) a missing one is an error instead: the test file fails rather
 * than passing with the native code untested.
 */
export const nativeRequired = process.env.DACD_REQUIRE_NATIVE === "1";

/**
 * `available`, for a test's skipIf(!…); throws, failing the test file, when `what` (named in the
 * error) is not available and DACD_REQUIRE_NATIVE=1.
 */
export function nativeAvailable(what: string, available: boolean): boolean {
  if (!available && nativeRequired)
    throw new Error(
      `${what} is not available, and DACD_REQUIRE_NATIVE=1 requires it (npm run install builds it)`,
    );
  return available;
}
