import { LevelStore } from "../../src/storage/level-store.js";
import { Prefix } from "../../src/storage/keys.js";
import { levelDb } from "../../src/storage/level-db.js";

/**
 * The state of a store as comparable text: every node and leaf record (keyed by gen, kind and
 * hash), and every batch record without its wall-clock fields. Two members that verified the same batches must be equal here.
 */
export async function comparableState(dir: string): Promise<string[]> {
  const store = await LevelStore.open(dir);
  const out: string[] = [];
  try {
    for await (const [k, v] of levelDb(store).iterator()) {
      const key = Buffer.from(k).toString("hex");
      if (k[0] === Prefix.batch) {
        const {
          verified_at: _v,
          accepted_at: _a,
          ...rest
        } = JSON.parse(Buffer.from(v).toString("utf8")) as Record<string, unknown>;
        out.push(`${key}=${JSON.stringify(rest)}`);
      } else if (k[0] === Prefix.tree) {
        out.push(`${key}=${Buffer.from(v).toString("hex")}`);
      }
    }
  } finally {
    await store.close();
  }
  return out;
}
