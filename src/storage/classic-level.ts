// The one module that imports classic-level: level-binding.ts loads the binding first, so that
// classic-level gets dacd's build of it where there is one (see there). Imports run in order, so
// level-binding's import stays above classic-level's.
import { noteDatabaseCreated } from "./level-binding.js";
import { ClassicLevel as StockClassicLevel } from "classic-level";

/** classic-level's database, noted as made so that setMappedTables can refuse to come too late. */
export class ClassicLevel<K = string, V = string> extends StockClassicLevel<K, V> {
  constructor(...args: ConstructorParameters<typeof StockClassicLevel<K, V>>) {
    super(...args);
    noteDatabaseCreated();
  }
}
