/** `dacd status` on a terminal: the JSON answer (snake_case) as a few aligned lines. */
export function statusSummary(s: Record<string, unknown>, fromDaemon: boolean): string {
  const rows: [string, string][] = [];
  const obj = (v: unknown): Record<string, unknown> | undefined =>
    v && typeof v === "object" ? (v as Record<string, unknown>) : undefined;
  const runtime = obj(s.runtime);
  rows.push(["profile", String(s.profile ?? "none (empty store)")]);
  rows.push([
    "daemon",
    fromDaemon ? `running, ${String(runtime?.phase ?? "?")}` : "not running (store read directly)",
  ]);
  rows.push(["mode", modeLine(s.mode, fromDaemon)]);
  if (s.member_key) rows.push(["member key", String(s.member_key)]);
  const signer = obj(s.signer);
  if (signer) {
    const health = obj(signer.health);
    rows.push([
      "signer",
      signer.custody === "pkcs11"
        ? `PKCS#11 token ${JSON.stringify(signer.token_label)}, key ${JSON.stringify(signer.key_label)}` +
          (health && health.ok === false
            ? ` (failing since ${String(health.since)}: ${String(health.reason)})`
            : "")
        : "key file",
    ]);
  }
  if (s.engine) rows.push(["engine", String(s.engine)]);
  const cursor = obj(s.cursor);
  if (cursor) rows.push(["next batch", String(cursor.next_batch_id)]);
  if (runtime?.feeder_last_batch_id !== undefined)
    rows.push(["feeder's last", String(runtime.feeder_last_batch_id)]);
  rows.push(["newest verified", verifiedLine(obj(s.newest_verified_batch))]);
  const last = obj(s.last_signed_batch);
  rows.push([
    "last accepted",
    last?.accepted_at
      ? `batch ${String(last.batch_id)} (sequence ${String(last.sequence_number)}), accepted ${String(last.accepted_at)}`
      : "none",
  ]);
  const pending = obj(s.pending_batch);
  if (pending)
    rows.push([
      "pending",
      `batch ${String(pending.batch_id)} verified ${String(pending.verified_at)}, not yet accepted`,
    ]);
  const failing = obj(s.failing);
  rows.push([
    "failing",
    failing
      ? `batch ${String(failing.batch_id)}: ${String(failing.code)} ${String(failing.reason)} (since ${String(failing.since)}, ${String(failing.attempts)} attempts)`
      : "no",
  ]);
  const onchain = obj(s.onchain);
  if (onchain)
    rows.push([
      "on-chain",
      (onchain.batch_id === null
        ? "no root update seen yet"
        : `batch ${String(onchain.batch_id)} (${sequenceText(onchain)}, block ${String(onchain.block_number)})`) +
        (onchain.frozen ? `; FROZEN at batch ${String(onchain.frozen_batch_id)}` : ""),
    ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}\n`).join("");
}

/**
 * The contract's sequence number, and the member's beside it when they differ: the contract counts
 * its root updates, the member's claims count from its first batch (docs/base-chain.md).
 */
function sequenceText(onchain: Record<string, unknown>): string {
  const chain = String(onchain.sequence_number);
  const member = onchain.member_sequence_number;
  if (member === undefined || member === null || member === onchain.sequence_number)
    return `sequence ${chain}`;
  return `sequence ${chain} on-chain, ${String(member)} in this member's claim: the contract counts its root updates`;
}

function modeLine(mode: unknown, fromDaemon: boolean): string {
  const what =
    mode === "shadow"
      ? "shadow (verifies and signs, posts nothing)"
      : mode === "active"
        ? "signing"
        : "no run yet";
  return fromDaemon || mode === undefined || mode === null ? what : `${what}, in its last run`;
}

function verifiedLine(b: Record<string, unknown> | undefined): string {
  if (!b) return "none";
  const how = b.shadowed_at
    ? `verified in shadow mode ${String(b.shadowed_at)}`
    : b.accepted_at
      ? `accepted ${String(b.accepted_at)}`
      : b.loaded_from_dump
        ? "loaded from a dump or the reference member's archive"
        : `verified ${String(b.verified_at)}`;
  return `batch ${String(b.batch_id)} (sequence ${String(b.sequence_number)}), ${how}`;
}
