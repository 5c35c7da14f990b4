/**
 * `role: 'replica'` when no replica is healthy: `replicaFallback: 'master'` serves from the
 * master and says so once; `'error'` refuses at once (not sent). Both go back to the replica
 * when it is healthy again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, isNotExecuted, SentinelPool } from '../../src/index.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;

beforeAll(async () => {
  topo = await startSentinel({ replicas: 1, downAfterMs: 1000 });
});
afterAll(async () => {
  if (topo?.replicas[0]?.isPaused()) topo.replicas[0].resume();
  await topo?.stop();
});

/** First word of ROLE from whichever node served the call. */
async function servedBy(pool: SentinelPool): Promise<string> {
  const r = (await pool.call('ROLE')) as unknown[];
  return String(r[0]);
}

describe('replicaFallback', () => {
  it("with no healthy replica, 'master' serves from the master (said once) and 'error' refuses at once; both return to the replica", async () => {
    const fallback = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', replicaFallback: 'master', commandTimeout: 2000 });
    const strict = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', replicaFallback: 'error', commandTimeout: 2000 });
    const said: Error[] = [];
    fallback.on('error', (e) => said.push(e));
    try {
      expect(await servedBy(fallback)).toBe('slave');
      expect(await servedBy(strict)).toBe('slave');

      topo.replicas[0]!.pause();
      // The sentinels flag it down after down-after; the pools drop it from their replica list.
      await waitFor(async () => (await servedBy(fallback).catch(() => '')) === 'master', 'the fallback pool to serve from the master', 20_000);
      expect(said.filter((e) => /No healthy replica of "mymaster": commands go to the master/.test(e.message))).toHaveLength(1);
      await servedBy(fallback);
      expect(said.filter((e) => /No healthy replica/.test(e.message))).toHaveLength(1); // once per outage

      await waitFor(async () => {
        const r = await strict.get('k').then(() => undefined, (e: unknown) => e);
        return r instanceof ConnectionError && /replicaFallback: 'error'/.test(r.message);
      }, 'the strict pool to refuse', 20_000);
      const t0 = Date.now();
      const refused = await strict.get('k').then(() => undefined, (e: unknown) => e);
      expect(refused).toBeInstanceOf(ConnectionError);
      expect(isNotExecuted(refused)).toBe(true);
      expect(Date.now() - t0).toBeLessThan(500); // at once, not after commandTimeout

      topo.replicas[0]!.resume();
      await waitFor(async () => (await servedBy(fallback)) === 'slave', 'the fallback pool back on the replica', 30_000);
      await waitFor(async () => (await servedBy(strict).catch(() => '')) === 'slave', 'the strict pool back on the replica', 30_000);
    } finally {
      await fallback.close();
      await strict.close();
    }
  });

  it('rejects an unknown replicaFallback with a TypeError naming it', async () => {
    await expect(SentinelPool.create(topo.masterName, topo.sentinelAddresses, { replicaFallback: 'any' as never })).rejects.toThrow(/Option replicaFallback must be one of "master", "error"/);
  });
});
