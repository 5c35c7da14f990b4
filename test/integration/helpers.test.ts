/**
 * The typed helpers against a real redis-server under RESP2 and RESP3: the ioredis habits that
 * used to misbehave silently (one test each), the helpers added for them, reply shapes that
 * do not depend on the protocol, honest Buffer and bigint replies, and the HSCAN/SSCAN/ZSCAN
 * iterators.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StandalonePool } from '../../src/index.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';
import { server as serverUnderTest } from '../support/server-features.js';

const PROTOCOLS = [2, 3] as const;

let server: StandaloneTopology;

beforeAll(async () => {
  server = await startStandalone();
});

afterAll(async () => {
  await server?.stop();
});

describe.each(PROTOCOLS)('protocol %i', (protocol) => {
  let p: StandalonePool;
  const k = (name: string) => `th:p${protocol}:${name}`;

  beforeAll(async () => {
    p = await StandalonePool.create(server.url, { protocol });
  });
  afterAll(async () => {
    await p?.close();
  });

  describe('ioredis habits', () => {
    it("set(k, v, 'EX', 10) sets the expiry (and an unknown token is refused, nothing set)", async () => {
      expect(await p.set(k('ex'), 'v', 'EX', 10)).toBe('OK');
      const ttl = await p.ttl(k('ex'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(10);
      expect(await p.set(k('ex'), 'w', 'XX', 'PX', 60_000, 'GET')).toBe('v');
      expect(await p.pttl(k('ex'))).toBeGreaterThan(10_000);

      const err = await p.set(k('typo'), 'v', 'EXPIRE' as never, 10).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toMatch(/^set: unexpected argument "EXPIRE".*Use set\(key, value, \{ EX/);
      expect(await p.exists(k('typo'))).toBe(0);
    });

    it("zrange(k, 0, -1, 'WITHSCORES') returns the scores", async () => {
      await p.zadd(k('z'), 1, 'a', 2.5, 'b');
      expect(await p.zrange(k('z'), 0, -1, 'WITHSCORES')).toEqual(['a', '1', 'b', '2.5']);
      expect(await p.zrange(k('z'), 0, -1)).toEqual(['a', 'b']);
    });

    it("hset('h', 'a', '1', 'b', '2') stores every pair", async () => {
      expect(await p.hset(k('h'), 'a', '1', 'b', '2')).toBe(2);
      expect(await p.hgetall(k('h'))).toEqual({ a: '1', b: '2' });
      const err = await p.hset(k('h'), 'c', '3', 'd').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toMatch(/^hset: got 3 field\/value arguments; they must come in pairs/);
      expect(await p.hexists(k('h'), 'c')).toBe(false);
    });

    it('del([...keys]) deletes every key of the array (as do exists, mget, unlink with arrays)', async () => {
      const keys = [k('d1'), k('d2'), k('d3')];
      await p.mset(keys.flatMap((key) => [key, 'x']));
      expect(await p.exists(keys)).toBe(3);
      expect(await p.mget(keys)).toEqual(['x', 'x', 'x']);
      expect(await p.del([...keys])).toBe(3);
      expect(await p.exists(keys)).toBe(0);
      await p.set(k('u'), '1');
      expect(await p.unlink([k('u')], k('missing'))).toBe(1);
    });

    it('a helper called with an argument it does not use rejects instead of dropping it', async () => {
      await p.set(k('g'), 'v');
      const err = await (p.get as (...a: unknown[]) => Promise<unknown>)(k('g'), 'extra').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toBe('get: takes at most 1 argument, got 2; the extra ones would be ignored. Use get(key).');
    });
  });

  describe('the added helpers', () => {
    it('strings: getdel, getex, setnx, incrbyfloat, decrby, expireat, persist', async () => {
      await p.set(k('s'), 'v');
      expect(await p.getex(k('s'), { EX: 100 })).toBe('v');
      expect(await p.ttl(k('s'))).toBeGreaterThan(0);
      expect(await p.getex(k('s'), 'PERSIST')).toBe('v');
      expect(await p.ttl(k('s'))).toBe(-1);
      expect(await p.getdel(k('s'))).toBe('v');
      expect(await p.getdel(k('s'))).toBeNull();
      expect(await p.setnx(k('nx'), '1')).toBe(1);
      expect(await p.setnx(k('nx'), '2')).toBe(0);
      expect(await p.incrbyfloat(k('f'), 1.5)).toBe(1.5);
      expect(await p.incrbyfloat(k('f'), '-0.25')).toBe(1.25);
      expect(await p.decrby(k('n'), 3)).toBe(-3);
      const at = Math.floor(Date.now() / 1000) + 1000;
      expect(await p.expireat(k('nx'), at)).toBe(1);
      expect(await p.ttl(k('nx'))).toBeGreaterThan(900);
      expect(await p.persist(k('nx'))).toBe(1);
      expect(await p.persist(k('nx'))).toBe(0);
    });

    it('64-bit counters beyond 2^53 come back exact, as bigints', async () => {
      await p.set(k('big'), '9007199254740990');
      expect(await p.incrby(k('big'), 10)).toBe(9007199254741000n);
      expect(await p.incr(k('small'))).toBe(1);
      expect(await p.hincrby(k('bh'), 'f', 9007199254740993n)).toBe(9007199254740993n);
      expect(await p.hincrby(k('bh'), 'g', 2)).toBe(2);
    });

    it('hashes: hmget, hincrby, hexists', async () => {
      await p.hset(k('h2'), { a: '1', b: '2' });
      expect(await p.hmget(k('h2'), 'a', 'nope', 'b')).toEqual(['1', null, '2']);
      expect(await p.hmget(k('h2'), ['b'])).toEqual(['2']);
      expect(await p.hincrby(k('h2'), 'a', 5)).toBe(6);
      expect(await p.hexists(k('h2'), 'a')).toBe(true);
      expect(await p.hexists(k('h2'), 'zz')).toBe(false);
    });

    it('lists: lrem, lindex, llen', async () => {
      await p.rpush(k('l'), ['a', 'b', 'a', 'c']);
      expect(await p.lindex(k('l'), -1)).toBe('c');
      expect(await p.lindex(k('l'), 10)).toBeNull();
      expect(await p.lrem(k('l'), 0, 'a')).toBe(2);
      expect(await p.llen(k('l'))).toBe(2);
    });

    it('sets: scard, sismember', async () => {
      await p.sadd(k('set'), ['x', 'y']);
      expect(await p.scard(k('set'))).toBe(2);
      expect(await p.sismember(k('set'), 'x')).toBe(true);
      expect(await p.sismember(k('set'), 'q')).toBe(false);
    });

    it('sorted sets: zincrby, zrem, zcard, zrangebyscore, zrange BYSCORE with LIMIT', async () => {
      await p.zadd(k('zz'), { a: 1, b: 2, c: 3, d: 4 });
      expect(await p.zincrby(k('zz'), 0.5, 'a')).toBe(1.5);
      // ZADD … INCR answers the new score: a number under both protocols, null when NX stopped it.
      const incremented: number = await p.zadd(k('zi'), 'INCR', 2, 'm');
      expect(incremented).toBe(2);
      expect(await p.zadd(k('zi'), 'INCR', '1.5', 'm')).toBe(3.5);
      const stopped: number | null = await p.zadd(k('zi'), 'NX', 'INCR', 1, 'm');
      expect(stopped).toBeNull();
      // A member named INCR is a member, not the option: the reply is the count added.
      expect(await p.zadd(k('zi'), 1, 'INCR')).toBe(1);
      expect(await p.zrem(k('zz'), ['d', 'nope'])).toBe(1);
      expect(await p.zcard(k('zz'))).toBe(3);
      expect(await p.zrangebyscore(k('zz'), '(1.5', '+inf')).toEqual(['b', 'c']);
      expect(await p.zrangebyscore(k('zz'), '-inf', 2, { WITHSCORES: true })).toEqual(['a', '1.5', 'b', '2']);
      expect(await p.zrangebyscore(k('zz'), 0, 10, 'WITHSCORES', 'LIMIT', 1, 1)).toEqual(['b', '2']);
      expect(await p.zrange(k('zz'), 0, 10, { BYSCORE: true, LIMIT: { offset: 0, count: 2 } })).toEqual(['a', 'b']);
      expect(await p.zrange(k('zz'), '+inf', '-inf', { BYSCORE: true, REV: true, WITHSCORES: true })).toEqual(['c', '3', 'b', '2', 'a', '1.5']);
    });

    it('streams: xadd, xlen, xrange, xrevrange, xread, xgroup, xreadgroup, xack', async () => {
      const s = k('stream');
      const id1 = await p.xadd(s, '*', { f: 'v1' });
      const id2 = await p.xadd(s, '*', ['f', 'v2', 'g', 'w']);
      const id3 = await p.xadd(s, 'MAXLEN', '~', 1000, '*', 'f', 'v3');
      expect(typeof id1).toBe('string');
      expect(await p.xadd(k('no-stream'), '*', { f: 'x' }, { NOMKSTREAM: true })).toBeNull();
      expect(await p.xlen(s)).toBe(3);
      expect(await p.xrange(s)).toEqual([
        { id: id1, message: { f: 'v1' } },
        { id: id2, message: { f: 'v2', g: 'w' } },
        { id: id3, message: { f: 'v3' } },
      ]);
      expect(await p.xrange(s, '-', '+', 'COUNT', 1)).toEqual([{ id: id1, message: { f: 'v1' } }]);
      expect((await p.xrevrange(s, '+', '-', { COUNT: 1 })).map((e) => e.id)).toEqual([id3]);

      expect(await p.xread({ [s]: id2! })).toEqual([{ name: s, messages: [{ id: id3, message: { f: 'v3' } }] }]);
      expect(await p.xread('COUNT', 1, 'STREAMS', s, '0')).toEqual([{ name: s, messages: [{ id: id1, message: { f: 'v1' } }] }]);
      expect(await p.xread([[s, '$']], { BLOCK: 50 })).toBeNull();

      expect(await p.xgroup('CREATE', s, 'g', '0')).toBe('OK');
      expect(await p.xgroup('CREATE', k('fresh'), 'g', '$', { MKSTREAM: true })).toBe('OK');
      expect(await p.xgroup('CREATECONSUMER', s, 'g', 'c2')).toBe(1);
      const got = await p.xreadgroup('g', 'c1', { [s]: '>' }, { COUNT: 2 });
      expect(got).toEqual([{ name: s, messages: [{ id: id1, message: { f: 'v1' } }, { id: id2, message: { f: 'v2', g: 'w' } }] }]);
      const raw = await p.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', s, '>');
      expect(raw?.[0]?.messages.map((m) => m.id)).toEqual([id3]);
      expect(await p.xack(s, 'g', [id1!, id2!], id3!)).toBe(3);
      expect(await p.xgroup('DELCONSUMER', s, 'g', 'c2')).toBe(0);
      expect(await p.xgroup('DESTROY', s, 'g')).toBe(1);
    });

    it.skipIf(!serverUnderTest.has('functions'))(`fcall / fcall_ro ${serverUnderTest.needs('functions')}`, async () => {
      const lib = `#!lua name=th${protocol}\nredis.register_function('th_set${protocol}', function(keys, args) return redis.call('SET', keys[1], args[1]) end)\nredis.register_function{function_name='th_get${protocol}', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}`;
      await p.call('FUNCTION', 'LOAD', 'REPLACE', lib);
      expect(await p.fcall(`th_set${protocol}`, 1, k('fn'), 'val')).toBe('OK');
      expect(await p.fcall_ro(`th_get${protocol}`, 1, k('fn'))).toBe('val');
    });
  });

  describe('honest reply types', () => {
    it('with({ returnBuffers: true }): values are Buffers, names (fields, stream IDs, scores) strings', async () => {
      const b = p.with({ returnBuffers: true });
      await p.set(k('bs'), 'v');
      await p.hset(k('bh2'), { f: 'x' });
      await p.zadd(k('bz'), 1.5, 'm');
      const sid = await p.xadd(k('bstream'), '*', { f: 'x' });
      const v: Buffer | null = await b.get(k('bs'));
      expect(v).toEqual(Buffer.from('v'));
      const h: Record<string, Buffer> = await b.hgetall(k('bh2'));
      expect(h).toEqual({ f: Buffer.from('x') });
      expect(await b.hmget(k('bh2'), 'f', 'none')).toEqual([Buffer.from('x'), null]);
      expect(await b.zrange(k('bz'), 0, -1, { WITHSCORES: true })).toEqual([Buffer.from('m'), '1.5']);
      expect(await b.xrange(k('bstream'))).toEqual([{ id: sid, message: { f: Buffer.from('x') } }]);
      const keys: Buffer[] = [];
      for await (const key of b.scanIterator({ match: k('bs') })) keys.push(key);
      expect(keys).toEqual([Buffer.from(k('bs'))]);
      // The default view answers strings again.
      const s: string | null = await b.with({ returnBuffers: false }).get(k('bs'));
      expect(s).toBe('v');
    });

    it('smembers, hgetall and WITHSCORES give arrays and plain objects under both protocols', async () => {
      await p.sadd(k('sm'), 'a');
      expect(await p.smembers(k('sm'))).toEqual(['a']);
      await p.hset(k('hh'), 'f', 'v');
      expect(Object.getPrototypeOf(await p.hgetall(k('hh')))).toBe(Object.prototype);
    });
  });

  describe('scan iterators', () => {
    it('hscanIterator, sscanIterator and zscanIterator visit every element', async () => {
      const fields: Record<string, string> = {};
      for (let i = 0; i < 300; i++) fields[`f${i}`] = `v${i}`;
      await p.hset(k('big-h'), fields);
      const seen: Record<string, string> = {};
      for await (const [f, v] of p.hscanIterator(k('big-h'), { count: 50 })) seen[f] = v;
      expect(seen).toEqual(fields);
      const some: string[] = [];
      for await (const [f] of p.hscanIterator(k('big-h'), { match: 'f1?' })) some.push(f);
      expect(some.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `f1${i}`).sort());

      const members = Array.from({ length: 300 }, (_, i) => `m${i}`);
      await p.sadd(k('big-s'), members);
      const sm = new Set<string>();
      for await (const m of p.sscanIterator(k('big-s'), { count: 40 })) sm.add(m);
      expect(sm).toEqual(new Set(members));

      await p.zadd(k('big-z'), Object.fromEntries(members.map((m, i) => [m, i / 2])));
      const zs = new Map<string, number>();
      for await (const [m, score] of p.zscanIterator(k('big-z'))) zs.set(m, score);
      expect(zs.size).toBe(300);
      expect(zs.get('m7')).toBe(3.5);
    });

    it('leases iterate too, on their own connection', async () => {
      await p.sadd(k('lease-s'), ['a', 'b']);
      const seen = await p.use(async (lease) => {
        const out: string[] = [];
        for await (const m of lease.sscanIterator(k('lease-s'))) out.push(m);
        for await (const key of lease.scanIterator({ match: k('lease-s') })) out.push(key);
        return out;
      });
      expect(seen.sort()).toEqual(['a', 'b', k('lease-s')].sort());
    });

    it('refuses unknown iterator options', async () => {
      const it = p.hscanIterator(k('big-h'), { pattern: 'x' } as never);
      await expect(it.next()).rejects.toThrow(/hscanIterator\(key, \{ match, count \}\): unknown option "pattern"/);
    });
  });

  describe('batches', () => {
    it('a pipeline shapes the added helpers the same way, and a wrong call throws when queued', async () => {
      await p.hset(k('ph'), 'f', 'v');
      const res = await p.pipeline().hexists(k('ph'), 'f').hmget(k('ph'), ['f']).zadd(k('pz'), 1, 'a').zrange(k('pz'), 0, -1, 'WITHSCORES').del([k('ph'), k('pz')]).exec();
      expect(res).toEqual([true, ['v'], 1, ['a', '1'], 2]);
      const batch = p.pipeline();
      expect(() => batch.set(k('x'), 'v', 'EXPIRE' as never, 1)).toThrow(/^set: unexpected argument "EXPIRE"/);
      expect(batch.length).toBe(0);
    });
  });
});
