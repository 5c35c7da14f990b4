/**
 * SentinelPool against real redis-sentinel 7.0 processes (1 master, 2 replicas, 3 sentinels,
 * one topology for the file): discovery and its errors, option validation, replica reads,
 * stale sentinel messages from a scripted sentinel, close() in a child process, a
 * `SENTINEL FAILOVER` under 50 concurrent writers (the write fence), and a sentinel ACL user
 * that may not SUBSCRIBE (polling fallback).
 *
 * Tests run in order and share the topology; the two failover tests come last. Nothing sleeps
 * for a fixed time: every wait is a `waitFor` on an observable condition.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AllSentinelsDownError,
  ConnectionError,
  MasterNotMonitoredError,
  SentinelPool,
  TimeoutError,
  type Address,
  type SentinelOptions,
} from '../../src/index.js';
import type { NodeAddress } from '../../src/types.js';
import { startFakeServer } from '../support/fake-server.js';
import { sendCommand } from '../support/mini-client.js';
import {
  clientList,
  commandCalls,
  EventLog,
  fmt,
  isReadonly,
  missingOn,
  roleOf,
  sameAddr,
  startFakeSentinel,
  startWrites,
  waitSettled,
  type FakeSentinel,
} from '../support/sentinel-helpers.js';
import { freePort, startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

const WATCHER = { user: 'watcher', password: 'watcherpw' };

let topo: SentinelTopology;
const pools: SentinelPool[] = [];
const fakes: FakeSentinel[] = [];

/** Creates a pool that is closed after the test even when the test fails. */
async function create(sentinels: Address[] = topo.sentinelAddresses, options: SentinelOptions = {}, name = topo.masterName): Promise<SentinelPool> {
  const p = await SentinelPool.create(name, sentinels, options);
  pools.push(p);
  return p;
}

function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** Waits until every subscriber loop of `pool` (at least `n`) is connected. */
function watchersUp(pool: SentinelPool, n = topo.sentinels.length): Promise<boolean> {
  return waitFor(() => {
    const s = pool.stats().sentinels;
    return s.length >= n && s.every((x) => x.connected);
  }, `all ${n} subscriber loops to be connected`);
}

