import { setFlagsFromString } from "node:v8";

/**
 * `--initial-old-space-size` (in the shipped unit's NODE_OPTIONS) is meant for the main thread,
 * whose batches promote enough that a smaller old generation is collected in full every few MiB.
 * V8 reads the flag again for each worker thread's heap as it is made, and a worker that parses
 * the gateway's answers would then keep up to that much garbage before its first full collection.
 * Called once at start, after the main thread's heap is made and before any worker: workers then
 * get V8's default. (Setting a V8 flag this late is safe for one that is read only when a heap
 * is configured.)
 */
export function keepInitialOldSpaceToMainThread(): void {
  setFlagsFromString("--initial-old-space-size=0");
}
