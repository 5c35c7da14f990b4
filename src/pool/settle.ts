import type { Reply } from '../types.js';

/** A reply or the error it failed with, as a value: how batches report each command. */
export function settle(p: Promise<Reply>): Promise<Reply | Error> {
  return p.then((v) => v, (e: Error) => e);
}

/** Waits for every step (none is abandoned half-way), then rejects with the first failure. */
export async function settleAll(steps: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(steps);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
