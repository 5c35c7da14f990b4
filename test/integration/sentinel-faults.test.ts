/**
 * SentinelPool under faults, against real redis-sentinel 7.0 processes (1 master, 2 replicas,
 * 3 sentinels, one topology for the file; tests run in order):
 * - a sentinel SIGKILLed and restarted: its subscriber loop backs off, then comes back;
 * - the pool's subscriber loops cut (CLIENT KILL TYPE pubsub on every sentinel, with a long
 *   resubscribe delay) right before a SENTINEL FAILOVER: every pub/sub message of the
 *   failover is missed, and the periodic check still moves the pool;
 * - the master SIGKILLed under 50 writers: the pool follows the automatic failover, writes
 *   succeed after it, and only commands in flight at the kill fail.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  QueueFullError,
  SentinelPool,
  TimeoutError,
  UncertainWriteError,
  type Address,
  type SentinelOptions,
} from '../../src/index.js';
import { proxySentinel } from '../support/fault-proxy.js';
import { sendCommand } from '../support/mini-client.js';
import { EventLog, fmt, isReadonly, missingOn, roleOf, sameAddr, startWrites, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
const pools: SentinelPool[] = [];

async function create(sentinels: Address[] = topo.sentinelAddresses, options: SentinelOptions = {}): Promise<SentinelPool> {
  const p = await SentinelPool.create(topo.masterName, sentinels, options);
  pools.push(p);
  return p;
}

function watchersUp(pool: SentinelPool, n = topo.sentinels.length): Promise<boolean> {
  return waitFor(() => {
    const s = pool.stats().sentinels;
    return s.length >= n && s.every((x) => x.connected);
  }, `all ${n} subscriber loops to be connected`);
}

/** Backoff cap of attempt `n` (full jitter draws from [cap/4, cap]). */
const cap = (n: number, o: { initialDelay: number; maxDelay: number }) => Math.min(o.maxDelay, o.initialDelay * 2 ** n);

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  // A test that failed half-way must not leave a sentinel stopped for the next one.
  for (const s of topo?.sentinels ?? []) if (s.isPaused()) s.resume();
});

afterAll(async () => {
  await topo?.stop();
});

