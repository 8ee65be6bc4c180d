/** Submits one transaction to the devnet's gateway at the first free id. */
export async function submitToDevnet(gateway: string, tx: unknown): Promise<void> {
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
