/**
 * Keyed tables with all-or-nothing transaction drafts and a per-batch undo journal: a transaction
 * writes into a Draft, which is committed only when the whole transaction applied; a batch's Journal
 * remembers the previous values so a rejected batch can be rolled back.
 */

export class Table<V> {
  readonly rows = new Map<bigint, V>();
  constructor(readonly name: string) {}
}

type AnyTable = Table<unknown>;

/** Records, per table, the value each touched row had when the batch began (undefined = absent). */
export class Journal {
  readonly old = new Map<AnyTable, Map<bigint, unknown>>();

  note(table: AnyTable, id: bigint): void {
    let m = this.old.get(table);
    if (!m) this.old.set(table, (m = new Map()));
    if (!m.has(id)) m.set(id, table.rows.get(id));
  }

  /** Ids touched in `table` during the batch. */
  touched<V>(table: Table<V>): bigint[] {
    return [...(this.old.get(table as AnyTable)?.keys() ?? [])];
  }

  /** Restores every touched row to its value from before the batch. */
  undo(): void {
    for (const [table, rows] of this.old) {
      for (const [id, v] of rows) {
        if (v === undefined) table.rows.delete(id);
        else table.rows.set(id, v);
      }
    }
  }
}

/** Uncommitted writes of one transaction over several tables. */
export class Draft {
  private readonly writes = new Map<AnyTable, Map<bigint, unknown>>();

  get<V>(table: Table<V>, id: bigint): V | undefined {
    const w = this.writes.get(table as AnyTable);
    if (w?.has(id)) return w.get(id) as V | undefined;
    return table.rows.get(id);
  }

  set<V>(table: Table<V>, id: bigint, value: V): void {
    let w = this.writes.get(table as AnyTable);
    if (!w) this.writes.set(table as AnyTable, (w = new Map()));
    w.set(id, value);
  }

  /** Every (table, id, value) written so far, for range checks before commit. */
  *written(): Generator<[AnyTable, bigint, unknown]> {
    for (const [t, rows] of this.writes) for (const [id, v] of rows) yield [t, id, v];
  }

  commit(journal: Journal): void {
    for (const [t, rows] of this.writes) {
      for (const [id, v] of rows) {
        journal.note(t, id);
        t.rows.set(id, v);
      }
    }
    this.writes.clear();
  }
}

/** A transaction that cannot be applied to the current state (it is recorded as replaced). */
export class ApplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ApplyError";
  }
}