beforeAll(async () => {
  topo = await startSentinel({
    downAfterMs: 1000,
    failoverTimeoutMs: 5000,
    // A least-privilege sentinel user that may not SUBSCRIBE (for the polling fallback test).
    sentinelAcl: [`user ${WATCHER.user} on >${WATCHER.password} ~* &* +@all -subscribe -psubscribe`],
  });
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

afterAll(async () => {
  await topo?.stop();
});

describe('discovery', () => {
  it('finds the master the sentinels name, checks it with ROLE, and learns the sentinels it was not given', async () => {
    const pool = await create([topo.sentinelAddresses[0]!]);
    const log = new EventLog(pool);
    const current = await topo.currentMaster();
    expect(pool.master()).toEqual(current);
    expect(await roleOf(pool.master())).toBe('master');

    await pool.set('discovery:k', 'v1');
    expect(await sendCommand(current, ['GET', 'discovery:k'])).toBe('v1');
    expect(await pool.get('discovery:k')).toBe('v1');

    // SENTINEL sentinels adds the two sentinels we did not list; each gets its own loop.
    await watchersUp(pool, 3);
    const listed = pool.stats().sentinels.map((s) => fmt(s.address)).sort();
    expect(listed).toEqual(topo.sentinelAddresses.map(fmt).sort());
    await waitFor(() => log.up.length >= 3, 'a sentinel-up event per sentinel');
    expect(log.up.every((u) => u.info.reconnected === false)).toBe(true);
    expect(log.down).toEqual([]);

    const stats = pool.stats();
    expect(stats).toMatchObject({ masterName: topo.masterName, role: 'master', gate: 'open', fenced: false, queued: 0, switches: 0, closed: false });
    expect(stats.master).toEqual(current);
    expect(log.failover).toEqual([]);
  });

  it('rejects an unknown master name with MasterNotMonitoredError', async () => {
    const r = await settle(SentinelPool.create('no-such-master', topo.sentinelAddresses));
    expect(r.ok).toBe(false);
    const err = (r as { error: unknown }).error;
    expect(err).toBeInstanceOf(MasterNotMonitoredError);
    expect((err as MasterNotMonitoredError).masterName).toBe('no-such-master');
    expect((err as Error).message).toContain('no-such-master');
  });

  it('rejects with AllSentinelsDownError carrying one error per sentinel when none can be reached', async () => {
    const dead = [await freePort(), await freePort(), await freePort()].map((port) => ({ host: '127.0.0.1', port }));
    const started = Date.now();
    const r = await settle(SentinelPool.create(topo.masterName, dead, { sentinelTimeout: 300 }));
    expect(r.ok).toBe(false);
    const err = (r as { error: unknown }).error as AllSentinelsDownError;
    expect(err).toBeInstanceOf(AllSentinelsDownError);
    expect(err).toBeInstanceOf(AggregateError);
    expect(err.errors).toHaveLength(dead.length);
    for (const e of err.errors) {
      expect(e).toBeInstanceOf(Error);
      expect(e).toBeInstanceOf(ConnectionError);
    }
    for (const a of dead) expect(err.message).toContain(fmt(a));
    expect(err.tried.map(fmt)).toEqual(dead.map(fmt));
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a sentinel that accepts connections but never answers times out on its own (sentinelTimeout) and counts as down', async () => {
    // A hung sentinel: it accepts the connection and never writes a byte.
    const mute = await startFakeServer(() => null);
    fakes.push({ server: mute, address: mute.address, subscribers: 0, publish: () => {}, close: () => mute.close() });
    const dead = { host: '127.0.0.1', port: await freePort() };
    const started = Date.now();
    const r = await settle(SentinelPool.create(topo.masterName, [mute.address, dead], { sentinelTimeout: 300 }));
    const elapsed = Date.now() - started;
    expect(r.ok).toBe(false);
    const err = (r as { error: unknown }).error as AllSentinelsDownError;
    expect(err).toBeInstanceOf(AllSentinelsDownError);
    expect(err.errors).toHaveLength(2);
    expect(err.errors[0]).toBeInstanceOf(TimeoutError);
    expect(err.errors[1]).toBeInstanceOf(ConnectionError);
    expect(elapsed).toBeLessThan(3000);
  });

  it('a sentinel down at start: create() succeeds through the others and the dead one is reported by sentinel-down', async () => {
    const dead = { host: '127.0.0.1', port: await freePort() };
    const pool = await create([dead, ...topo.sentinelAddresses], { resubscribe: { initialDelay: 100, maxDelay: 1000 } });
    const log = new EventLog(pool);
    expect(pool.master()).toEqual(await topo.currentMaster());
    await pool.set('down-at-start:k', 'v');
    expect(await pool.get('down-at-start:k')).toBe('v');

    await waitFor(() => log.down.some((d) => sameAddr(d.info.address, dead)), 'a sentinel-down event for the dead sentinel');
    const downs = log.down.filter((d) => sameAddr(d.info.address, dead));
    for (const d of downs) expect(d.info.error).toBeInstanceOf(Error);
    // Only the dead one is reported down; the real ones come up.
    expect(log.down.every((d) => sameAddr(d.info.address, dead))).toBe(true);
    await waitFor(() => topo.sentinelAddresses.every((a) => log.up.some((u) => sameAddr(u.info.address, a))), 'sentinel-up for every live sentinel');
    const deadStat = pool.stats().sentinels.find((s) => sameAddr(s.address, dead));
    expect(deadStat?.connected).toBe(false);
    // Its loop backs off instead of spinning.
    await waitFor(() => log.reconnect.filter((e) => sameAddr(e.info.address, dead)).length >= 3, 'three reconnect attempts to the dead sentinel');
    const delays = log.reconnect.filter((e) => sameAddr(e.info.address, dead)).map((e) => e.info.delay);
    expect(delays.every((d) => d > 0)).toBe(true);
  });
});

describe('input validation', () => {
  it('fails at once with a TypeError naming the bad input, before contacting any sentinel', async () => {
    const fake = await startFakeSentinel(() => null);
    fakes.push(fake);
    const ok = [fake.address];
    const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['empty name', () => SentinelPool.create('', ok), /masterName/],
      ['blank name', () => SentinelPool.create('   ', ok), /masterName/],
      ['non-string name', () => SentinelPool.create(42 as unknown as string, ok), /masterName/],
      ['empty list', () => SentinelPool.create('mymaster', []), /sentinels/],
      ['not a list', () => SentinelPool.create('mymaster', 'localhost:26379' as unknown as Address[]), /sentinels/],
      ['port 0', () => SentinelPool.create('mymaster', [...ok, '127.0.0.1:0']), /sentinels\[1\]/],
      ['port too big', () => SentinelPool.create('mymaster', ['127.0.0.1:70000']), /sentinels\[0\]/],
      ['no port', () => SentinelPool.create('mymaster', ['localhost']), /sentinels\[0\]/],
      ['object port', () => SentinelPool.create('mymaster', [{ host: '127.0.0.1', port: -1 }]), /sentinels\[0\]\.port/],
      ['unknown option', () => SentinelPool.create('mymaster', ok, { pollIntervall: 5 } as SentinelOptions), /pollIntervall/],
      ['unknown nested option', () => SentinelPool.create('mymaster', ok, { resubscribe: { initialDelai: 5 } } as unknown as SentinelOptions), /resubscribe\.initialDelai/],
      ['bad role', () => SentinelPool.create('mymaster', ok, { role: 'slave' as 'replica' }), /role/],
      ['bad sentinelTimeout', () => SentinelPool.create('mymaster', ok, { sentinelTimeout: 0 }), /sentinelTimeout/],
      ['bad queueTimeout', () => SentinelPool.create('mymaster', ok, { queueTimeout: -1 }), /queueTimeout/],
      ['bad sentinelPassword', () => SentinelPool.create('mymaster', ok, { sentinelPassword: 5 as unknown as string }), /sentinelPassword/],
    ];
    for (const [label, run, pattern] of cases) {
      const started = Date.now();
      const r = await settle(run());
      expect(r.ok, label).toBe(false);
      const err = (r as { error: unknown }).error as Error;
      expect(err, `${label}: ${String(err)}`).toBeInstanceOf(TypeError);
      expect(err.message, label).toMatch(pattern);
      expect(Date.now() - started, label).toBeLessThan(200);
    }
    expect(fake.server.connections).toBe(0);
  });
});

describe('replica reads', () => {
  it("role: 'replica' serves reads from both healthy replicas, balanced, and never from the master", async () => {
    const master = await topo.currentMaster();
    const writer = await create();
    const reader = await create(topo.sentinelAddresses, { role: 'replica', clientName: 'replica-reader' });
    const replicas = topo.dataNodes.filter((n) => !sameAddr(n.address, master)).map((n) => n.address);
    expect(replicas).toHaveLength(2);

    const stats = reader.stats();
    expect(stats.role).toBe('replica');
    expect(stats.replicas).toHaveLength(2);
    expect(stats.replicas.map(fmt).sort()).toEqual(replicas.map(fmt).sort());

    await writer.set('replica-reads:k', 'replicated');
    // Both replicas, not just the one the next read happens to hit (round robin would then read a lagging one).
    await waitFor(async () => (await Promise.all(replicas.map((r) => sendCommand(r, ['GET', 'replica-reads:k'])))).every((v) => v === 'replicated'), 'the write to reach both replicas');

    const before = await Promise.all([master, ...replicas].map(async (a) => (await commandCalls(a)).get('get') ?? 0));
    const N = 40;
    for (let i = 0; i < N; i++) expect(await reader.get('replica-reads:k')).toBe('replicated');
    const after = await Promise.all([master, ...replicas].map(async (a) => (await commandCalls(a)).get('get') ?? 0));
    const delta = after.map((v, i) => v - before[i]!);
    console.log(`replica reads: GET calls master +${delta[0]}, replicas +${delta[1]} / +${delta[2]}`);
    expect(delta[0]).toBe(0);
    expect(delta[1]! + delta[2]!).toBe(N);
    // Round robin: both replicas serve a fair share.
    expect(Math.min(delta[1]!, delta[2]!)).toBeGreaterThanOrEqual(N / 4);

    // The reader's data connections are on the replicas, none on the master.
    const named = async (a: NodeAddress) => (await clientList(a)).filter((c) => c.get('name') === 'replica-reader').length;
    expect(await named(master)).toBe(0);
    for (const r of replicas) expect(await named(r)).toBeGreaterThanOrEqual(1);
  });
});

describe('stale sentinel messages', () => {
  it('a stale +switch-master naming a replica (from a scripted sentinel) does not move the pool', async () => {
    const current = await topo.currentMaster();
    const replica = topo.dataNodes.find((n) => !sameAddr(n.address, current))!.address;
    // The scripted sentinel is stale through and through: it also names the replica as master.
    const fake = await startFakeSentinel(() => replica);
    fakes.push(fake);
    const pool = await create([...topo.sentinelAddresses, fake.address]);
    const log = new EventLog(pool);
    await watchersUp(pool, 4);
    await waitFor(() => fake.subscribers >= 1, 'the pool to subscribe to the scripted sentinel');

    const load = startWrites((k, v) => pool.set(k, v), 5, 'stale-switch');
    await load.waitForAcks(200, 'writes before the stale message');
    for (let i = 0; i < 3; i++) {
      const refreshes = pool.stats().refreshes;
      fake.publish('+switch-master', `${topo.masterName} ${current.host} ${current.port} ${replica.host} ${replica.port}`);
      // The hint is checked: the pool asks the sentinels again (and ROLE), then carries on.
      await waitFor(() => pool.stats().refreshes > refreshes && pool.stats().gate === 'open', 'the pool to re-check the master after the stale message');
      await load.waitForAcks(200, 'writes to keep flowing after the stale message');
    }
    await load.stop();

    expect(pool.master()).toEqual(current);
    expect(log.failover).toEqual([]);
    expect(load.failures.map((f) => String(f.error))).toEqual([]);
    expect(await roleOf(current)).toBe('master');
    // Every acknowledged write is on the real master.
    expect(await missingOn(current, load.acks)).toEqual([]);
  });

  it('a replayed old failover (stale +try-failover ... +switch-master naming a former master) neither moves the pool nor holds its writes', async () => {
    const current = await topo.currentMaster();
    // The replay describes an old failover from a node that is a replica now to the current master.
    const former = topo.dataNodes.find((n) => !sameAddr(n.address, current))!.address;
    const fake = await startFakeSentinel(() => current);
    fakes.push(fake);
    const pool = await create([...topo.sentinelAddresses, fake.address]);
    const log = new EventLog(pool);
    await watchersUp(pool, 4);
    await waitFor(() => fake.subscribers >= 1, 'the pool to subscribe to the scripted sentinel');

    const m = `${topo.masterName} ${former.host} ${former.port}`;
    const slave = `slave ${fmt(current)} ${current.host} ${current.port} @ ${m}`;
    const replay: Array<[string, string]> = [
      ['+try-failover', `master ${m}`],
      ['+elected-leader', `master ${m}`],
      ['+failover-state-select-slave', `master ${m}`],
      ['+selected-slave', slave],
      ['+failover-state-send-slaveof-noone', slave],
      ['+failover-state-wait-promotion', slave],
      ['+promoted-slave', slave],
      ['+failover-state-reconf-slaves', `master ${m}`],
      ['+failover-end', `master ${m}`],
      ['+switch-master', `${m} ${current.host} ${current.port}`],
    ];
    const refreshes = pool.stats().refreshes;
    for (const [channel, payload] of replay) fake.publish(channel, payload);
    await waitFor(() => pool.stats().refreshes > refreshes, 'the pool to react to the replayed messages');

    const started = Date.now();
    const r = await settle(pool.with({ timeout: 3000 }).set('replayed-failover:k', 'v'));
    const elapsed = Date.now() - started;
    const fenceInfo = `failover-start events: ${JSON.stringify(log.failoverStart.map((e) => ({ event: e.info.event, master: fmt(e.info.master) })))}; stats: gate=${pool.stats().gate} fenced=${pool.stats().fenced}`;
    expect(r.ok, `a write right after the replay should succeed, got ${r.ok ? '' : String((r as { error: unknown }).error)} after ${elapsed} ms; ${fenceInfo}`).toBe(true);
    expect(elapsed, fenceInfo).toBeLessThan(1000);
    expect(pool.master()).toEqual(current);
    expect(log.failover).toEqual([]);
  });
});

describe('close()', () => {
  it('leaves nothing open: a child process that creates a pool, writes and closes exits by itself', async () => {
    const script = fileURLToPath(new URL('../fixtures/sentinel-close-child.ts', import.meta.url));
    const cwd = fileURLToPath(new URL('../..', import.meta.url));
    const args = ['--import', 'tsx', script, topo.masterName, ...topo.sentinelAddresses.map(fmt)];
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const started = Date.now();
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; timedOut: boolean }>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: null, signal: 'SIGKILL', timedOut: true });
      }, 20_000);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, timedOut: false });
      });
    });
    const lines = stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    console.log(`close() child: exit ${JSON.stringify(exit)} after ${Date.now() - started} ms\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
    expect(exit.timedOut, `the child did not exit within 20 s after close(); stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(false);
    expect(exit.code, `stderr:\n${stderr}`).toBe(0);
    const closed = lines.find((l) => l.phase === 'closed');
    expect(closed, stdout).toBeDefined();
    expect(closed!.value).toBe('x');
    expect(closed!.watchersUp).toBe(3);
    const beforeExit = lines.find((l) => l.phase === 'beforeExit');
    expect(beforeExit, 'the child reached beforeExit (its event loop drained)').toBeDefined();
    expect(beforeExit!.afterCloseMs as number).toBeLessThan(5000);
  });
});

