/**
 * How commands print: JSON with snake_case keys everywhere (some internal shapes use camelCase), or
 * a human summary on a terminal. `--json` forces JSON, `--no-json` the summary; without either,
 * a terminal gets the summary and a pipe or file gets JSON.
 */

/** Keys turned to snake_case at every depth ("nextBatchId" → "next_batch_id"); values untouched. */
export function snakeKeys(value: unknown, depth = 0): unknown {
  if (depth > 32 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => snakeKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[snakeCase(k)] = snakeKeys(v, depth + 1);
  return out;
}

export const snakeCase = (k: string): string => k.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(snakeKeys(value), null, 2) + "\n");
}

/** JSON unless a terminal asked for nothing in particular. */
export function wantsJson(json: boolean | undefined): boolean {
  return json ?? !process.stdout.isTTY;
}

/**
 * Batch ids as ranges, in the syntax `--checkpoint` and `--batch` accept where ids are single:
 * [0, 1, 2, 5, 7, 8] → "0-2,5,7-8". A list of a million pruned batches is a few characters.
 */
export function idRanges(ids: readonly number[]): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/** A list of batch ids in JSON output: its count and its ranges. */
export function idSummary(ids: readonly number[]): { count: number; ranges: string } {
  return { count: new Set(ids).size, ranges: idRanges(ids) };
}
