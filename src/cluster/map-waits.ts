import { sleep } from '../pool/backoff.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { remaining } from '../retry.js';
import type { ClusterHost } from './cluster-host.js';

/**
 * Not an error: a wait for a connection was abandoned because the slot map changed and the
 * command now routes elsewhere. Nothing was sent; the caller retries at once without counting it.
 */
export class Rerouted extends Error {}

/** Sleeps `ms`, or less when either signal fires. */
function sleepUnlessAborted(ms: number, a: AbortSignal | undefined, b: AbortSignal): Promise<void> {
  if (a?.aborted || b.aborted) return Promise.resolve();
  if (!a) return sleep(ms, b);
  const both = new AbortController();
  const abort = () => both.abort();
  a.addEventListener('abort', abort, { once: true });
  b.addEventListener('abort', abort, { once: true });
  return sleep(ms, both.signal).finally(() => {
    a.removeEventListener('abort', abort);
    b.removeEventListener('abort', abort);
  });
}

/**
 * `p`, unless the slot map changes so that `rerouted()` says true first (or the pool
 * closes): then rejects with {@link Rerouted} and lets `p` settle unobserved.
 */
export async function unlessRerouted<T>(h: ClusterHost, p: Promise<T>, rerouted: () => boolean): Promise<T> {
  const top = h.topology;
  for (;;) {
    const signal = top.changed;
    if (h.isClosed()) break;
    let onChange!: () => void;
    const changed = new Promise<typeof signal>((resolve) => {
      onChange = () => resolve(signal);
      signal.addEventListener('abort', onChange, { once: true });
    });
    let r: T | AbortSignal;
    try {
      r = await Promise.race([p, changed]);
    } finally {
      signal.removeEventListener('abort', onChange);
    }
    if (r !== signal) return r as T;
    if (h.isClosed() || rerouted()) break;
  }
  p.catch(() => {});
  throw new Rerouted();
}

/**
 * Waits `ms` (at most until the deadline) before a retry. Returns early when the call is
 * aborted, the pool closes, or the slot map changes so that `wake()` says true. `since` is
 * the map's {@link Topology.version} when the attempt failed: a change between the failure
 * and this wait (a pipeline pauses only once all its node groups are back, and a refresh may
 * land in between) counts as one seen during the wait, instead of costing the whole delay.
 */
export async function pauseBeforeRetry(h: ClusterHost, ms: number, call: ResolvedCall, wake: () => boolean, since?: number): Promise<void> {
  if (since !== undefined && h.topology.version !== since && wake()) return;
  const until = Date.now() + Math.min(ms, remaining(call));
  for (;;) {
    const left = until - Date.now();
    if (left <= 0 || call.signal?.aborted || h.isClosed()) return;
    const changed = h.topology.changed;
    await sleepUnlessAborted(left, call.signal, changed);
    if (!changed.aborted || call.signal?.aborted || h.isClosed() || wake()) return;
  }
}
