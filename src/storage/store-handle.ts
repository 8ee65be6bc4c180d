import type { Db } from "./level-db.js";

type Snapshot = ReturnType<Db["snapshot"]>;

/** The options every read passes: on a snapshot view, the snapshot, and no block-cache filling. */
export interface ReadOptions {
  readonly snapshot?: Snapshot;
  readonly fillCache?: boolean;
}

/**
 * The one LevelDB handle a store's repositories share (LevelStore composes them over it), with
 * the store's directory and the read options of the view it serves: the store itself, or a
 * snapshot view of it, which refuses writes.
 */
export class StoreHandle {
  constructor(
    readonly db: Db,
    readonly dir: string,
    readonly reads: ReadOptions = {},
  ) {}

  get isSnapshot(): boolean {
    return this.reads.snapshot !== undefined;
  }

  /** Throws on a snapshot view: nothing is written through one. */
  writable(): void {
    if (this.reads.snapshot) throw new Error("a snapshot view of the store is read-only");
  }

  /** A record stored as JSON, or undefined when the key holds none. */
  async getJson<T>(key: Uint8Array): Promise<T | undefined> {
    const v = await this.db.get(key, this.reads);
    return v === undefined ? undefined : parseJson<T>(v);
  }
}

export const jsonBytes = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
export const parseJson = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;
