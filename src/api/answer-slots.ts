import { ApiError } from "./api-error.js";

/**
 * At most `max` answers computed at once; up to `queue` more wait their turn, in order; beyond
 * that a request is refused at once (503), so waiting requests cannot pile up either.
 */
export class AnswerSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly queue: number,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      if (this.waiting.length >= this.queue)
        throw new ApiError(503, "too many requests being answered; try again shortly", undefined, 1);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiter, if any.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** `work`, or a 503 when it has not finished within `ms`. */
export function withAnswerTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ApiError(503, `no answer within ${ms / 1000} s; try again later`, undefined, 5)),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
