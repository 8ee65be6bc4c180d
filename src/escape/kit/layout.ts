/**
 * Where a leaf's proof sits in an escape kit, so that a client (the page, curl) computes its URL
 * from the id alone: `<tree>/<shard>/<id>.json`, the shard being the id's last three decimal
 * digits (zero-padded). The last digits rather than the first, because ids are handed out in
 * sequence by some exchanges and at random by others: the low digits spread both evenly over the
 * 1,000 shards, about a thousand files each for a million leaves.
 */

export const KIT_FORMAT = "dacd-escape-kit/1";
export const SHARD_DIGITS = 3;

export const LAYOUT_RULE =
  "{tree}/{shard}/{id}.json, id in decimal without leading zeros, shard = the last 3 digits of the id, zero-padded to 3 (id 7 → 007, 1234567 → 567)";

export function shardOf(id: bigint | string): string {
  return id.toString().padStart(SHARD_DIGITS, "0").slice(-SHARD_DIGITS);
}

export function kitPath(tree: string, id: bigint | string): string {
  return `${tree}/${shardOf(id)}/${id.toString()}.json`;
}
