/**
 * Durable acknowledgements behind Sentinel (1 master, 2 replicas, 3 sentinels): a crash of the
 * master while the replica that gets promoted lags loses no acknowledged write, and a
 * `role: 'replica'` pool never sends WAIT to a replica. The same crash without `durability`
 * (and how many writes it loses) is `npx tsx test/soak/durability-loss.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurabilityError, SentinelPool, TimeoutError, UncertainWriteError, ConnectionError } from '../../src/index.js';
import { crashWithLaggingReplica } from '../support/durability-crash.js';
import { missingOn } from '../support/sentinel-helpers.js';
import { calls } from '../support/replicated.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;

beforeAll(async () => {
  topo = await startSentinel({ replicas: 2, downAfterMs: 1000, failoverTimeoutMs: 5000 });
});

afterAll(async () => {
  await topo?.stop();
});

describe('durability behind Sentinel', () => {
  it("a role: 'replica' pool never sends WAIT to a replica, even when a call asks for durability", async () => {
    const writer = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { durability: { replicas: 2, timeout: 2000 } });
    const reader = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica' });
    try {
      const before = await Promise.all(topo.replicas.map((r) => calls(r.address, 'wait')));
      await writer.set('replica-reads:k', 'v');
      const view = reader.with({ durability: { replicas: 1, timeout: 100 } });
      for (let i = 0; i < 20; i++) expect(await view.get('replica-reads:k')).toBe('v');
      expect(await Promise.all(topo.replicas.map((r) => calls(r.address, 'wait')))).toEqual(before);
      expect(reader.stats().durability.waits).toBe(0);
      expect(writer.stats().durability.confirmed).toBe(1);
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  });

  it('SIGKILL of the master while the replica it promotes lags: every acknowledged write is on the new master; the unconfirmed ones were rejected', async () => {
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, {
      durability: { replicas: 1, timeout: 500 },
      // Long enough to wait out the failover (down-after 1 s + election + promotion).
      commandTimeout: 15_000,
      queueTimeout: 15_000,
    });
    try {
      const run = await crashWithLaggingReplica(topo, pool, { writers: 20, prefix: 'dur-crash', lagMs: 2000, afterAcks: 200 });
      console.log(
        `[durability, Sentinel crash] ${run.acks.length} acknowledged, ${run.failures.length} failed ` +
          `(lag window: ${JSON.stringify(run.failuresByType)}); acknowledged writes missing on the new master: ${run.lost.length}; ` +
          `failover ${run.failoverMs} ms after the kill; stats ${JSON.stringify(pool.stats().durability)}`,
      );
      // The promise: nothing acknowledged is lost.
      expect(run.lost.map((a) => a.key).slice(0, 10)).toEqual([]);
      expect(run.acks.some((a) => a.at > run.killedAt)).toBe(true);
      // The fault did make the promoted replica lag: writes of the lag window ran on the old master,
      // were refused acknowledgement, and are indeed not on the new one.
      const refused = run.lagFailures.filter((f) => f.error instanceof DurabilityError);
      expect(refused.length).toBeGreaterThan(0);
      for (const f of refused) expect((f.error as DurabilityError).replicas).toBe(0);
      const refusedMissing = await missingOn(run.to, refused.map((f) => ({ key: f.key, value: `v${f.key.split(':').pop()}`, at: f.at })));
      expect(refusedMissing.length).toBeGreaterThan(0);
      // Nothing was acknowledged during the lag (no replica could confirm).
      expect(run.acks.filter((a) => a.at > run.lagAt + 50 && a.at < run.killedAt)).toEqual([]);
      // Every failure is one a caller can act on: not confirmed, or cut by the crash.
      for (const f of run.failures) {
        const e = f.error;
        expect(e instanceof DurabilityError || e instanceof UncertainWriteError || e instanceof ConnectionError || e instanceof TimeoutError, String(e)).toBe(true);
      }
      await waitFor(() => pool.stats().durability.confirmed > 0, 'confirmed writes in stats');
    } finally {
      await pool.close();
    }
  });
});
