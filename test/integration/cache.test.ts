/**
 * The client-side cache against a real redis-server (RESP3 CLIENT TRACKING): hits without I/O,
 * invalidation by another client's writes (after a PING round trip on the same connection the
 * invalidation has been read, so the old value is never returned), the pool's own writes,
 * FLUSHALL, a lost connection, LRU and ttl, MGET per key, cache: false, broadcast mode, a tight
 * hit loop that still sees a writer's change, a copy of each reply per caller and bad options.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StandalonePool, type StandaloneOptions } from '../../src/index.js';
import { sendCommand } from '../support/mini-client.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
const pools: StandalonePool[] = [];

beforeAll(async () => {
  topo = await startStandalone();
}, 60_000);

afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  await topo?.stop();
});

async function create(cache: StandaloneOptions['cache'] = {}, extra: StandaloneOptions = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(topo.address, { protocol: 3, cache, ...extra });
  pools.push(p);
  return p;
}

/** Another client's write, on its own connection. */
const write = (...args: string[]) => sendCommand(topo.address, args);

/** How many GETs the server has executed so far. */
async function serverGets(): Promise<number> {
  const info = await topo.server.cli('INFO', 'commandstats');
  const m = /cmdstat_get:calls=(\d+)/.exec(info);
  return m ? Number(m[1]) : 0;
}

