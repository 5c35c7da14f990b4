/**
 * The client-side cache through a Sentinel failover and a live Cluster slot migration, against
 * real processes, with the writer on a separate pool: after the writer's SET is acknowledged
 * and the reader made a PING round trip, the reader never returns a value older than the
 * write. The Sentinel switch flushes the cache before the `failover` event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, keySlot, SentinelPool } from '../../src/index.js';
import { migrateSlot } from '../support/cluster-ops.js';
import { startCluster, startSentinel, waitFor, type ClusterTopology, type SentinelTopology } from '../support/topology.js';

describe('cache through a Sentinel failover', () => {
  let topo: SentinelTopology;
  beforeAll(async () => {
    topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  }, 90_000);
  afterAll(async () => {
    await topo?.stop();
  });

  it('flushed before the failover event; reads after it never return a value older than the failover', async () => {
    const reader = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { protocol: 3, cache: {}, commandTimeout: 15_000, queueTimeout: 15_000 });
    const writer = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });
    try {
      const keys = Array.from({ length: 20 }, (_, i) => `sc:${i}`);
      for (const k of keys) await writer.set(k, 'before');
      for (const k of keys) expect(await reader.get(k)).toBe('before');
      expect(reader.stats().cache!.entries).toBe(keys.length);
      let entriesAtEvent = -1;
      reader.once('failover', () => { entriesAtEvent = reader.stats().cache!.entries; });
      const from = reader.master();
      expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
      await waitFor(() => entriesAtEvent !== -1, 'the reader to switch', 30_000);
      expect(entriesAtEvent).toBe(0);
      await waitFor(() => writer.master().port !== from.port, 'the writer to switch', 30_000);
      for (const [i, k] of keys.entries()) {
        await writer.set(k, `after-${i}`);
        await reader.call('PING');
        expect(await reader.get(k)).toBe(`after-${i}`);
        // A second read is a hit, and still the new value.
        expect(await reader.get(k)).toBe(`after-${i}`);
      }
      expect(reader.stats().cache!.flushes.failover).toBe(1);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});

describe('cache through a live slot migration', () => {
  let topo: ClusterTopology;
  beforeAll(async () => {
    topo = await startCluster({ masters: 3, replicasPerMaster: 1 });
  }, 120_000);
  afterAll(async () => {
    await topo?.stop();
  });

  it('reads after the migration never return a value older than the writer\'s last write', async () => {
    const reader = await ClusterPool.create(topo.seeds, { protocol: 3, cache: {} });
    const writer = await ClusterPool.create(topo.seeds);
    try {
      const keys = Array.from({ length: 30 }, (_, i) => `{cm}${i}`);
      const slot = keySlot(keys[0]!);
      for (const k of keys) await writer.set(k, 'before');
      for (const k of keys) expect(await reader.get(k)).toBe('before');
      // A reader keeps reading through the migration; every value it sees is one the writer wrote.
      let stop = false;
      const seen = new Set<string>();
      const reading = (async () => {
        while (!stop) for (const k of keys) seen.add(String(await reader.get(k)));
      })();
      const source = await topo.nodeForSlot(slot);
      const target = (await topo.masters()).find((m) => m.port !== source.port)!;
      await migrateSlot(topo, slot, source, target);
      for (const [i, k] of keys.entries()) {
        await writer.set(k, `after-${i}`);
        await reader.call('PING');
        expect(await reader.get(k)).toBe(`after-${i}`);
      }
      stop = true;
      await reading;
      for (const v of seen) expect(v === 'before' || v.startsWith('after-')).toBe(true);
      expect(await topo.nodeForSlot(slot)).toMatchObject({ port: target.port });
      expect(reader.stats().redirects.moved + reader.stats().redirects.ask).toBeGreaterThan(0);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
