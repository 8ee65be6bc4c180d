import type { LevelStore } from "./level-store.js";

/**
 * Runs `fn` on a snapshot view of the store (LevelStore.snapshot): one consistent state, whatever
 * the daemon writes meanwhile; the snapshot is released afterwards, also on an error.
 */
export async function withSnapshot<T>(store: LevelStore, fn: (view: LevelStore) => Promise<T>): Promise<T> {
  const view = store.snapshot();
  try {
    return await fn(view);
  } finally {
    await view.close();
  }
}
