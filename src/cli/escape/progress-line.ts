/** A one-line progress display on stderr, only when it is a terminal. */
export interface ProgressLine {
  update(text: string): void;
  done(): void;
}

/** Shortest time between two updates of the line, so that a fast loop does not flood the terminal. */
const MIN_UPDATE_MS = 100;

export function progressLine(): ProgressLine {
  if (!process.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  let last = 0;
  let shown = false;
  return {
    update: (text) => {
      const now = Date.now();
      if (now - last < MIN_UPDATE_MS) return;
      last = now;
      shown = true;
      process.stderr.write(`\r\x1b[K${text}`);
    },
    done: () => {
      if (shown) process.stderr.write("\r\x1b[K");
    },
  };
}

/** Seconds since `startedMs`, as a progress line shows them ("12.3"). */
export function secondsSince(startedMs: number): string {
  return ((Date.now() - startedMs) / 1000).toFixed(1);
}
