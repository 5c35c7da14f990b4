/**
 * MOVING on a StandalonePool under steady write load, against a real redis-server behind two
 * proxies that play the old and the new endpoint of a managed database (both forward to the
 * same server, so every write is real and counted there): the pool hands over to the new
 * endpoint without failing a command or sending one twice, and closes its connections to the
 * old endpoint before the end of the notice, when the endpoint would cut them.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StandalonePool, type MaintenanceEvent } from '../../src/index.js';
import { MaintProxy } from '../support/maint-proxy.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
const opened: Array<{ close(): Promise<void> }> = [];
const track = <T extends { close(): Promise<void> }>(x: T): T => {
  opened.push(x);
  return x;
};

beforeAll(async () => {
  topo = await startStandalone();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
});
afterAll(async () => {
  await topo?.stop();
});

/** SET calls the server executed since the last CONFIG RESETSTAT. */
async function setCalls(): Promise<number> {
  const m = /cmdstat_set:calls=(\d+)/.exec(await topo.server.cli('INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

/** Concurrent writers: each sends SET after SET, recording every outcome and latency. */
class Writers {
  acked = 0;
  readonly failures: unknown[] = [];
  /** [started, latency] of every acknowledged SET. */
  readonly samples: Array<[number, number]> = [];
  private running = true;
  private readonly done: Promise<void[]>;

  constructor(pool: StandalonePool, n: number, prefix: string) {
    this.done = Promise.all(Array.from({ length: n }, async (_, w) => {
      for (let i = 0; this.running; i++) {
        const t = Date.now();
        try {
          await pool.set(`${prefix}:${w}:${i}`, String(i));
          this.acked++;
          this.samples.push([t, Date.now() - t]);
        } catch (e) {
          this.failures.push(e);
        }
      }
    }));
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /** Latency figures of the SETs started in [from, to). */
  latency(from: number, to: number): { n: number; p50: number; max: number } {
    const l = this.samples.filter(([t]) => t >= from && t < to).map(([, ms]) => ms).sort((a, b) => a - b);
    return { n: l.length, p50: l[Math.floor(l.length / 2)] ?? 0, max: l.at(-1) ?? 0 };
  }
}

describe('MOVING under steady load', () => {
  it('hands over to the new endpoint: 0 failed, 0 sent twice, old connections closed before the notice ends', async () => {
    const oldEnd = track(await MaintProxy.start(topo.address));
    // Reaching the new endpoint takes a while (a farther node, a TLS handshake).
    const newEnd = track(await MaintProxy.start(topo.address, { connectDelayMs: 200 }));
    const pool = track(await StandalonePool.create(oldEnd.address, { protocol: 3, pool: { lanes: 2 } }));
    const events: MaintenanceEvent[] = [];
    pool.on('maintenance', (e) => events.push(e));
    // An idle exclusive connection and a subscriber on the old endpoint too.
    await pool.multi().set('mv:multi', '1').exec();
    const messages: string[] = [];
    const sub = await pool.subscribe('mv:channel', (m) => void messages.push(String(m)));
    const resubscribed: unknown[] = [];
    sub.on('resubscribed', (r) => resubscribed.push(r));
    await topo.server.cli('CONFIG', 'RESETSTAT');
    const forwardedBefore = oldEnd.commands.get('SET') ?? 0;

    const writers = new Writers(pool, 20, 'mv');
    await waitFor(() => writers.acked >= 2000, 'the load to run');
    const oldConnections = oldEnd.open.length;
    const acceptedBefore = oldEnd.connections.length;
    const timeS = 3;
    const movedAt = Date.now();
    const copies = oldEnd.inject(['MOVING', 101, timeS, `${newEnd.address.host}:${newEnd.address.port}`]);
    // The endpoint cuts whatever is still open when the notice is up.
    const cutByServer = oldEnd.expireAfter(timeS * 1000);
    await waitFor(() => oldEnd.open.length === 0, 'every connection to the old endpoint to close', timeS * 1000 + 2000, 10);
    const drainedMs = Date.now() - movedAt;
    // Go on writing through the new endpoint for a while.
    const setsThere = newEnd.commands.get('SET') ?? 0;
    await waitFor(() => (newEnd.commands.get('SET') ?? 0) >= setsThere + 2000, 'writes through the new endpoint');
    await writers.stop();

    expect(writers.failures).toEqual([]);
    // Every acknowledged SET ran exactly once on the server, and none ran unacknowledged.
    expect(await setCalls()).toBe(writers.acked);
    expect((oldEnd.commands.get('SET') ?? 0) - forwardedBefore + (newEnd.commands.get('SET') ?? 0)).toBe(writers.acked);
    // Closed by the client, before the endpoint's deadline.
    expect(await cutByServer).toBe(0);
    expect(oldEnd.connections.every((c) => c.closedBy === 'client')).toBe(true);
    // Nothing new went to the old endpoint after the notice.
    expect(oldEnd.connections.length).toBe(acceptedBefore);
    expect(pool.address).toEqual(newEnd.address);
    // One hand-over; a copy is counted when its connection read it (the idle exclusive one may
    // be closed by the hand-over before its copy is read).
    const m = pool.stats().maintenance;
    expect(m).toMatchObject({ ignored: 0, handoffs: 1, relaxedNow: 0 });
    expect(m.notifications).toBeGreaterThanOrEqual(1);
    expect(m.notifications).toBeLessThanOrEqual(copies);
    expect(events.filter((e) => e.kind === 'MOVING').length).toBe(m.notifications);
    expect(events[0]).toEqual({ kind: 'MOVING', seq: 101, timeS, target: newEnd.address, address: oldEnd.address });

    // The subscription followed to the new endpoint.
    await waitFor(() => resubscribed.length > 0, 'the subscription to be restored');
    await waitFor(async () => {
      await pool.publish('mv:channel', 'after');
      return messages.includes('after');
    }, 'a message published after the move to arrive');
    expect(newEnd.commands.get('SUBSCRIBE')).toBeGreaterThan(0);

    const before = writers.latency(movedAt - 1000, movedAt);
    const during = writers.latency(movedAt, movedAt + drainedMs);
    console.log(
      `[maintenance] MOVING (time_s ${timeS}) under 20 writers: ${writers.acked} SETs acknowledged = ${await setCalls()} executed, ${writers.failures.length} failed, ` +
        `0 sent twice; new endpoint 200 ms to connect; ${oldConnections} old connections (${copies} got the notice) closed by the client in ${drainedMs} ms, 0 by the endpoint; ` +
        `SET latency before p50 ${before.p50} ms / max ${before.max} ms (${before.n}), during the hand-over p50 ${during.p50} ms / max ${during.max} ms (${during.n})`,
    );
  });

  it('MOVING with a null endpoint: reconnects to the same address after half the notice, old connections closed in time', async () => {
    const endpoint = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(endpoint.address, { protocol: 3, maintEndpointType: 'none' }));
    expect(endpoint.optIns).toContain('none');
    const writers = new Writers(pool, 5, 'mvnull');
    await waitFor(() => writers.acked >= 200, 'the load to run');
    const old = endpoint.open;
    const timeS = 2;
    const movedAt = Date.now();
    endpoint.inject(['MOVING', 7, timeS, null]);
    const cutByServer = endpoint.expireAfter(timeS * 1000);
    await waitFor(() => old.every((c) => !c.isOpen), 'the old connections to close', timeS * 1000 + 2000, 10);
    const closedAfterMs = Date.now() - movedAt;
    await writers.stop();
    expect(writers.failures).toEqual([]);
    expect(await cutByServer).toBe(0);
    // New connections to the same address, opened no sooner than half the notice.
    const fresh = endpoint.connections.filter((c) => !old.includes(c));
    expect(fresh.length).toBeGreaterThan(0);
    expect(Math.min(...fresh.map((c) => c.openedAt)) - movedAt).toBeGreaterThanOrEqual(timeS * 500 - 50);
    expect(pool.stats().maintenance).toMatchObject({ handoffs: 1, relaxedNow: 0 });
    console.log(`[maintenance] MOVING null (time_s ${timeS}): reconnected after ${Math.min(...fresh.map((c) => c.openedAt)) - movedAt} ms, old connections closed after ${closedAfterMs} ms, ${writers.failures.length} failed of ${writers.acked}`);
  });

  it('a second MOVING copy, or one on a connection already handed over, starts nothing new', async () => {
    const a = track(await MaintProxy.start(topo.address));
    const b = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(a.address, { protocol: 3, pool: { lanes: 3 } }));
    await Promise.all(Array.from({ length: 100 }, (_, i) => pool.set(`mvdup:${i}`, '1')));
    const copies = a.inject(['MOVING', 3, 2, `${b.address.host}:${b.address.port}`]);
    a.inject(['MOVING', 4, 2, `${b.address.host}:${b.address.port}`]);
    await waitFor(() => a.open.length === 0, 'the old connections to close');
    expect(copies).toBeGreaterThan(1);
    expect(pool.stats().maintenance.handoffs).toBe(1);
    expect(await pool.get('mvdup:99')).toBe('1');
  });
});
