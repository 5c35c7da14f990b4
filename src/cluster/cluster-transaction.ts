import type { Connection } from '../connection/connection.js';
import { RedisError } from '../errors.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { runBatchOn, sendOptions, type BatchResult } from '../pool/surface.js';
import { formatAddress, type Arg } from '../types.js';
import { newFlight, takeRedirect } from './flight.js';
import { sendAsking, type FlightRunner } from './flight-runner.js';
import { Rerouted, unlessRerouted } from './map-waits.js';
import { crossSlotError } from './plan.js';
import { keySlot } from './slot.js';

/**
 * MULTI/EXEC: every key must hash to one slot (CrossSlotError before anything is sent). Runs
 * on an exclusive connection to that slot's master; a MOVED/ASK/TRYAGAIN on MULTI, a queued
 * command or EXEC (the server then discards the transaction) retries the whole transaction.
 */
export async function runTransaction(runner: FlightRunner, cmds: Arg[][], call: ResolvedCall): Promise<BatchResult | null> {
  const { h, router } = runner;
  const slots = new Set<number>();
  let readOnly = true;
  for (let i = 0; i < cmds.length; i++) {
    const r = router.route(cmds[i]!, call.batch?.[i]);
    for (const k of r.keys) slots.add(keySlot(k));
    readOnly &&= r.readOnly;
  }
  if (slots.size > 1) throw crossSlotError('MULTI', slots);
  const slot = slots.size ? [...slots][0]! : undefined;
  const f = newFlight(['MULTI'], { name: 'multi', info: undefined, slot, readOnly });
  const started = Date.now();
  const masterOf = () => router.masterOf(slot, f.avoid);
  try {
    for (;;) {
      runner.checkTime(f, call);
      const address = f.target ?? masterOf();
      if (!address) {
        await runner.refreshUncovered(f, call);
        continue;
      }
      const asking = takeRedirect(f);
      const pool = h.topology.pool(address);
      let conn: Connection | undefined;
      try {
        const acquiring = pool.acquire(call.deadline);
        try {
          conn = await unlessRerouted(h, acquiring, () => {
            const next = masterOf();
            return next !== undefined && formatAddress(next) !== formatAddress(address);
          });
        } catch (err) {
          // Abandoned: a connection acquired later goes straight back.
          if (err instanceof Rerouted) acquiring.then((c) => pool.release(c), () => {});
          throw err;
        }
        if (asking) sendAsking(conn, sendOptions(call));
        return await runBatchOn(conn, cmds, call, true, f.attempts.length + 1);
      } catch (err) {
        if (err instanceof Rerouted) continue;
        // EXECABORT caused by a redirect of a queued command: decide on the redirect.
        const cause = err instanceof RedisError && err.code === 'EXECABORT' && err.cause instanceof RedisError ? err.cause : err;
        await runner.retryAfter(f, cause, err, address, call, started, () => f.target ?? masterOf());
      } finally {
        if (conn) pool.release(conn);
      }
    }
  } finally {
    runner.land(f);
  }
}
