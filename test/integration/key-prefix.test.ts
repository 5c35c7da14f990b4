/**
 * keyPrefix on a standalone server (ClusterPool: cluster-helpers.test.ts): every key of every
 * way to send a command gets the prefix (helpers, call(), pipelines, transactions, leases,
 * blocking commands, scripts), values and channels do not, and scanIterator stays inside the
 * prefix.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, SentinelPool, StandalonePool } from '../../src/index.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
const pools: StandalonePool[] = [];

async function pool(options: Parameters<typeof StandalonePool.create>[1] = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(topo.url, options);
  pools.push(p);
  return p;
}

beforeAll(async () => {
  topo = await startStandalone();
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  await topo?.stop();
});

describe('keyPrefix option', () => {
  it.each([5, null, {}, true])('a non-string keyPrefix (%s) fails at once with a TypeError naming it, in every mode', async (bad) => {
    await expect(StandalonePool.create('127.0.0.1:1', { keyPrefix: bad as never })).rejects.toThrow(/Option keyPrefix must be a string \(got /);
    await expect(ClusterPool.create(['127.0.0.1:1'], { keyPrefix: bad as never })).rejects.toThrow(/Option keyPrefix must be a string/);
    await expect(SentinelPool.create('m', ['127.0.0.1:1'], { keyPrefix: bad as never })).rejects.toThrow(/keyPrefix/);
  });

  it.each([2, 3] as const)('prefixes the keys of helpers, call(), pipelines, transactions and leases, not values (protocol %i)', async (protocol) => {
    const app = await pool({ keyPrefix: `kp${protocol}:`, protocol });
    const raw = await pool({ protocol });
    const pre = `kp${protocol}:`;
    await app.set('s', 'value-not-a-key');
    expect(await raw.get(`${pre}s`)).toBe('value-not-a-key');
    expect(await raw.exists('s')).toBe(0);
    expect(await app.get('s')).toBe('value-not-a-key');

    await app.mset({ a: '1', b: '2' });
    expect(await raw.mget(`${pre}a`, `${pre}b`)).toEqual(['1', '2']);
    await app.call('HSET', 'h', 'f', 'v');
    expect(await raw.hget(`${pre}h`, 'f')).toBe('v');
    expect(await app.pipeline().get('a').hget('h', 'f').exec()).toEqual(['1', 'v']);
    expect(await app.multi().incr('n').incr('n').exec()).toEqual([1, 2]);
    expect(await raw.get(`${pre}n`)).toBe('2');
    await app.use(async (lease) => {
      await lease.call('WATCH', 'n');
      expect(await lease.multi().set('n', '10').exec()).toEqual(['OK']);
    });
    expect(await raw.get(`${pre}n`)).toBe('10');
    await app.xadd('st', '*', { f: 'v' });
    expect(await raw.xlen(`${pre}st`)).toBe(1);
    // EVAL: the declared keys only.
    expect(await app.eval('return {KEYS[1], ARGV[1]}', 1, 'k', 'arg')).toEqual([`${pre}k`, 'arg']);
    expect(await app.del(['a', 'b', 's'])).toBe(3);
  });

  it('blocking commands on their exclusive connection, and scripts, use the prefixed keys', async () => {
    const app = await pool({ keyPrefix: 'kpb:' });
    const raw = await pool();
    await raw.rpush('kpb:q', 'job');
    // BLPOP answers the prefixed key name, as in ioredis (replies are not rewritten).
    expect(await app.blpop('q', 1)).toEqual(['kpb:q', 'job']);
    const incr = app.script("return redis.call('INCRBY', KEYS[1], ARGV[1])", { keys: 1 });
    expect(await incr('counter', 3)).toBe(3);
    expect(await raw.get('kpb:counter')).toBe('3');
    expect(await app.pipeline().runScript(incr, 'counter', 1).exec()).toEqual([4]);
  });

  it('with the client-side cache: entries are held under the prefixed name, so a write by another client invalidates them', async () => {
    const app = await pool({ keyPrefix: 'kpc:', protocol: 3, cache: {} });
    const raw = await pool();
    await raw.set('kpc:k', 'one');
    expect(await app.get('k')).toBe('one');
    expect(await app.get('k')).toBe('one');
    expect(app.stats().cache).toMatchObject({ hits: 1, misses: 1 });
    await raw.set('kpc:k', 'two');
    // The invalidation is ordered before the PONG on the tracking connection.
    await app.call('PING');
    expect(await app.get('k')).toBe('two');
  });

  it('scanIterator walks only the prefix and yields keys without it; match applies after the prefix', async () => {
    const app = await pool({ keyPrefix: 'kps[1]:', db: 3 });
    const raw = await pool({ db: 3 });
    await raw.call('FLUSHDB');
    await raw.mset('kps[1]:user:1', 'a', 'kps[1]:user:2', 'b', 'kps[1]:other', 'c', 'kps1:user:3', 'not ours', 'user:4', 'not ours');
    const all: string[] = [];
    for await (const key of app.scanIterator({ count: 2 })) all.push(key);
    expect(all.sort()).toEqual(['other', 'user:1', 'user:2']);
    const users: string[] = [];
    for await (const key of app.scanIterator({ match: 'user:*' })) users.push(key);
    expect(users.sort()).toEqual(['user:1', 'user:2']);
    // Keys from the iterator go straight back into helpers.
    expect(await app.mget(users.sort())).toEqual(['a', 'b']);
  });
});
