/**
 * Maintenance notifications on a SentinelPool against a real Sentinel deployment: the master
 * is reached through a proxy that plays a managed endpoint (natMap real -> proxy), which
 * injects MIGRATING/MIGRATED and a malformed notice. The timeouts of the master's connections
 * relax and come back, `stats().maintenance` and the `redis-ha-pool:maintenance` channel
 * report it, a malformed notice is only counted.
 */
import dc from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, DIAGNOSTICS_CHANNELS, SentinelPool, TimeoutError, type MaintenanceDiagnostic } from '../../src/index.js';
import { MaintProxy } from '../support/maint-proxy.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let proxy: MaintProxy;

beforeAll(async () => {
  topo = await startSentinel({ replicas: 1 });
  proxy = await MaintProxy.start(topo.master.address);
});
afterAll(async () => {
  await proxy?.close();
  await topo?.stop();
});

describe('SentinelPool', () => {
  it("'enabled' against real Redis 7 nodes fails create() with the refusal", async () => {
    const err = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { protocol: 3, maintNotifications: 'enabled' }).then(
      async (p) => {
        await p.close();
        throw new Error('create() should have failed');
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(/refused maintenance notifications.*unknown subcommand.*maintNotifications: 'auto'/is);
  });

  it('MIGRATING relaxes the master connections, MIGRATED restores them; reported in stats and on the channel', async () => {
    const natMap = { [`${topo.master.host}:${topo.master.port}`]: `127.0.0.1:${proxy.address.port}` };
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { protocol: 3, natMap, commandTimeout: 200, maintRelaxedTimeout: 5000 });
    const diag: MaintenanceDiagnostic[] = [];
    const onDiag = (m: unknown) => void diag.push(m as MaintenanceDiagnostic);
    dc.subscribe(DIAGNOSTICS_CHANNELS.maintenance, onDiag);
    const events: Array<{ kind: string; seq: number }> = [];
    pool.on('maintenance', (e) => events.push({ kind: e.kind, seq: e.seq }));
    try {
      expect(pool.master()).toEqual(proxy.address);
      await pool.set('maint:sentinel', '1');
      expect(proxy.optIns[0]).toBe('internal-ip');
      await expect(pool.call('DEBUG', 'SLEEP', '0.5')).rejects.toBeInstanceOf(TimeoutError);

      proxy.inject(['MIGRATING', 1, 1, ['shard-1']]);
      await waitFor(() => pool.stats().maintenance.relaxedNow >= 1, 'the master connection to relax');
      expect(await pool.call('DEBUG', 'SLEEP', '0.5')).toBe('OK');
      proxy.inject(['MIGRATING', 'not-a-number']);
      proxy.inject(['MIGRATED', 2, ['shard-1']]);
      await waitFor(() => pool.stats().maintenance.relaxedNow === 0, 'the master connection to be restored');
      await expect(pool.call('DEBUG', 'SLEEP', '0.5')).rejects.toBeInstanceOf(TimeoutError);

      const copies = proxy.connections.filter((c) => c.optedIn && c.isOpen).length;
      expect(pool.stats().maintenance).toMatchObject({ ignored: copies, relaxedNow: 0, handoffs: 0, slotMapUpdates: 0 });
      expect(diag.filter((d) => d.kind === 'MIGRATING').every((d) => d.mode === 'sentinel' && d.seq === 1)).toBe(true);
      expect(diag.map((d) => d.kind)).toContain('MIGRATED');
      // The pool's own event says the same as the channel.
      expect(events.filter((e) => e.kind === 'MIGRATING').every((e) => e.seq === 1)).toBe(true);
      expect(events.map((e) => e.kind)).toEqual(expect.arrayContaining(['MIGRATING', 'MIGRATED']));
      // The server still sleeps on the last DEBUG for a moment.
      await waitFor(async () => (await pool.get('maint:sentinel')) === '1', 'the key through the pool');
    } finally {
      dc.unsubscribe(DIAGNOSTICS_CHANNELS.maintenance, onDiag);
      await pool.close();
    }
  });
});
