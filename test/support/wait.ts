/**
 * Polling helpers. Tests wait for a condition, never for a fixed time.
 */

/**
 * Thrown from a `waitFor` callback to give up at once (for example because
 * the process being waited on has exited); `waitFor` rethrows it unchanged.
 */
export class StopWaiting extends Error {
  override readonly name: string = 'StopWaiting';
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` until it returns a truthy value (which is returned) or the
 * deadline passes. Errors thrown by `fn` count as "not yet"; on timeout the
 * error names `what` and carries the last error (message and `cause`).
 * A `StopWaiting` error ends the wait immediately.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
      lastValue = value;
      lastError = undefined;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
  const detail =
    lastError !== undefined
      ? `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`
      : `; last value: ${JSON.stringify(lastValue)}`;
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${detail}`, { cause: lastError });
}
