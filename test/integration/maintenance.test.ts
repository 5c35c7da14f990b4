/**
 * Maintenance notifications on a StandalonePool against a real redis-server: the opt-in as
 * real Redis 7 answers it ('auto' goes on, 'enabled' fails create() clearly), and through a
 * proxy that plays a managed endpoint (test/support/maint-proxy.ts: it accepts the opt-in and
 * injects the pushes; every command still runs on the real server): MIGRATING/MIGRATED relax
 * and restore the timeouts around a command that outlasts them, and malformed or unknown
 * notifications are ignored and counted without harm.
 */
import dc from 'node:diagnostics_channel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError, DIAGNOSTICS_CHANNELS, RedisError, StandalonePool, TimeoutError, UncertainWriteError, type MaintenanceDiagnostic, type MaintenanceEvent,
} from '../../src/index.js';
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

describe('the opt-in, as real Redis 7 answers it', () => {
  it("'auto' (the default) sends it on RESP3 connections, takes the refusal and works", async () => {
    const proxy = track(await MaintProxy.start(topo.address, { optIn: 'forward' }));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3 }));
    await pool.set('maint:auto', 'v');
    expect(await pool.get('maint:auto')).toBe('v');
    // It was asked, and the real server said no: nothing failed.
    expect(proxy.optIns.length).toBeGreaterThan(0);
    expect(proxy.connections.every((c) => !c.optedIn)).toBe(true);
    expect(pool.stats().maintenance).toEqual({ notifications: 0, ignored: 0, relaxedNow: 0, handoffs: 0, slotMapUpdates: 0 });
  });

  it("'auto' directly against the server, and without RESP3 nothing is sent", async () => {
    const direct = track(await StandalonePool.create(topo.address, { protocol: 3, maintNotifications: 'auto' }));
    expect(await direct.call('PING')).toBe('PONG');
    const proxy = track(await MaintProxy.start(topo.address));
    const resp2 = track(await StandalonePool.create(proxy.address));
    await resp2.set('maint:resp2', '1');
    expect(proxy.optIns).toEqual([]);
  });

  it("'enabled' fails create() with a ConnectionError that says why and what to do, keeping the server's reply as cause", async () => {
    const err = await StandalonePool.create(topo.address, { protocol: 3, maintNotifications: 'enabled' }).then(
      (p) => {
        track(p);
        throw new Error('create() should have failed');
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(new RegExp(`${topo.address.host}:${topo.address.port} refused maintenance notifications`));
    expect((err as Error).message).toMatch(/unknown subcommand/i);
    expect((err as Error).message).toMatch(/Redis Software 8\.0\.2\+, Redis Cloud.*maintNotifications: 'auto'/);
    expect((err as Error).cause).toBeInstanceOf(RedisError);
  });

  it('a managed endpoint accepts it: the endpoint type is inferred (127.0.0.1: internal-ip) or the one set', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3, maintNotifications: 'enabled' }));
    await pool.set('maint:enabled', '1');
    expect(proxy.optIns[0]).toBe('internal-ip');
    expect(proxy.connections.every((c) => c.optedIn)).toBe(true);
    const named = track(await StandalonePool.create({ host: 'localhost', port: proxy.address.port }, { protocol: 3, maintEndpointType: 'none' }));
    await named.get('maint:enabled');
    expect(proxy.optIns.at(-1)).toBe('none');
  });
});

