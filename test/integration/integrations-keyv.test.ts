/**
 * `redis-ha-pool/keyv` on a StandalonePool, against a real redis-server: Keyv's own published
 * conformance suite (@keyv/test-suite 2.1.2), cache-manager 7 through the store, namespaces,
 * a large clear(), and the store's lifecycle (disconnect ends the store only; a closed pool
 * rejects; a failed get is emitted as `error`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Keyv, { type KeyvStoreAdapter } from 'keyv';
import { PoolClosedError, StandalonePool } from '../../src/index.js';
import { KeyvStore } from '../../src/integrations/keyv.js';
import { cacheManagerChecks, keyvConformance, namespaceClearCheck } from '../support/keyv-checks.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
let pool: StandalonePool;

beforeAll(async () => {
  topo = await startStandalone();
  pool = await StandalonePool.create(topo.url);
});
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('KeyvStore on a StandalonePool', () => {
  keyvConformance(() => pool);
  cacheManagerChecks(() => pool, 'cm');
  namespaceClearCheck(() => pool);

  it('is a KeyvStoreAdapter that Keyv accepts and iterates (dialect redis)', async () => {
    const store: KeyvStoreAdapter = new KeyvStore(pool);
    const keyv = new Keyv({ store, namespace: 'iter' });
    expect(typeof keyv.iterator).toBe('function');
    await keyv.set('a', 1);
    const seen: Array<[string, unknown]> = [];
    for await (const entry of keyv.iterator!(undefined)) seen.push(entry as [string, unknown]);
    expect(seen).toEqual([['a', 1]]);
  });

  it('disconnect() ends the store only: its calls reject, the pool and other stores go on', async () => {
    const store = new KeyvStore(pool);
    const keyv = new Keyv({ store, namespace: 'disc', throwOnErrors: true });
    await keyv.set('k', 'v');
    await keyv.disconnect();
    await expect(keyv.get('k')).rejects.toBeInstanceOf(PoolClosedError);
    expect(await pool.call('GET', 'disc:k')).toBe(JSON.stringify({ value: 'v' }));
    expect(await new Keyv({ store: new KeyvStore(pool), namespace: 'disc' }).get('k')).toBe('v');
  });

  it('a failed get is emitted as error (Keyv would report it as a plain miss) and rejects with throwOnErrors', async () => {
    const p = await StandalonePool.create(topo.url);
    const keyv = new Keyv({ store: new KeyvStore(p), namespace: 'err' });
    const errors: unknown[] = [];
    keyv.on('error', (e: unknown) => errors.push(e));
    await p.close();
    expect(await keyv.get('k')).toBeUndefined();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(PoolClosedError);
    const strict = new Keyv({ store: new KeyvStore(p), namespace: 'err', throwOnErrors: true });
    await expect(strict.get('k')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(strict.set('k', 1)).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('refuses what it cannot do with a TypeError naming it', async () => {
    expect(() => new KeyvStore({} as never)).toThrow(/needs a redis-ha-pool pool/);
    expect(() => new KeyvStore(pool, { count: 5 } as never)).toThrow(/Unknown option KeyvStore\.count/);
    expect(() => new KeyvStore(pool, { scanCount: 0 })).toThrow(/KeyvStore\.scanCount/);
    const bare = new KeyvStore(pool);
    await expect(bare.clear()).rejects.toThrow(/needs a namespace/);
  });
});