describe('failover', () => {
  it('SENTINEL FAILOVER under 50 concurrent idempotent writers: no failed command, one failover event, no write acknowledged by the old master after it', async () => {
    const from = await topo.currentMaster();
    const pool = await create(topo.sentinelAddresses, { clientName: 'fo-load' });
    const log = new EventLog(pool);
    await watchersUp(pool);

    const view = pool.with({ idempotent: true });
    const load = startWrites((k, v) => view.set(k, v), 50, 'fo');
    let acksAtEvent = -1;
    let oldSetsAtEvent: Promise<number> | undefined;
    log.onFailover = () => {
      acksAtEvent = load.acks.length;
      oldSetsAtEvent = commandCalls(from).then((c) => c.get('set') ?? 0);
    };
    await load.waitForAcks(3000, 'writes before the failover');

    const t0 = Date.now();
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    await waitFor(() => log.failover.length >= 1, 'the failover event', 30_000);
    const to = await topo.waitForNewMaster(from);
    await load.waitForAcks(3000, 'writes after the failover event');
    await load.stop();
    const oldSetsAtEnd = (await commandCalls(from)).get('set') ?? 0;
    const oldRoleAtEnd = await roleOf(from);

    // The dust settles: the old master is demoted and resynced, every sentinel agrees.
    const settled = await waitSettled(topo, 2);
    expect(settled).toEqual(to);

    const ev = log.failover[0]!;
    const lost = await missingOn(to, load.acks);
    const afterEvent = load.acks.slice(acksAtEvent);
    const lostAfterEvent = await missingOn(to, afterEvent);
    const readonly = load.failures.filter((f) => isReadonly(f.error));
    const firstAckAfter = afterEvent[0];
    console.log(
      `SENTINEL FAILOVER under load: ${load.acks.length} acknowledged writes, ${load.failures.length} failed, ` +
        `LOST (acknowledged but missing on the new master): ${lost.length}; ` +
        `fence at +${log.failoverStart[0] ? log.failoverStart[0].at - t0 : NaN} ms (${log.failoverStart[0]?.info.event}), ` +
        `failover event at +${ev.at - t0} ms (${log.describeFailovers()}), first ack after it at +${firstAckAfter ? firstAckAfter.at - t0 : NaN} ms; ` +
        `old master SET calls after the event: ${oldSetsAtEnd - (await oldSetsAtEvent!)} (role then: ${oldRoleAtEnd}); ` +
        `failover-abort events: ${log.failoverAbort.length}`,
    );

    expect(load.failures.map((f) => String(f.error)).slice(0, 5)).toEqual([]);
    expect(readonly).toEqual([]);
    expect(log.failover).toHaveLength(1);
    // The leader was heard (the fence engaged first); the switch itself comes from whichever sees
    // the promotion first: the fence's candidate check or +promoted-slave, or the replica watch.
    expect(['pubsub', 'promotion']).toContain(ev.info.detectedBy);
    expect(ev.info).toMatchObject({ fenced: true, blindMs: 0 });
    expect(ev.info.from).toEqual(from);
    expect(ev.info.to).toEqual(to);
    expect(ev.info.masterName).toBe(topo.masterName);
    expect(pool.master()).toEqual(to);
    expect(log.failoverStart.length).toBeGreaterThanOrEqual(1);
    // No write acknowledged after the event came from the old master: all of them are on the new one,
    expect(afterEvent.length).toBeGreaterThan(0);
    expect(lostAfterEvent.map((a) => a.key)).toEqual([]);
    // and the old master executed no SET after the event (it was still a master then).
    if (oldRoleAtEnd === 'master') expect(oldSetsAtEnd - (await oldSetsAtEvent!)).toBe(0);
    // The pool's connections to the old master are gone.
    expect((await clientList(from)).filter((c) => c.get('name') === 'fo-load')).toEqual([]);
    // The write fence keeps the loss near zero (peers lose thousands here).
    expect(lost.length).toBeLessThanOrEqual(Math.max(5, Math.ceil(load.acks.length * 0.001)));
  });

  it('a sentinel ACL user without SUBSCRIBE: each sentinel is polled instead (said once), and a SENTINEL FAILOVER is still followed', async () => {
    const from = await topo.currentMaster();
    // watchReplicas off: the test is about polling (the replica watch would see the promotion first).
    const pool = await create(topo.sentinelAddresses, { sentinelUsername: WATCHER.user, sentinelPassword: WATCHER.password, watchReplicas: false });
    const log = new EventLog(pool);
    await waitFor(() => log.polling.length >= 3, 'a sentinel-polling event per sentinel');
    await watchersUp(pool);
    for (const a of topo.sentinelAddresses) {
      const mine = log.polling.filter((p) => sameAddr(p.info.address, a));
      expect(mine, fmt(a)).toHaveLength(1);
      expect(mine[0]!.info.error.message).toMatch(/NOPERM/);
    }
    expect(pool.stats().sentinels.every((s) => s.polling)).toBe(true);
    await pool.set('acl:before', '1');

    const t0 = Date.now();
    expect(await topo.sentinels[1]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    const to = await topo.waitForNewMaster(from);
    await waitFor(() => log.failover.length >= 1, 'the pool to follow the failover', 20_000);
    const ev = log.failover[0]!;
    console.log(`ACL polling: failover followed after ${ev.at - t0} ms, ${log.describeFailovers()}`);
    expect(['poll', 'reconnect', 'readonly']).toContain(ev.info.detectedBy);
    expect(ev.info.to).toEqual(to);
    expect(pool.master()).toEqual(to);
    await pool.set('acl:after', '2');
    expect(await sendCommand(to, ['GET', 'acl:after'])).toBe('2');
    // Still said only once per sentinel.
    expect(log.polling).toHaveLength(3);
    expect(log.failover).toHaveLength(1);
  });
});
