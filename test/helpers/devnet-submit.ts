/**
 * Submits one transaction to the devnet's gateway: variant P at the first free id, variant G (its
 * gateway names no free id) at `txId`, which the caller counts.
 */
export async function submitToDevnet(gateway: string, tx: unknown, g?: { txId: number }): Promise<void> {
  if (g) {
    const res = await fetch(`${gateway}/gateway/v2/add_transaction`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ tx_id: g.txId, tx }),
    });
    if (res.status !== 200) throw new Error(`add_transaction: ${res.status} ${await res.text()}`);
    return;
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const txId = Number(await (await fetch(`${gateway}/get_first_unused_tx_id`)).text());
    const res = await fetch(`${gateway}/add_transaction`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ tx_id: txId, tx }),
    });
    const body = await res.text();
    if (res.status === 200) return;
    if (res.status !== 409) throw new Error(`add_transaction: ${res.status} ${body}`);
  }
  throw new Error("add_transaction: no free tx id");
}
