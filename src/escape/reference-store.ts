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

/**
 * The mark of a store imported without the order tree (the reference member's own archive holds
 * only vaults.csv; meta record `orders_missing`): the member runs it with validate_orders false,
 * whatever the configuration says, and warns at every start unless accept_missing_orders is set.
 * A later load of an archive with its order files builds a fresh store, without the mark.
 */
export interface OrdersMissing {
  readonly batch_id: number;
  readonly at: string;
}

export async function getOrdersMissing(store: LevelStore): Promise<OrdersMissing | undefined> {
  return store.meta.get<OrdersMissing>(Meta.ordersMissing);
}

/** The start-up warning for a store without its order tree, or undefined (none, or accepted). */
export async function ordersMissingWarning(
  store: LevelStore,
  acceptMissingOrders: boolean,
): Promise<string | undefined> {
  const missing = await getOrdersMissing(store);
  if (!missing || acceptMissingOrders) return undefined;
  return ordersMissingText(missing.batch_id);
}

/** What a store loaded at `batchId` without order files means, and the two ways to clear it. */
export function ordersMissingText(batchId: number): string {
  return (
    `orders are not validated (validate_orders false for this store): it was loaded at batch ${batchId} from a reference archive without order files; ` +
    "load an archive with them (dacd load --from-reference FILE --force) or set accept_missing_orders: true"
  );
}

export async function getImportedFrom(store: LevelStore): Promise<ImportedFrom | undefined> {
  return store.meta.get<ImportedFrom>(Meta.importedFrom);
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