describe('client-side cache', () => {
  it('a repeated read is served without asking the server', async () => {
    const pool = await create();
    await write('SET', 'c:hit', 'one');
    expect(await pool.get('c:hit')).toBe('one');
    const before = await serverGets();
    for (let i = 0; i < 50; i++) expect(await pool.get('c:hit')).toBe('one');
    expect(await serverGets()).toBe(before);
    expect(pool.stats().cache).toMatchObject({ hits: 50, misses: 1, entries: 1 });
  });

  it("another client's write: after a PING round trip the pool never returns the old value", async () => {
    const pool = await create();
    for (let i = 0; i < 200; i++) {
      await pool.get('c:inv');
      await write('SET', 'c:inv', `v${i}`);
      // The invalidation is ordered before the PONG on the tracking connection.
      await pool.call('PING');
      expect(await pool.get('c:inv')).toBe(`v${i}`);
    }
    expect(pool.stats().cache!.invalidations).toBeGreaterThanOrEqual(200);
  });

  it("the pool's own writes drop the entry at once (read your writes)", async () => {
    const pool = await create();
    await pool.set('c:own', 'a');
    expect(await pool.get('c:own')).toBe('a');
    await pool.set('c:own', 'b');
    expect(await pool.get('c:own')).toBe('b');
    await pool.pipeline().set('c:own', 'c').exec();
    expect(await pool.get('c:own')).toBe('c');
    await pool.use((l) => l.set('c:own', 'd'));
    expect(await pool.get('c:own')).toBe('d');
    await pool.hset('c:h', 'f', '1');
    expect(await pool.hget('c:h', 'f')).toBe('1');
    await pool.hset('c:h', 'f', '2');
    expect(await pool.hget('c:h', 'f')).toBe('2');
  });

  it('FLUSHALL (a null invalidation) flushes everything', async () => {
    const pool = await create();
    await pool.set('c:fa', 'x');
    await pool.get('c:fa');
    await write('FLUSHALL');
    await pool.call('PING');
    expect(pool.stats().cache!.entries).toBe(0);
    expect(pool.stats().cache!.flushes.flushall).toBeGreaterThanOrEqual(1);
    expect(await pool.get('c:fa')).toBe(null);
  });

  it('a lost connection flushes what it tracked: a change made while it was down is not missed', async () => {
    const pool = await create({}, { clientName: 'cache-drop' });
    await write('SET', 'c:drop', 'before');
    expect(await pool.get('c:drop')).toBe('before');
    await topo.server.cli('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await waitFor(() => (pool.stats().cache!.flushes['connection-lost'] ?? 0) > 0, 'the flush on connection loss');
    await write('SET', 'c:drop', 'after');
    expect(await pool.get('c:drop')).toBe('after');
  });

  it('a tight loop fed only by hits still sees a writer\'s change (hitsPerTurn yields to I/O)', async () => {
    const pool = await create({ hitsPerTurn: 100 });
    await write('SET', 'c:loop', 'old');
    expect(await pool.get('c:loop')).toBe('old');
    // The writer runs concurrently; its own socket needs the event loop, as does the invalidation.
    const writer = (async () => {
      await new Promise((r) => setImmediate(r));
      await write('SET', 'c:loop', 'new');
    })();
    const deadline = Date.now() + 10_000;
    let v: string | null = 'old';
    let reads = 0;
    while (v === 'old' && Date.now() < deadline) {
      v = await pool.get('c:loop');
      reads++;
    }
    await writer;
    expect(v).toBe('new');
    expect(reads).toBeGreaterThan(1);
  });

  it('evicts the least recently used beyond maxEntries, and entries expire at ttl', async () => {
    const pool = await create({ maxEntries: 2, ttl: 200 });
    for (const k of ['c:l1', 'c:l2']) await write('SET', k, k);
    await pool.get('c:l1');
    await pool.get('c:l2');
    await pool.get('c:l1'); // l1 most recent
    await pool.get('c:l3');
    expect(pool.stats().cache).toMatchObject({ entries: 2, evictions: 1 });
    const misses = pool.stats().cache!.misses;
    await pool.get('c:l1'); // still cached
    expect(pool.stats().cache!.misses).toBe(misses);
    await pool.get('c:l2'); // evicted
    expect(pool.stats().cache!.misses).toBe(misses + 1);
    // ttl: without any invalidation the entry goes after 200 ms.
    await waitFor(async () => {
      const m = pool.stats().cache!.misses;
      await pool.get('c:l1');
      return pool.stats().cache!.misses > m;
    }, 'the entry to expire', 5000);
  });

  it('maxBytes bounds the memory held', async () => {
    const pool = await create({ maxBytes: 4096 });
    await write('SET', 'c:big', 'x'.repeat(1000));
    for (let i = 0; i < 10; i++) await write('SET', `c:b${i}`, 'y'.repeat(500));
    for (let i = 0; i < 10; i++) await pool.get(`c:b${i}`);
    expect(pool.stats().cache!.bytes).toBeLessThanOrEqual(4096);
    expect(pool.stats().cache!.evictions).toBeGreaterThan(0);
  });

  it('MGET is served per key from GET entries; a miss among them asks the server', async () => {
    const pool = await create();
    await write('MSET', 'c:m1', '1', 'c:m2', '2');
    await pool.get('c:m1');
    await pool.get('c:m2');
    const before = await serverGets();
    expect(await pool.mget('c:m1', 'c:m2')).toEqual(['1', '2']);
    expect(await serverGets()).toBe(before);
    expect(await pool.mget('c:m1', 'c:m3')).toEqual(['1', null]);
    expect(await pool.get('c:m3')).toBe(null); // filled by the MGET
  });

  it('with({ cache: false }) bypasses it; returnBuffers calls too', async () => {
    const pool = await create();
    await write('SET', 'c:by', 'v');
    await pool.get('c:by');
    const s = pool.stats().cache!;
    const before = await serverGets();
    expect(await pool.with({ cache: false }).get('c:by')).toBe('v');
    expect(Buffer.isBuffer(await pool.with({ returnBuffers: true }).get('c:by'))).toBe(true);
    expect(await serverGets()).toBe(before + 2);
    expect(pool.stats().cache).toMatchObject({ hits: s.hits, misses: s.misses });
  });

  it('every caller gets its own copy of a cached reply: sorting or pushing into it changes nothing for the next one', async () => {
    const pool = await create();
    await write('DEL', 'c:list', 'c:set', 'c:z', 'c:h');
    await write('RPUSH', 'c:list', 'b', 'a');
    await write('SADD', 'c:set', 'x', 'y');
    await write('ZADD', 'c:z', '1', 'm', '2', 'n');
    await write('HSET', 'c:h', 'f', '1', 'g', '2');
    const reads = () => Promise.all([
      pool.lrange('c:list', 0, -1), pool.smembers('c:set'), pool.zrange('c:z', 0, -1, { WITHSCORES: true }),
      pool.hmget('c:h', 'f', 'g'), pool.mget('c:list:none', 'c:h:none'), pool.call<unknown[]>('LRANGE', 'c:list', '0', '-1'),
    ]);
    // Two identical reads in flight share one request, and still get two arrays.
    const [a, b] = await Promise.all([reads(), reads()]);
    expect(a[0]).not.toBe(b[0]);
    const misses = pool.stats().cache!.misses;
    for (let round = 0; round < 2; round++) {
      const [list, set, z, h, m, raw] = await reads();
      expect(list).toEqual(['b', 'a']);
      expect([...set].sort()).toEqual(['x', 'y']);
      expect(z).toEqual(['m', '1', 'n', '2']);
      expect(h).toEqual(['1', '2']);
      expect(m).toEqual([null, null]);
      expect(raw).toEqual(['b', 'a']);
      // What code written without the cache does with its replies.
      list.sort();
      list.push('zz');
      (set as string[]).push('zz');
      z.push('zz');
      z.sort();
      h.reverse();
      m.push('zz');
      raw.length = 0;
    }
    expect(pool.stats().cache!.misses).toBe(misses);
    expect(pool.stats().cache!.hits).toBeGreaterThan(0);
  });

  it('broadcast mode with prefixes: keys under a prefix are cached and invalidated, others are not cached', async () => {
    const pool = await create({ mode: 'broadcast', prefixes: ['bc:'] });
    await write('SET', 'bc:a', '1');
    await write('SET', 'other', '1');
    await pool.get('bc:a');
    await pool.get('other');
    expect(pool.stats().cache!.entries).toBe(1);
    await write('SET', 'bc:a', '2');
    await pool.call('PING');
    expect(await pool.get('bc:a')).toBe('2');
  });

  it('with keyPrefix the cache holds the prefixed keys, so their invalidations apply', async () => {
    const pool = await create({}, { keyPrefix: 'kp:' });
    await write('SET', 'kp:a', 'one');
    expect(await pool.get('a')).toBe('one');
    await write('SET', 'kp:a', 'two');
    await pool.call('PING');
    expect(await pool.get('a')).toBe('two');
    expect(pool.stats().cache!.invalidations).toBeGreaterThanOrEqual(1);
  });

  it('refuses bad options with a TypeError naming them, and RESP2', async () => {
    await expect(StandalonePool.create(topo.address, { cache: {} })).rejects.toThrow(/protocol: 3/);
    await expect(StandalonePool.create(topo.address, { protocol: 3, cache: { maxEntries: 0 } })).rejects.toThrow(/cache.maxEntries/);
    await expect(StandalonePool.create(topo.address, { protocol: 3, cache: { mode: 'lazy' as never } })).rejects.toThrow(/cache.mode/);
    await expect(StandalonePool.create(topo.address, { protocol: 3, cache: { prefixes: [''] } })).rejects.toThrow(/cache.prefixes/);
    await expect(StandalonePool.create(topo.address, { protocol: 3, cache: { size: 1 } as never })).rejects.toThrow(/cache.size/);
    const pool = await create();
    expect(() => pool.with({ cache: 'no' as never })).toThrow(/with.cache/);
  });
});
