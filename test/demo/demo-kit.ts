/**
 * What both demos share: the live progress line with messages printed above it, error classes
 * for the summary, per-bucket counters, and a Ctrl-C that stops every process the demo started.
 */

/** Whether stdout is a terminal (a live, redrawn progress line) or not (one line per second). */
export const TTY = process.stdout.isTTY === true;

/** `Name CODE` of an error for the failure summary (`RedisError MOVED`, `TimeoutError`). */
export function errorKind(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? `${err.name} ${code}` : err.name;
}

/** Adds one to bucket `i` of `arr`, growing it as needed. */
export function bumpBucket(arr: number[], i: number): void {
  const at = Math.max(0, i);
  while (arr.length <= at) arr.push(0);
  arr[at]!++;
}

/** The sum of the `n` buckets before bucket `now`. */
export function sumBefore(arr: readonly number[], now: number, n: number): number {
  let s = 0;
  for (let i = Math.max(0, now - n); i < now; i++) s += arr[i] ?? 0;
  return s;
}

/** A progress line redrawn in place (on a TTY), with messages printed above it. */
export class Progress {
  private shown = false;
  constructor(private readonly line: () => string) {}

  /** Prints a line above the live progress line (or just a line without a TTY). */
  say(text: string): void {
    if (TTY && this.shown) process.stdout.write('\r\x1b[K');
    process.stdout.write(text + '\n');
    if (TTY && this.shown) this.draw();
  }

  private draw(): void {
    process.stdout.write('\r\x1b[K' + this.line());
  }

  /** Starts redrawing; the returned function stops and leaves the last line printed. */
  start(): () => void {
    this.shown = true;
    const timer = setInterval(() => (TTY ? this.draw() : process.stdout.write(this.line() + '\n')), TTY ? 200 : 1000);
    return () => {
      clearInterval(timer);
      if (TTY && this.shown) process.stdout.write('\r\x1b[K' + this.line() + '\n');
      this.shown = false;
    };
  }

  /** Ends the progress line before other output (an interrupt, a final report). */
  breakLine(): void {
    if (TTY && this.shown) process.stdout.write('\n');
  }
}

/**
 * SIGINT/SIGTERM: say what is being stopped, run `cleanup` (which stops every process the demo
 * started), then exit; a second signal, or cleanup taking longer than `hardExitMs`, exits at once.
 */
export function onInterrupt(what: string, cleanup: () => Promise<void>, progress: Progress, hardExitMs = 5000): void {
  let interrupted = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (interrupted) process.exit(130);
      interrupted = true;
      progress.breakLine();
      process.stdout.write(`${sig}: stopping ${what}...\n`);
      const hard = setTimeout(() => process.exit(130), hardExitMs);
      hard.unref();
      void cleanup().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
    });
  }
}
