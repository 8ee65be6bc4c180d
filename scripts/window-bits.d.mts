// Types for window-bits.mjs (plain JavaScript, since npm runs the build script before any compile).
export declare function chooseWindowBits(
  override: string | undefined,
  cpuinfo: string,
  warn?: (message: string) => void,
): number;
