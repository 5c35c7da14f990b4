/**
 * When queued commands are written. Every connection that queued commands during one turn of
 * the event loop is flushed once, together, after that turn's I/O callbacks (setImmediate),
 * rather than each after its own callback (nextTick).
 *
 * Why: replies arrive one socket (or one 16 KB TLS record) per callback. Callers released by
 * one batch of replies send their next commands to many nodes; flushing at the end of each
 * callback writes one or two commands per socket in a 30-master cluster, and halves the
 * batches of a TLS connection. Collected over the turn, every reply batch read in it feeds one
 * write per connection. The wait is the rest of the current turn: no timer, no idle delay.
 */

/** Something with queued commands to write. */
export interface Flushable {
  flushQueued(): void;
}

let queue: Flushable[] = [];
let armed = false;

/** Writes `c`'s queued commands at the end of this event-loop turn (once, however often asked). */
export function scheduleFlush(c: Flushable): void {
  queue.push(c);
  if (!armed) {
    armed = true;
    setImmediate(flushAll);
  }
}

function flushAll(): void {
  armed = false;
  const q = queue;
  queue = [];
  for (let i = 0; i < q.length; i++) q[i]!.flushQueued();
}
