/** Resolves on the next turn of the event loop: long scans call it between chunks. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
