/**
 * Shadow mode (config `mode: shadow`, `dacd run --shadow`): every batch is fetched, verified,
 * stored and signed as in active mode, but its signature is never posted to approve_new_roots; the
 * member moves past it once it is verified. A member switched to active later continues at its
 * cursor: batches passed in shadow mode are never posted (the member beside it already signed
 * them, and the operator has moved on). A batch passed in shadow mode is marked and the cursor moved
 * past it in one fsynced write (the "shadowed" move of storage/cursor.ts), so that a member
 * restarted in active mode never finds it waiting to be posted.
 */

export type MemberMode = "active" | "shadow";

/** Whether a verified batch's signature goes to the gateway: the one place shadow mode decides it. */
export function postsClaims(mode: MemberMode | undefined): boolean {
  return mode !== "shadow";
}
