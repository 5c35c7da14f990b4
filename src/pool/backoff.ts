/** Exponential backoff with full jitter: a delay in [0, min(max, initial * 2^attempt)]. */
export interface BackoffOptions {
  /** First delay cap in ms. */
  initialDelay: number;
  /** Largest delay in ms. */
  maxDelay: number;
}

/**
 * Delay before retry number `attempt` (0-based). Full jitter spreads reconnecting clients
 * so a recovering server is not hit by all of them at once; the floor of a quarter of the
 * cap keeps a loop from spinning when the random draw is near zero.
 */
export function backoffDelay(attempt: number, o: BackoffOptions, random: () => number = Math.random): number {
  const cap = Math.min(o.maxDelay, o.initialDelay * 2 ** Math.min(attempt, 30));
  return Math.round(cap / 4 + random() * (cap * 3) / 4);
}

/**
 * Sleeps `ms`, or less when `signal` fires. A caller awaits this, so the timer keeps the
 * process alive by default (an unref'd one could let Node exit with the caller's promise
 * pending); background loops pass `{ unref: true }`.
 */
export function sleep(ms: number, signal?: AbortSignal, options?: { unref?: boolean }): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    if (options?.unref) t.unref();
    function done() {
      signal?.removeEventListener('abort', done);
      clearTimeout(t);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
