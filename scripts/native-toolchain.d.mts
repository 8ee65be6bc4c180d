// Types for native-toolchain.mjs (plain JavaScript, since npm runs the install script before any compile).
export declare function findNodeGyp(): string | undefined;
export declare function nodeDirArgs(): string[];
export declare function probeAddon(addon: string): { kernels: string; windowBits: number } | null;
export declare function nativeSources(nativeDir: string): string[];
export declare function sourcesDigest(nativeDir: string): string;
export declare const PREBUILT_WINDOW_BITS: number;
export declare function prebuiltDir(root: string): string;
export declare const PREBUILT_SOURCES: string;
export declare function matchingPrebuilt(root: string): string | null;
export declare function nativeRequired(): boolean;
