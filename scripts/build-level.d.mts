// Types for build-level.mjs (plain JavaScript, since npm runs the install script before any compile).
export declare function patchFiles(dir?: string): string[];
export declare function applyPatches(packageDir: string, patches?: string[]): Map<string, string>;
export interface LevelSources {
  digest: string;
  files: Map<string, string>;
  levelDir: string;
  version: string;
}
export declare function levelSources(): LevelSources;
export declare const PREBUILT_LEVEL_DIR: string;
