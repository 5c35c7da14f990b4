/**
 * `redis-ha-pool/keyv` on a SentinelPool (1 master, 2 replicas, 3 sentinels): Keyv's own
 * conformance suite and cache-manager, then a Keyv write/read load through `SENTINEL FAILOVER`:
 * no call fails, and every acknowledged write is on the new master.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Keyv from 'keyv';
import { SentinelPool } from '../../src/index.js';
import { KeyvStore } from '../../src/integrations/keyv.js';
import { cacheManagerChecks, keyvConformance, namespaceClearCheck } from '../support/keyv-checks.js';
import { sendCommand } from '../support/mini-client.js';
import { sameAddr, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });
}, 90_000);
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('KeyvStore on a SentinelPool', () => {
  keyvConformance(() => pool);
  cacheManagerChecks(() => pool, 'cm');
  namespaceClearCheck(() => pool);

  it('a Keyv load runs through SENTINEL FAILOVER: no failed call, every acknowledged write on the new master', async () => {
    await waitSettled(topo, 2);
    const keyv = new Keyv({ store: new KeyvStore(pool), namespace: 'fo', throwOnErrors: true });
    const from = pool.master();
    const acked = new Map<string, number>();
    const errors: unknown[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        try {
          await keyv.set(`w${w}:${n}`, n);
          acked.set(`w${w}:${n}`, n);
          if ((await keyv.get(`w${w}:${n}`)) !== n) errors.push(new Error(`read back w${w}:${n}`));
        } catch (err) {
          errors.push(err);
        }
      }
    };
    const writers = [0, 1, 2].map(writer);
    await waitFor(() => acked.size > 100, 'writes before the failover');
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    await waitFor(() => !sameAddr(pool.master(), from), 'the pool to follow the failover', 30_000);
    const at = acked.size;
    await waitFor(() => acked.size > at + 100, 'writes after the failover', 30_000);
    stop = true;
    await Promise.all(writers);
    expect(errors.map(String).slice(0, 3)).toEqual([]);
    const to = pool.master();
    const keys = [...acked.keys()];
    const onNew = (await sendCommand(to, ['MGET', ...keys.map((k) => `fo:${k}`)])) as Array<string | null>;
    const lost = keys.filter((_, i) => onNew[i] === null);
    console.log(`Keyv through SENTINEL FAILOVER: ${keys.length} acknowledged writes, ${lost.length} missing on the new master`);
    expect(lost).toEqual([]);
    expect(await keyv.get(keys[0]!)).toBe(acked.get(keys[0]!));
  });
});
