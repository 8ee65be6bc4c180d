/**
 * Rate limits for log lines that input from outside can repeat at will (a hostile RPC answer with
 * thousands of forged logs, an endpoint that fails at every poll): per kind of line, at most
 * `perWindow` lines per `windowMs`; the lines held back are counted and the next line let through
 * says how many.
 */
export class LineLimiter {
  private readonly kinds = new Map<string, { start: number; logged: number; held: number }>();

  constructor(
    private readonly perWindow = 5,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether a line of `kind` may be logged now; if so, how many lines of that kind were held back
   * since the last one logged. `kind` must come from a fixed set of names (it is never forgotten).
   */
  take(kind: string): { held: number } | undefined {
    const now = this.now();
    let k = this.kinds.get(kind);
    if (!k || now - k.start >= this.windowMs) {
      k = { start: now, logged: 0, held: k?.held ?? 0 };
      this.kinds.set(kind, k);
    }
    if (k.logged >= this.perWindow) {
      k.held++;
      return undefined;
    }
    k.logged++;
    const held = k.held;
    k.held = 0;
    return { held };
  }
}
