import { ClassicLevel } from "./classic-level.js";
import { yieldToEventLoop } from "../util/yield.js";
import type { LevelStore } from "./level-store.js";
import { levelDb } from "./level-db.js";

export interface CopyOptions {
  signal?: AbortSignal;
  /** Entries per write batch (default 2000). */
  chunkEntries?: number;
}

/**
 * Copies every record of `store` into a new LevelDB in `dir` (which must not exist), while the
 * store stays in use: a LevelDB iterator reads from the snapshot taken when it was created, so the
 * copy holds exactly one committed state (every batch write is atomic, so never half a batch).
 * Entries go in batches, yielding to the event loop between them; the last write is fsynced, and
 * the copy is closed before this returns. On an error the copy is closed and left to the caller.
 */
export async function copyStore(
  store: LevelStore,
  dir: string,
  opts: CopyOptions = {},
): Promise<{ entries: number; bytes: number }> {
  const target = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    createIfMissing: true,
    errorIfExists: true,
  });
  let entries = 0;
  let bytes = 0;
  try {
    await target.open();
    const it = levelDb(store).iterator();
    try {
      for (;;) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        const chunk = await it.nextv(opts.chunkEntries ?? 2000);
        if (chunk.length === 0) break;
        const batch = target.batch();
        for (const [key, value] of chunk) {
          batch.put(key, value);
          bytes += key.byteLength + value.byteLength;
        }
        entries += chunk.length;
        await batch.write();
        await yieldToEventLoop();
      }
    } finally {
      await it.close();
    }
    // A synced write flushes the log with everything before it.
    await target.put(Uint8Array.of(0xff), Uint8Array.of(), { sync: true });
    await target.del(Uint8Array.of(0xff), { sync: true });
  } finally {
    await target.close().catch(() => undefined);
  }
  return { entries, bytes };
}
