import { DacdError } from "../errors.js";
import { Meta } from "../storage/keys.js";
import type { LevelStore } from "../storage/level-store.js";

/**
 * The mark a store imported from the reference member's state archive carries (meta record
 * `imported_from`), and what it means for running it: the archive has no rollup vault leaves, so
 * such a store cannot check the rollup vault tree.
 */
export interface ImportedFrom {
  readonly format: "reference-state-archive";
  readonly batch_id: number;
  readonly at: string;
}

export async function getImportedFrom(store: LevelStore): Promise<ImportedFrom | undefined> {
  return store.getMeta<ImportedFrom>(Meta.importedFrom);
}

/** Refuses, in one line, to run an imported store with validate_rollup true. */
export async function checkImportedStore(
  store: LevelStore,
  validateRollup: boolean | undefined,
): Promise<void> {
  if (validateRollup !== true) return;
  const imported = await getImportedFrom(store);
  if (!imported) return;
  throw new DacdError(
    "CONFIG",
    `the store ${store.dir} was imported from the reference member's state archive (batch ${imported.batch_id}), ` +
      "which holds no rollup vault leaves: run it with validate_rollup false or absent",
  );
}
