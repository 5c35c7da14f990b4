/**
 * What the Keyv integration tests run in every mode: Keyv's own published conformance suite
 * (`@keyv/test-suite`: api, values, namespace, and its iterator tests) against a `KeyvStore`
 * on the mode's pool, and cache-manager 7 through the same store.
 */
import * as vitest from 'vitest';
import Keyv from 'keyv';
import { createCache } from 'cache-manager';
import keyvTestSuite, { keyvIteratorTests } from '@keyv/test-suite';
import { KeyvStore, type KeyvPool } from '../../src/integrations/keyv.js';

const { describe, expect, it } = vitest;

/** Registers Keyv's suites (inside the caller's describe) on stores over `pool()`. */
export function keyvConformance(pool: () => KeyvPool): void {
  describe('@keyv/test-suite 2.1.2 (api, values, namespace)', () => {
    keyvTestSuite(vitest, Keyv, () => new KeyvStore(pool()));
  });
  describe('@keyv/test-suite 2.1.2 (iterator)', () => {
    keyvIteratorTests(vitest, Keyv, () => new KeyvStore(pool()));
  });
}

/** cache-manager 7 through a Keyv on `pool()`: set, get, ttl, wrap (factory once), del. */
export function cacheManagerChecks(pool: () => KeyvPool, namespace: string): void {
  it('cache-manager 7: set/get, ttl, wrap (the factory runs once), del, mset/mget', async () => {
    const cache = createCache({ stores: [new Keyv({ store: new KeyvStore(pool()), namespace })] });
    await cache.set('greeting', { text: 'hello' }, 60_000);
    expect(await cache.get('greeting')).toEqual({ text: 'hello' });
    // Stored in Redis under the namespace, with a PX expiry.
    const pttl = await pool().call<number>('PTTL', `${namespace}:greeting`);
    expect(pttl).toBeGreaterThan(50_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
    const expires = await cache.ttl('greeting');
    expect(expires).toBeGreaterThan(Date.now() + 50_000);

    let runs = 0;
    const load = async () => {
      runs++;
      return { computed: runs };
    };
    expect(await cache.wrap('computed', load, 60_000)).toEqual({ computed: 1 });
    expect(await cache.wrap('computed', load, 60_000)).toEqual({ computed: 1 });
    expect(runs).toBe(1);

    await cache.mset([{ key: 'a', value: 1 }, { key: 'b', value: 2 }]);
    expect(await cache.mget(['a', 'b', 'missing'])).toEqual([1, 2, undefined]);

    expect(await cache.del('greeting')).toBe(true);
    expect(await cache.get('greeting')).toBeUndefined();
    expect(await pool().call('EXISTS', `${namespace}:greeting`)).toBe(0);
    await cache.clear();
    expect(await cache.get('computed')).toBeUndefined();
  });

  it('cache-manager: an entry set with a short ttl is gone once it expires', async () => {
    const cache = createCache({ stores: [new Keyv({ store: new KeyvStore(pool()), namespace })] });
    await cache.set('short', 'lived', 300);
    expect(await cache.get('short')).toBe('lived');
    await vitest.vi.waitFor(async () => expect(await pool().call('EXISTS', `${namespace}:short`)).toBe(0), { timeout: 10_000, interval: 50 });
    expect(await cache.get('short')).toBeUndefined();
  });
}

/** clear() removes its namespace only, across every node; other keys stay. */
export function namespaceClearCheck(pool: () => KeyvPool): void {
  it('clear() removes only its namespace (SCAN on every master), even a large one, and never other keys', async () => {
    const mine = new Keyv({ store: new KeyvStore(pool(), { scanCount: 100 }), namespace: 'clear-me' });
    const other = new Keyv({ store: new KeyvStore(pool()), namespace: 'keep-me' });
    await mine.setMany(Array.from({ length: 1500 }, (_, i) => ({ key: `k${i}`, value: i })));
    await other.set('survivor', 'yes');
    await pool().call('SET', 'clear-me-not:plain', 'x');
    // A namespace with glob characters is matched literally.
    const globby = new Keyv({ store: new KeyvStore(pool()), namespace: 'cl*' });
    await globby.set('g', 1);
    expect(await mine.get('k1499')).toBe(1499);
    await mine.clear();
    let left = 0;
    for await (const _ of pool().scanIterator({ match: 'clear-me:*' })) left++;
    expect(left).toBe(0);
    expect(await other.get('survivor')).toBe('yes');
    expect(await pool().call('GET', 'clear-me-not:plain')).toBe('x');
    expect(await globby.get('g')).toBe(1);
  });

  it('getMany/setMany/deleteMany/hasMany over many keys (spread over every slot in a cluster)', async () => {
    const keyv = new Keyv({ store: new KeyvStore(pool()), namespace: 'many' });
    const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`);
    const results = await keyv.setMany(keys.map((key, i) => ({ key, value: { i } })));
    expect(results).toEqual(keys.map(() => true));
    const values = await keyv.get([...keys, 'absent']);
    expect(values).toEqual([...keys.map((_, i) => ({ i })), undefined]);
    expect(await keyv.has(['key-0', 'absent'])).toEqual([true, false]);
    expect(await keyv.delete(keys)).toBe(true);
    expect(await keyv.delete(keys)).toBe(false);
    expect(await keyv.get(keys.slice(0, 3))).toEqual([undefined, undefined, undefined]);
  });
}
