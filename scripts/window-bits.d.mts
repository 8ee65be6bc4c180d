// Types for window-bits.mjs (plain JavaScript, since npm runs the build script before any compile).
export declare const MIN_WINDOW_BITS: number;
export declare const MAX_WINDOW_BITS: number;
export declare function chooseWindowBits(
  override: string | undefined,
  cpuinfo: string,
  warn?: (message: string) => void,
): number;
