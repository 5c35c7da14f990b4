import type { Connection } from '../connection/connection.js';
import { sendTraced } from '../diagnostics.js';
import { TimeoutError } from '../errors.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { pastDeadline, withinDeadline } from '../retry.js';
import { batchSendOptions, type BatchResult } from '../pool/surface.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import { giveUpError, newFlight, retryDelay, takeRedirect, type Flight } from './flight.js';
import { sendAsking, type FlightRunner } from './flight-runner.js';
import { Rerouted } from './map-waits.js';
import { mergeSplit, type SplitPart } from './plan.js';
import { slotNotServed } from './route.js';
import { settle } from '../pool/settle.js';


/** Where one pipeline entry's result comes from: one flight, the merge of a split entry's flights, or an error found before sending. */
type Entry = { one: number } | { name: string; parts: SplitPart[]; first: number } | { error: Error };

/**
 * A pipeline across nodes: entries are grouped by node and each group goes out in one
 * write, all groups in parallel. Entries answered MOVED/ASK/TRYAGAIN (or not sent because a
 * connection failed) are re-routed and sent again; the others keep their reply. Results come
 * back in the caller's order. Order of execution is guaranteed per node only.
 *
 * An MGET/MSET/DEL/UNLINK/EXISTS/TOUCH entry whose keys span slots is split per slot like
 * `pool.mget` (unless `splitMultiKey` is false): its parts travel with the other entries for
 * their node, and the entry gets the merged reply, or the first error of a part. Any other
 * entry whose keys span slots gets a CrossSlotError and is not sent.
 */
export async function runPipeline(runner: FlightRunner, cmds: Arg[][], call: ResolvedCall): Promise<BatchResult> {
  const started = Date.now();
  // Flights are what is sent: one per entry, or one per part of a split entry, in entry order.
  const flights: Flight[] = [];
  const entries: Entry[] = [];
  for (let i = 0; i < cmds.length; i++) {
    const args = cmds[i]!;
    const r = runner.router.route(args, call.batch?.[i]);
    const plan = runner.router.multiSlot(args, r);
    if (plan.action === 'refuse') {
      entries.push({ error: plan.error });
    } else if (plan.action === 'split') {
      entries.push({ name: r.name, parts: plan.parts, first: flights.length });
      for (const part of plan.parts) flights.push(newFlight([args[0]!, ...part.args], { ...r, slot: part.slot }));
    } else {
      entries.push({ one: flights.length });
      flights.push(newFlight(args, r));
    }
  }
  let sent: Array<Reply | Error>;
  try {
    sent = await runFlights(runner, flights, call, started);
  } finally {
    for (const f of flights) runner.land(f);
  }
  return entries.map((e): Reply | Error => {
    if ('error' in e) return e.error;
    if ('one' in e) return sent[e.one]!;
    try {
      return mergeSplit(e.name, e.parts, sent.slice(e.first, e.first + e.parts.length));
    } catch (err) {
      return err as Error;
    }
  });
}

/** The retry loop of a pipeline: every flight's reply or error, in order. */
async function runFlights(runner: FlightRunner, flights: Flight[], call: ResolvedCall, started: number): Promise<Array<Reply | Error>> {
  const h = runner.h;
  const results: Array<Reply | Error> = new Array(flights.length);
  let todo = flights.map((_, i) => i);
  while (todo.length) {
    if (h.isClosed() || pastDeadline(call) || call.signal?.aborted) {
      for (const i of todo) {
        try {
          runner.checkTime(flights[i]!, call);
          results[i] = new TimeoutError('pipeline: no time left');
        } catch (e) {
          results[i] = e as Error;
        }
      }
      break;
    }
    const groups = new Map<string, { address: NodeAddress; idx: number[] }>();
    let uncovered = false;
    for (const i of todo) {
      const f = flights[i]!;
      const address = runner.nextNode(f);
      if (!address) {
        if (f.uncoveredRefreshed) results[i] = slotNotServed(f.route.slot ?? 0);
        else uncovered = true;
        continue;
      }
      const key = formatAddress(address);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { address, idx: [] }));
      g.idx.push(i);
    }
    if (uncovered) {
      await withinDeadline(h.topology.refreshed(), call, () => 'pipeline: the slot map refresh did not complete within the deadline.').catch(() => {});
      for (const i of todo) flights[i]!.uncoveredRefreshed = true;
      todo = todo.filter((i) => results[i] === undefined);
      continue;
    }
    const next: number[] = [];
    let delay = 0;
    await Promise.all(
      [...groups.values()].map(async (g) => {
        const group = g.idx.map((i) => flights[i]!);
        const replies = await sendGroup(runner, g.address, group, call);
        g.idx.forEach((i, j) => {
          const reply = replies[j]!;
          const f = flights[i]!;
          const asking = takeRedirect(f);
          if (!(reply instanceof Error)) {
            results[i] = reply;
            return;
          }
          if (reply instanceof Rerouted) {
            // Not sent: the map moved it while we waited for a connection. Keep an ASK target.
            if (asking) {
              f.target = g.address;
              f.asking = true;
            }
            next.push(i);
            return;
          }
          if (reply instanceof TimeoutError && !reply.sent && f.attempts.length > 0 && pastDeadline(call)) {
            try {
              runner.checkTime(f, call, g.address);
            } catch (e) {
              results[i] = e as Error;
              return;
            }
          }
          const d = runner.onFailure(f, reply, g.address, call, started);
          if (d.action === 'fail') {
            results[i] = giveUpError(f, d, reply, h.o.maxRedirections);
            return;
          }
          delay = Math.max(delay, retryDelay(d, f, h.o));
          next.push(i);
        });
      }),
    );
    todo = next.sort((a, b) => a - b);
    if (delay > 0 && todo.length) {
      const waiting = todo.map((i) => flights[i]!);
      // Wake when the change helps any waiting entry; all of them then start their backoff over.
      // The groups came back one by one: a change since the first failure counts.
      const since = waiting.reduce((v, f) => Math.min(v, f.failedAtVersion), Infinity);
      await runner.pause(delay, call, () => waiting.map((f) => runner.shouldWake(f, runner.nextNode(f))).some(Boolean), since);
    }
  }
  return results;
}

/**
 * One write of a group of pipeline entries to one node (ASKING before the entries that need
 * it). When the wait for a connection is abandoned because the map moved some entry
 * elsewhere, every entry of the group gets {@link Rerouted} (none was sent).
 */
async function sendGroup(runner: FlightRunner, address: NodeAddress, group: Flight[], call: ResolvedCall): Promise<Array<Reply | Error>> {
  const pool = runner.h.topology.pool(address);
  let conn: Connection;
  try {
    conn = pool.laneSync() ?? (await runner.laneOf(pool, call, ['PIPELINE'], () => group.some((f) => runner.routedAway(f, address))));
  } catch (err) {
    return group.map(() => err as Error);
  }
  const optsFor = batchSendOptions(call);
  return Promise.all(
    group.map((f) => {
      if (f.asking) sendAsking(conn, optsFor(undefined));
      return settle(sendTraced(conn, f.args, optsFor(f.route.traits), f.attempts.length + 1, group.length));
    }),
  );
}