describe('MIGRATING / MIGRATED: timeouts relaxed while a shard migrates, restored after', () => {
  it('a command that outlasts commandTimeout succeeds during the migration, and times out again after it', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3, commandTimeout: 200, maintRelaxedTimeout: 5000 }));
    const events: MaintenanceEvent[] = [];
    pool.on('maintenance', (e) => events.push(e));
    const diag: MaintenanceDiagnostic[] = [];
    const onDiag = (m: unknown) => void diag.push(m as MaintenanceDiagnostic);
    dc.subscribe(DIAGNOSTICS_CHANNELS.maintenance, onDiag);
    try {
      // The normal timeout binds: DEBUG SLEEP 0.5 outlasts 200 ms.
      await expect(pool.call('DEBUG', 'SLEEP', '0.5')).rejects.toBeInstanceOf(TimeoutError);

      expect(proxy.inject(['MIGRATING', 21, 1, ['shard-1']])).toBe(1);
      await waitFor(() => pool.stats().maintenance.relaxedNow === 1, 'the lane to relax');
      const started = Date.now();
      expect(await pool.call('DEBUG', 'SLEEP', '0.5')).toBe('OK');
      const tookMs = Date.now() - started;
      // Per-call timeouts are raised too (never lowered: a longer one would stay).
      expect(await pool.with({ timeout: 100 }).call('DEBUG', 'SLEEP', '0.3')).toBe('OK');

      // The end notice carries its own sequence number: matched by kind.
      expect(proxy.inject(['MIGRATED', 22, ['shard-1']])).toBe(1);
      await waitFor(() => pool.stats().maintenance.relaxedNow === 0, 'the lane to be restored');
      await expect(pool.call('DEBUG', 'SLEEP', '0.5')).rejects.toBeInstanceOf(TimeoutError);

      expect(events.map((e) => [e.kind, e.seq])).toEqual([['MIGRATING', 21], ['MIGRATED', 22]]);
      expect(events[0]).toEqual({ kind: 'MIGRATING', seq: 21, timeS: 1, address: proxy.address });
      expect(diag.map((d) => [d.kind, d.mode])).toEqual([['MIGRATING', 'standalone'], ['MIGRATED', 'standalone']]);
      expect(pool.stats().maintenance).toMatchObject({ notifications: 2, ignored: 0, relaxedNow: 0 });
      console.log(`[maintenance] DEBUG SLEEP 0.5 with commandTimeout 200 during MIGRATING: succeeded in ${tookMs} ms; before and after: TimeoutError`);
    } finally {
      dc.unsubscribe(DIAGNOSTICS_CHANNELS.maintenance, onDiag);
    }
  });

  it('a command already in flight when the notice arrives is relaxed as well', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3, maintRelaxedTimeout: 5000 }));
    await pool.call('PING');
    const before = proxy.commands.get('DEBUG') ?? 0;
    const slow = pool.with({ timeout: 800 }).call('DEBUG', 'SLEEP', '1.2');
    await waitFor(() => (proxy.commands.get('DEBUG') ?? 0) > before, 'DEBUG to reach the server', 5000, 5);
    proxy.inject(['FAILING_OVER', 31, 1, ['shard-1']]);
    expect(await slow).toBe('OK');
    proxy.inject(['FAILED_OVER', 32, ['shard-1']]);
    await waitFor(() => pool.stats().maintenance.relaxedNow === 0, 'the lane to be restored');
  });

  it('the socket timeout is relaxed too: a silent server does not cost the connection during a maintenance', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3, commandTimeout: 0, socketTimeout: 300, maintRelaxedTimeout: 5000 }));
    const err = await pool.call('DEBUG', 'SLEEP', '0.6').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect(((err as Error).cause as Error).message).toMatch(/socketTimeout 300 ms/);
    // The server sleeps on: a new connection's handshake may meet the same silence until it wakes.
    await waitFor(() => pool.call('PING').then(() => true), 'the server to answer again');
    proxy.inject(['MIGRATING', 41, 0, []]);
    await waitFor(() => pool.stats().maintenance.relaxedNow === 1, 'the lane to relax');
    expect(await pool.call('DEBUG', 'SLEEP', '0.6')).toBe('OK');
    proxy.inject(['MIGRATED', 42, []]);
    await waitFor(() => pool.stats().maintenance.relaxedNow === 0, 'the lane to be restored');
  });

  it('overlapping maintenances of two kinds: relaxed until both ended, whatever the order of the end notices', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3, commandTimeout: 200, maintRelaxedTimeout: 5000 }));
    await pool.call('PING');
    proxy.inject(['MIGRATING', 1, 1, []]);
    proxy.inject(['FAILING_OVER', 2, 1, []]);
    proxy.inject(['MIGRATED', 3, []]);
    await waitFor(() => pool.stats().maintenance.notifications === 3, 'three notices');
    expect(pool.stats().maintenance.relaxedNow).toBe(1);
    expect(await pool.call('DEBUG', 'SLEEP', '0.4')).toBe('OK');
    proxy.inject(['FAILED_OVER', 4, []]);
    await waitFor(() => pool.stats().maintenance.relaxedNow === 0, 'the lane to be restored');
    await expect(pool.call('DEBUG', 'SLEEP', '0.4')).rejects.toBeInstanceOf(TimeoutError);
  });
});

describe('malformed and unknown notifications', () => {
  it('are ignored and counted; the connection, its commands and the pool go on', async () => {
    const proxy = track(await MaintProxy.start(topo.address));
    const pool = track(await StandalonePool.create(proxy.address, { protocol: 3 }));
    const events: MaintenanceEvent[] = [];
    const closes: unknown[] = [];
    const errors: unknown[] = [];
    pool.on('maintenance', (e) => events.push(e));
    pool.on('close', (e) => closes.push(e));
    pool.on('error', (e) => errors.push(e));
    await pool.set('maint:malformed', 'before');
    // Commands in flight while the junk arrives.
    const load = Promise.all(Array.from({ length: 200 }, (_, i) => pool.set(`maint:malformed:${i}`, String(i))));
    proxy.inject(['MOVING', 'soon']); // no time, no address
    proxy.inject(['MOVING', 5, 15, 'no-port-here']);
    proxy.inject(['SMIGRATED', 6]); // no entries
    proxy.inject(['SMIGRATING', 7, '99999']); // slot out of range
    proxy.inject(['MIGRATED', -3]); // negative sequence number
    proxy.inject(['MAINTENANCE_NEXT', 8, 'x']); // a type this library does not know
    proxy.inject(['MIGRATED', 9, []]); // well-formed, nothing open: harmless
    await load;
    await waitFor(() => pool.stats().maintenance.ignored + pool.stats().maintenance.notifications === 7, 'every notice to be seen');
    expect(pool.stats().maintenance).toEqual({ notifications: 1, ignored: 6, relaxedNow: 0, handoffs: 0, slotMapUpdates: 0 });
    expect(events.map((e) => e.kind)).toEqual(['MIGRATED']);
    expect(await pool.get('maint:malformed')).toBe('before');
    expect(await pool.get('maint:malformed:199')).toBe('199');
    expect(pool.address).toEqual(proxy.address);
    expect(closes).toEqual([]);
    expect(errors).toEqual([]);
  });
});
