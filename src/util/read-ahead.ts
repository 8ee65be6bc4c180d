/**
 * Iterates `source` one item ahead: the next item is asked for as soon as the current one is
 * handed out, so that a source whose reads wait on I/O (a store's walk, LevelDB's thread pool)
 * reads while the consumer works on the item before. At most one item more is held.
 */
export async function* readAhead<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  let next: Promise<IteratorResult<T>> | undefined = it.next();
  try {
    for (;;) {
      const r: IteratorResult<T> = await next;
      next = undefined;
      if (r.done) return;
      next = it.next();
      // A consumer that stops before the source fails must not leave the failure unhandled.
      next.catch(() => undefined);
      yield r.value;
    }
  } finally {
    if (next) {
      // The source is ended only after the read in flight: an async generator runs one step at a time.
      await next.catch(() => undefined);
      await it.return?.();
    }
  }
}
