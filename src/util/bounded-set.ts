/**
 * A set of strings bounded by count and by age: the oldest entry goes when a new one would pass
 * `maxEntries`, and entries older than `maxAgeMs` are forgotten. For what a long-running process
 * remembers about input it does not control (a hostile peer must not grow it without end).
 */
export class BoundedSet {
  // Insertion order is age order: a Map iterates its keys in the order they were first set.
  private readonly added = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    this.expire();
    return this.added.size;
  }

  add(key: string): void {
    this.expire();
    this.added.delete(key);
    this.added.set(key, this.now());
    for (const oldest of this.added.keys()) {
      if (this.added.size <= this.maxEntries) break;
      this.added.delete(oldest);
    }
  }

  /** Removes `key`; true when it was there (and not expired). */
  delete(key: string): boolean {
    this.expire();
    return this.added.delete(key);
  }

  private expire(): void {
    const before = this.now() - this.maxAgeMs;
    for (const [key, at] of this.added) {
      if (at >= before) break;
      this.added.delete(key);
    }
  }
}