describe('sentinel faults', () => {
  it('a sentinel killed and restarted: its loop reports it down once, retries a refused connection at initialDelay without growing, and is back within about initialDelay of the restart', async () => {
    const backoff = { initialDelay: 100, maxDelay: 2000 };
    const pool = await create(topo.sentinelAddresses, { resubscribe: backoff });
    const log = new EventLog(pool);
    await watchersUp(pool);
    const victim = topo.sentinels[2]!;
    const at = victim.address;
    const mine = <T extends { address: { host: string; port: number } }>(list: Array<{ at: number; info: T }>) => list.filter((e) => sameAddr(e.info.address, at));

    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    // Enough attempts that exponential growth would have reached 800-1600 ms caps.
    await waitFor(() => mine(log.reconnect).length >= 6, 'six reconnect attempts to the killed sentinel', 20_000);
    let answeredAt = 0;
    const restarting = victim.restart();
    // The moment it answers PING (the process is up), then how long until the loop is back.
    await waitFor(async () => (await sendCommand(at, ['PING']).catch(() => '')) === 'PONG' && (answeredAt = Date.now()) > 0, 'the restarted sentinel to answer PING', 20_000, 2);
    await restarting;
    await waitFor(() => mine(log.up).some((u) => u.at >= killedAt), 'the loop to come back after the restart', 20_000);
    const back = mine(log.up).find((u) => u.at >= killedAt)!;

    const downs = mine(log.down).filter((d) => d.at >= killedAt);
    const reconnects = mine(log.reconnect).filter((e) => e.at >= killedAt && e.at <= back.at);
    console.log(
      `sentinel ${fmt(at)} killed: first sentinel-down after ${downs[0]!.at - killedAt} ms, ${downs.length} down events, ` +
        `reconnect delays ${reconnects.map((e) => `#${e.info.attempt}:${e.info.delay}`).join(' ')} ms, back ${back.at - answeredAt} ms after it answered PING`,
    );
    expect(downs).toHaveLength(1); // once per outage, not once per attempt
    expect(downs[0]!.at).toBeLessThan(back.at);
    expect(downs[0]!.info.error).toBeInstanceOf(Error);
    expect(back.info.reconnected).toBe(true);
    // Refused connections: every delay is drawn from the first step's range, whatever the attempt.
    expect(reconnects.length).toBeGreaterThanOrEqual(6);
    for (const e of reconnects) {
      expect(e.info.delay).toBeGreaterThanOrEqual(cap(0, backoff) / 4);
      expect(e.info.delay).toBeLessThanOrEqual(cap(0, backoff));
    }
    expect(reconnects.map((e) => e.info.attempt).slice(0, 6)).toEqual([0, 1, 2, 3, 4, 5]);
    // Back within one retry delay (plus a connect and SUBSCRIBE) of the sentinel answering.
    expect(back.at - answeredAt).toBeLessThanOrEqual(cap(0, backoff) + 1000);

    await watchersUp(pool);
    await pool.set('sentinel-restart:k', 'v');
    expect(await pool.get('sentinel-restart:k')).toBe('v');
    expect(log.failover).toEqual([]);
  });

  it('a sentinel that accepts connections but never answers (black-holed): the loop backs off with growing delays', async () => {
    const backoff = { initialDelay: 100, maxDelay: 2000 };
    const px = await proxySentinel(topo);
    try {
      const pool = await create(px.sentinelAddresses, { resubscribe: backoff, natMap: px.natMap, sentinelTimeout: 200 });
      const log = new EventLog(pool);
      await watchersUp(pool);
      const victim = topo.sentinels[1]!;
      const at = px.toProxy(victim);
      px.of(victim).blackhole().cut();
      await waitFor(() => log.reconnect.filter((e) => sameAddr(e.info.address, at)).length >= 5, 'five reconnect attempts to the silent sentinel', 30_000);
      const delays = log.reconnect.filter((e) => sameAddr(e.info.address, at)).map((e) => e.info);
      for (const d of delays) {
        expect(d.delay).toBeGreaterThanOrEqual(cap(d.attempt, backoff) / 4);
        expect(d.delay).toBeLessThanOrEqual(cap(d.attempt, backoff));
      }
      expect(delays[4]!.delay).toBeGreaterThanOrEqual(cap(4, backoff) / 4); // 400 ms and more: the delays grew
      await px.of(victim).heal();
      await watchersUp(pool);
    } finally {
      await px.close();
    }
  });

  it('subscriber loops cut right before a SENTINEL FAILOVER: every message is missed, and the periodic check still moves the pool', async () => {
    const from = await topo.currentMaster();
    // Loops that lose their sentinel wait at least 5 s before they come back: the failover's
    // pub/sub messages are all published while they are away.
    // watchReplicas off: this test is about the periodic check (the watch would see the promotion first).
    const pool = await create(topo.sentinelAddresses, { pollInterval: 500, resubscribe: { initialDelay: 20_000, maxDelay: 20_000 }, clientName: 'cut-loops', watchReplicas: false });
    const log = new EventLog(pool);
    await watchersUp(pool);
    await pool.set('cut:before', '1');

    // Cut every subscriber loop: the sentinels drop their pub/sub clients.
    const killed = await Promise.all(topo.sentinels.map(async (s) => Number(await s.cli('CLIENT', 'KILL', 'TYPE', 'pubsub'))));
    expect(killed.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3);
    await waitFor(() => pool.stats().sentinels.every((s) => !s.connected), 'every subscriber loop to notice it was cut');
    const cutAt = Date.now();

    const t0 = Date.now();
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    const to = await topo.waitForNewMaster(from);
    await waitFor(() => log.failover.length >= 1, 'the pool to move to the new master without pub/sub', 20_000);
    const ev = log.failover[0]!;
    const upsBeforeEvent = log.up.filter((u) => u.at >= cutAt && u.at <= ev.at);
    console.log(`loops cut: pool moved ${ev.at - t0} ms after SENTINEL FAILOVER, ${log.describeFailovers()}; loops back before it: ${upsBeforeEvent.length}`);

    // No loop was back in time to hear anything: the move came from the check, not from pub/sub.
    expect(upsBeforeEvent).toEqual([]);
    expect(pool.stats().sentinels.every((s) => !s.connected)).toBe(true);
    expect(ev.info.detectedBy).not.toBe('pubsub');
    expect(['poll', 'reconnect', 'readonly']).toContain(ev.info.detectedBy);
    expect(ev.info.from).toEqual(from);
    expect(ev.info.to).toEqual(to);
    expect(log.failoverStart).toEqual([]); // the fence never engaged: its messages were missed
    expect(pool.master()).toEqual(to);

    // Writes go to the new master.
    await pool.set('cut:after', '2');
    expect(await sendCommand(to, ['GET', 'cut:after'])).toBe('2');
    expect(log.failover).toHaveLength(1);

    // Let the topology settle (the old master is demoted ~10 s later) before the next test.
    await pool.close();
    expect(await waitSettled(topo, 2)).toEqual(to);
  });

  it('SIGKILL of the master under 50 writers: the pool follows the failover, writes succeed after it, only commands in flight fail', async () => {
    const WRITERS = 50;
    const from = await topo.currentMaster();
    const victim = topo.handleFor(from)!;
    // Deadlines long enough to wait out an automatic failover (down-after 1 s + election + promotion),
    // so a command that was never written waits for the new master instead of failing.
    const pool = await create(topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });
    const log = new EventLog(pool);
    await watchersUp(pool);

    // Plain (not idempotent) SETs: one written when the master dies may have executed, and must fail.
    const load = startWrites((k, v) => pool.set(k, v), WRITERS, 'kill');
    await load.waitForAcks(3000, 'writes before the kill');
    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    await waitFor(() => log.failover.length >= 1, 'the failover event', 30_000);
    const ev = log.failover[0]!;
    const to = await topo.waitForNewMaster(from);
    await load.waitForAcks(3000, 'writes after the failover', 20_000);
    await load.stop();

    const afterEvent = load.acks.filter((a) => a.at >= ev.at);
    const firstAck = afterEvent[0];
    const byType = new Map<string, number>();
    for (const f of load.failures) {
      const name = (f.error as Error)?.name ?? typeof f.error;
      byType.set(name, (byType.get(name) ?? 0) + 1);
    }
    const lost = await missingOn(to, load.acks);
    console.log(
      `SIGKILL of ${fmt(from)}: failover event ${ev.at - killedAt} ms after the kill (${log.describeFailovers()}), ` +
        `first acknowledged write after it at +${firstAck ? firstAck.at - killedAt : NaN} ms; ` +
        `${load.acks.length} acknowledged, ${load.failures.length} failed ${JSON.stringify(Object.fromEntries(byType))}, ` +
        `acknowledged writes missing on the new master: ${lost.length}`,
    );

    expect(ev.info.from).toEqual(from);
    expect(ev.info.to).toEqual(to);
    // On a loaded machine the sentinels may fail over once more (the promoted node missed its
    // 1 s down-after under 50 writers): the pool must then follow each switch once, in order,
    // and end on the master the sentinels name.
    let final = to;
    if (log.failover.length > 1) {
      await waitFor(async () => {
        final = await topo.currentMaster();
        return fmt(pool.master()) === fmt(final);
      }, 'the pool to be on the master the sentinels name', 20_000);
    }
    log.failover.forEach((f, i) => {
      expect(f.info.from).not.toEqual(f.info.to);
      if (i > 0) expect(f.info.from, `failover ${i + 1} starts where failover ${i} ended`).toEqual(log.failover[i - 1]!.info.to);
    });
    expect(log.failover.at(-1)!.info.to).toEqual(final);
    expect(pool.master()).toEqual(final);
    expect(await roleOf(final)).toBe('master');
    expect(afterEvent.length).toBeGreaterThan(0);
    const afterLast = load.acks.filter((a) => a.at >= log.failover.at(-1)!.at);
    expect(await missingOn(final, afterLast)).toEqual([]);

    // Failures: never READONLY, only the kinds a dead master can cause, and bounded by the
    // commands in flight when it died (one per writer).
    expect(load.failures.filter((f) => isReadonly(f.error)).map((f) => String(f.error))).toEqual([]);
    for (const f of load.failures) {
      const e = f.error;
      const allowed = e instanceof UncertainWriteError || e instanceof ConnectionError || e instanceof TimeoutError || e instanceof QueueFullError;
      expect(allowed, `unexpected failure: ${String(e)}`).toBe(true);
    }
    const unsentFailures = load.failures.filter((f) => !(f.error instanceof UncertainWriteError));
    expect(unsentFailures.map((f) => `${f.key} ${String(f.error)}`).slice(0, 5), 'commands never written must wait for the new master, not fail').toEqual([]);
    expect(load.failures.length).toBeLessThanOrEqual(WRITERS * log.failover.length);
    for (const f of load.failures) expect(f.at).toBeGreaterThanOrEqual(killedAt);

    // Bring the killed node back (the sentinels turn it into a replica) for a clean teardown.
    await victim.restart();
  });
});
