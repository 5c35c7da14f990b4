/**
 * `redis-ha-pool/keyv` on a ClusterPool (3 masters, real redis-server cluster): Keyv's own
 * conformance suite, cache-manager, clear() across every master, multi-key work that never
 * sends a cross-slot command (it works with `splitMultiKey: false`), and Keyv through a live
 * slot migration (keys half moved: ASK; then MOVED) without an error or a wrong value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Keyv from 'keyv';
import { ClusterPool, keySlot } from '../../src/index.js';
import { KeyvStore } from '../../src/integrations/keyv.js';
import { finishMigration, migrateSlot } from '../support/cluster-ops.js';
import { cacheManagerChecks, keyvConformance, namespaceClearCheck } from '../support/keyv-checks.js';
import { startCluster, waitFor, type ClusterTopology } from '../support/topology.js';

let topo: ClusterTopology;
let pool: ClusterPool;

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
  pool = await ClusterPool.create(topo.seeds);
}, 120_000);
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('KeyvStore on a ClusterPool', () => {
  keyvConformance(() => pool);
  cacheManagerChecks(() => pool, 'cm');
  namespaceClearCheck(() => pool);

  it('clear() finds the namespace on every master', async () => {
    const keyv = new Keyv({ store: new KeyvStore(pool), namespace: 'spread' });
    await keyv.setMany(Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: i })));
    const holders = [];
    for (const m of await topo.masters()) if (Number(await m.cli('EVAL', "return #redis.call('KEYS', 'spread:*')", '0')) > 0) holders.push(m.port);
    expect(holders).toHaveLength(3);
    await keyv.clear();
    for (const m of await topo.masters()) expect(await m.cli('EVAL', "return #redis.call('KEYS', 'spread:*')", '0')).toBe('0');
  });

  it('multi-key work never sends a cross-slot command: it works on a pool that does not split (splitMultiKey: false)', async () => {
    const strict = await ClusterPool.create(topo.seeds, { splitMultiKey: false });
    try {
      // The pool itself refuses an MGET across slots here (the server answers CROSSSLOT) ...
      await expect(strict.call('MGET', 'a', 'b', 'c')).rejects.toThrow(/CROSSSLOT/);
      // ... yet every multi-key method of the store works.
      const keyv = new Keyv({ store: new KeyvStore(strict), namespace: 'xslot', throwOnErrors: true });
      const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
      await keyv.setMany(keys.map((key, i) => ({ key, value: i })));
      expect(await keyv.get(keys)).toEqual(keys.map((_, i) => i));
      expect(await keyv.has(keys)).toEqual(keys.map(() => true));
      expect(await keyv.delete(keys)).toBe(true);
      expect(await keyv.get(keys)).toEqual(keys.map(() => undefined));
    } finally {
      await strict.close();
    }
  });

  it('Keyv works through a slot migration: half-moved keys (ASK), new keys, deletes, the iterator, then MOVED', async () => {
    const ns = '{mig}';
    const slot = keySlot(`${ns}:k0`);
    const keyv = new Keyv({ store: new KeyvStore(pool), namespace: ns, throwOnErrors: true });
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    await keyv.setMany(keys.map((key, i) => ({ key, value: { i } })));
    const source = await topo.nodeForSlot(slot);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    const sourceId = await source.cli('CLUSTER', 'MYID');
    const targetId = await target.cli('CLUSTER', 'MYID');
    let asks = 0;
    let moved = 0;
    pool.on('ask', () => asks++);
    pool.on('moved', () => moved++);

    await target.cli('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
    await source.cli('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
    // Half of the keys now live on the target, the rest still on the source.
    await source.cli('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...keys.slice(0, 100).map((k) => `${ns}:${k}`));

    expect(await keyv.get('k0')).toEqual({ i: 0 });
    expect(await keyv.get('k150')).toEqual({ i: 150 });
    expect(await keyv.get(keys)).toEqual(keys.map((_, i) => ({ i })));
    expect(await keyv.set('new', 'during')).toBe(true);
    expect(await keyv.get('new')).toBe('during');
    expect(await keyv.delete('k1')).toBe(true);
    expect(await keyv.delete(['k2', 'k150'])).toBe(true);
    expect(await keyv.has(['k0', 'k1', 'k199'])).toEqual([true, false, true]);
    const seen = new Map<string, unknown>();
    for await (const [k, v] of keyv.iterator!(undefined)) seen.set(k as string, v);
    expect(seen.size).toBe(200 - 3 + 1);
    expect(seen.get('k0')).toEqual({ i: 0 });
    expect(seen.get('new')).toBe('during');
    expect(asks).toBeGreaterThan(0);

    await finishMigration(topo, slot, source, target, targetId);
    const expected = keys.map((k, i) => (['k1', 'k2', 'k150'].includes(k) ? undefined : { i }));
    expect(await keyv.get(keys)).toEqual(expected);
    expect(moved).toBeGreaterThan(0);
    await keyv.clear();
    expect(await target.cli('EVAL', "return #redis.call('KEYS', '{mig}:*')", '0')).toBe('0');
    expect(await source.cli('EVAL', "return #redis.call('KEYS', '{mig}:*')", '0')).toBe('0');
  });

  it('a Keyv read/write load runs through a whole-slot migration without an error or a wrong value', async () => {
    const ns = '{load}';
    const slot = keySlot(`${ns}:x`);
    const keyv = new Keyv({ store: new KeyvStore(pool), namespace: ns, throwOnErrors: true });
    await keyv.setMany(Array.from({ length: 500 }, (_, i) => ({ key: `k${i}`, value: i })));
    const source = await topo.nodeForSlot(slot);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    let stop = false;
    let ops = 0;
    const errors: unknown[] = [];
    const wrong: string[] = [];
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const i = (w * 7919 + n * 31) % 500;
        try {
          const v = await keyv.get(`k${i}`);
          if (v !== i) wrong.push(`k${i}=${JSON.stringify(v)}`);
          await keyv.set(`w${w}`, n);
          if ((await keyv.get(`w${w}`)) !== n) wrong.push(`w${w}!=${n}`);
          const many = await keyv.get([`k${i}`, `k${(i + 1) % 500}`]);
          if (many[0] !== i || many[1] !== (i + 1) % 500) wrong.push(`many k${i}`);
          ops++;
        } catch (err) {
          errors.push(err);
        }
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    await waitFor(() => ops > 50, 'load running');
    await migrateSlot(topo, slot, source, target);
    const at = ops;
    await waitFor(() => ops > at + 50, 'load after the migration');
    stop = true;
    await Promise.all(workers);
    expect(errors.map(String).slice(0, 3)).toEqual([]);
    expect(wrong.slice(0, 3)).toEqual([]);
    expect(await target.cli('EXISTS', `${ns}:k0`)).toBe('1');
  });
});
