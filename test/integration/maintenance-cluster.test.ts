/**
 * Maintenance notifications on a ClusterPool against a real cluster: the opt-in as real Redis 7
 * nodes answer it, and SMIGRATING/SMIGRATED around a real slot migration (IMPORTING/MIGRATING,
 * MIGRATE of the keys, SETSLOT NODE) under write load, with a proxy in front of every master
 * playing the managed endpoint that sends the notifications (test/support/maint-proxy.ts; every
 * command runs on the real nodes). The slot map follows SMIGRATED at once: no command earns a
 * MOVED, none fails, none runs twice.
 */
import dc from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, ConnectionError, DIAGNOSTICS_CHANNELS, keySlot, RedisError, type MaintenanceEvent, type RedirectDiagnostic } from '../../src/index.js';
import { MaintProxy, type PushItem } from '../support/maint-proxy.js';
import { sendCommand } from '../support/mini-client.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';

let topo: ClusterTopology;

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
});
afterAll(async () => {
  await topo?.stop();
});

/** SET calls a node executed since its last CONFIG RESETSTAT. */
async function setCalls(node: ServerHandle): Promise<number> {
  const m = /cmdstat_set:calls=(\d+)/.exec(await node.cli('INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

const key = (n: ServerHandle) => `${n.host}:${n.port}`;

describe('the opt-in on a cluster, as real Redis 7 nodes answer it', () => {
  it("'auto' works on RESP3; 'enabled' fails create() with the refusal", async () => {
    const pool = await ClusterPool.create(topo.seeds, { protocol: 3 });
    try {
      await pool.set('maint:cluster:auto', 'v');
      expect(await pool.get('maint:cluster:auto')).toBe('v');
    } finally {
      await pool.close();
    }
    const err = await ClusterPool.create(topo.seeds, { protocol: 3, maintNotifications: 'enabled' }).then(
      async (p) => {
        await p.close();
        throw new Error('create() should have failed');
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(/refused maintenance notifications.*unknown subcommand.*maintNotifications: 'auto'/is);
    expect((err as Error).cause).toBeInstanceOf(RedisError);
  });
});

describe('SMIGRATING / SMIGRATED around a real slot migration', () => {
  it('relaxes, then moves the slot in the map at once: 0 MOVED, 0 failed, 0 run twice', async () => {
    const masters = await topo.masters();
    const proxies = new Map<string, MaintProxy>();
    for (const m of masters) proxies.set(key(m), await MaintProxy.start(m.address));
    const natMap = Object.fromEntries(masters.map((m) => [key(m), `127.0.0.1:${proxies.get(key(m))!.address.port}`]));
    const pool = await ClusterPool.create([...proxies.values()].map((p) => p.address), { protocol: 3, natMap });
    const redirects: RedirectDiagnostic[] = [];
    const onRedirect = (m: unknown) => void redirects.push(m as RedirectDiagnostic);
    dc.subscribe(DIAGNOSTICS_CHANNELS.redirect, onRedirect);
    try {
      const moved: unknown[] = [];
      const asked: unknown[] = [];
      const events: MaintenanceEvent[] = [];
      pool.on('moved', (e) => moved.push(e));
      pool.on('ask', (e) => asked.push(e));
      pool.on('maintenance', (e) => events.push(e));

      const tag = '{maint-slot}';
      const slot = keySlot(tag);
      const source = await topo.nodeForSlot(slot);
      const target = masters.find((m) => m.port !== source.port)!;
      const sourceProxy = proxies.get(key(source))!;
      const targetProxy = proxies.get(key(target))!;
      await Promise.all(masters.map((m) => m.cli('CONFIG', 'RESETSTAT')));

      // Writers on keys of the migrating slot, plus reads of what they wrote.
      let acked = 0;
      const failures: unknown[] = [];
      let running = true;
      const writers = Promise.all(Array.from({ length: 10 }, async (_, w) => {
        for (let i = 0; running; i++) {
          try {
            await pool.set(`${tag}:${w}:${i}`, String(i));
            acked++;
            if (i % 10 === 0 && (await pool.get(`${tag}:${w}:${i}`)) !== String(i)) failures.push(new Error(`read back ${w}:${i}`));
          } catch (e) {
            failures.push(e);
          }
        }
      }));
      await waitFor(() => acked >= 1000, 'the load to run');

      // 1. The endpoint announces the move: timeouts relax on the source's connections.
      const starting = sourceProxy.inject(['SMIGRATING', 500, String(slot)]);
      expect(starting).toBeGreaterThan(0);
      await waitFor(() => pool.stats().maintenance.relaxedNow >= 1, 'the source connection to relax');

      // 2. The real migration, keys and all, while the writers go on.
      const sourceId = await source.cli('CLUSTER', 'MYID');
      const targetId = await target.cli('CLUSTER', 'MYID');
      await target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
      await source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
      for (;;) {
        const left = (await source.cli('CLUSTER', 'GETKEYSINSLOT', String(slot), '1000')).split('\n').filter(Boolean);
        if (left.length === 0) break;
        await source.cli('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...left);
      }
      // 3. The target owns the slot; the endpoint says so at once (every source connection gets a copy).
      await sendCommand(target.address, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
      const migrated: PushItem[] = ['SMIGRATED', 501, [[key(source), key(target), String(slot)]]];
      const copies = sourceProxy.inject(migrated) + sourceProxy.inject(migrated);
      await waitFor(() => pool.stats().maintenance.slotMapUpdates === 1, 'the slot map update');
      // 4. The rest of the cluster learns it.
      await source.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
      for (const m of masters) if (m !== source && m !== target) await m.cli('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);

      const there = targetProxy.commands.get('SET') ?? 0;
      await waitFor(() => (targetProxy.commands.get('SET') ?? 0) >= there + 1000, 'writes to the new owner');
      running = false;
      await writers;

      expect(failures).toEqual([]);
      expect(moved).toEqual([]);
      expect(redirects.filter((r) => r.kind === 'moved')).toEqual([]);
      expect(pool.stats().redirects.moved).toBe(0);
      const executed = (await Promise.all(masters.map(setCalls))).reduce((a, b) => a + b, 0);
      expect(executed).toBe(acked);
      const m = pool.stats().maintenance;
      expect(m).toMatchObject({ slotMapUpdates: 1, relaxedNow: 0, ignored: 0, handoffs: 0 });
      expect(m.notifications).toBe(starting + copies);
      expect(events.map((e) => e.kind)).toEqual(['SMIGRATING', ...Array<string>(copies).fill('SMIGRATED')]);
      expect(events[0]!.address).toEqual(sourceProxy.address);
      expect(pool.nodes().length).toBe(3);
      // Keys of the slot now live on the target, and the pool sends them there.
      expect(await pool.get(`${tag}:0:0`)).toBe('0');
      console.log(
        `[maintenance] SMIGRATING/SMIGRATED around a real migration of slot ${slot} under 10 writers: ${acked} SETs acknowledged = ${executed} executed, ` +
          `${failures.length} failed, ${moved.length} MOVED, ${asked.length} ASK (keys already migrated while the slot was MIGRATING), ${copies} SMIGRATED copies -> 1 map update`,
      );
    } finally {
      dc.unsubscribe(DIAGNOSTICS_CHANNELS.redirect, onRedirect);
      await pool.close();
      await Promise.all([...proxies.values()].map((p) => p.close()));
    }
  });
});
