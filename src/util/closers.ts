/**
 * A stack of clean-ups, run last in, first out: each step of a start-up that acquires something
 * pushes how to let it go, and a failed start-up or a stop runs the stack once. Every clean-up
 * runs even when one before it fails; the first failure is thrown once all have run.
 */
export class Closers {
  private readonly stack: (() => unknown)[] = [];
  private closing: Promise<void> | undefined;

  /** Pushes a clean-up (sync or async). */
  defer(close: () => unknown): void {
    this.stack.push(close);
  }

  /** Runs the clean-ups, newest first; later calls share the first one's promise. */
  close(): Promise<void> {
    return (this.closing ??= this.unwind());
  }

  private async unwind(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (let close = this.stack.pop(); close; close = this.stack.pop()) {
      try {
        await close();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
