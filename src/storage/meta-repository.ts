import { DacdError } from "../errors.js";
import type { StoreIdentity } from "./batch-record.js";
import { Meta, metaKey, type MetaName } from "./keys.js";
import { NODE_FORMAT } from "./records/node-record.js";
import { jsonBytes, type StoreHandle } from "./store-handle.js";

/** A put of a LevelDB batch given as an array of operations. */
export interface Put {
  readonly type: "put";
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

/** The writes that bind a new store to its identity and this node format. */
export function identityPuts(identity: StoreIdentity): Put[] {
  return [
    { type: "put", key: metaKey(Meta.identity), value: jsonBytes(identity) },
    { type: "put", key: metaKey(Meta.format), value: jsonBytes(NODE_FORMAT) },
  ];
}

/**
 * The store's metadata (0x04‖name, JSON): its identity and node format, the chain it signs for,
 * the advisory notes `dacd status` shows, and the records other parts name (Meta in keys.ts).
 * Reached as `store.meta`; the cursor and prune marker are the batches' (`store.batches`), the
 * base-chain watch's records `store.onchain`'s.
 */
export class MetaRepository {
  constructor(private readonly handle: StoreHandle) {}

  /** A meta record (0x04‖name, JSON). */
  get<T>(name: MetaName): Promise<T | undefined> {
    return this.handle.getJson<T>(metaKey(name));
  }

  identity(): Promise<StoreIdentity | undefined> {
    return this.get<StoreIdentity>(Meta.identity);
  }

  /**
   * Binds the store to one profile and heights on first use and refuses any other afterwards:
   * roots from one layout must never be read as another's.
   */
  async ensureIdentity(identity: StoreIdentity): Promise<void> {
    this.handle.writable();
    const have = await this.identity();
    if (!have) {
      await this.handle.db.batch(identityPuts(identity), { sync: true });
      return;
    }
    if (JSON.stringify(have) !== JSON.stringify(identity)) {
      throw new DacdError(
        "CONFIG",
        `the store ${this.handle.dir} was created for ${JSON.stringify(have)}, not ${JSON.stringify(identity)}`,
      );
    }
  }

  /** Refuses a store whose tree nodes are laid out in another format (every command opens here). */
  async checkFormat(): Promise<void> {
    if (!(await this.identity())) return; // empty: ensureIdentity or a load will record the format
    const format = (await this.get<number>(Meta.format)) ?? 1;
    if (format !== NODE_FORMAT) {
      throw new DacdError(
        "CONFIG",
        `the store ${this.handle.dir} holds tree nodes in format ${format}, this dacd reads format ${NODE_FORMAT}: ` +
          "export its leaves with the dacd that wrote it (dacd dump) and load them here (dacd load --from)",
      );
    }
  }

  /** The base chain's kind this member signs for, pinned at its first start (chain-pin.ts). */
  pinnedChain(): Promise<string | undefined> {
    return this.get<string>(Meta.chain);
  }

  async pinChain(kind: string): Promise<void> {
    this.handle.writable();
    await this.handle.db.put(metaKey(Meta.chain), jsonBytes(kind), { sync: true });
  }

  note<T>(name: typeof Meta.failing): Promise<T | undefined> {
    return this.get<T>(name);
  }

  /**
   * Advisory state the operator reads with `dacd status` (e.g. the failing batch); not fsynced, and
   * never consulted for a signing decision.
   */
  async setNote(name: typeof Meta.failing, value: unknown): Promise<void> {
    this.handle.writable();
    if (value === undefined) await this.handle.db.del(metaKey(name));
    else await this.handle.db.put(metaKey(name), jsonBytes(value));
  }
}
