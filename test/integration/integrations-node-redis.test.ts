/**
 * `redis-ha-pool/node-redis` on a StandalonePool (one real redis-server 7.0): the facade's own
 * shapes (node-redis option objects and replies, `multi()` with flat `exec()`, `scanIterator`
 * yielding arrays, pub/sub listeners in string and buffer mode, TypeErrors naming what it does
 * not handle, a handle ending versus the pool closing), then the example flow of every library
 * it serves: connect-redis with express-session, rate-limiter-flexible (node-redis mode), the
 * Socket.IO Redis adapter (classic and sharded) and Redis Streams adapter, rate-limit-redis
 * with express-rate-limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolClosedError, RedisError, StandalonePool } from '../../src/index.js';
import { asNodeRedis, ClientClosedError, MultiErrorReply } from '../../src/integrations/node-redis.js';
import { allNodeRedisFlows, unique } from '../support/node-redis-flows.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: StandaloneTopology;
let pool: StandalonePool;

beforeAll(async () => {
  topo = await startStandalone();
  pool = await StandalonePool.create(topo.url);
}, 60_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function numsub(kind: 'NUMSUB' | 'SHARDNUMSUB', channel: string): Promise<number> {
  return Number((await topo.server.cli('PUBSUB', kind, channel)).split('\n')[1]);
}

describe('the facade', () => {
  it('looks like an open node-redis client, and only like what it supports', async () => {
    const c = asNodeRedis(pool);
    expect(c.isOpen).toBe(true);
    expect(c.isReady).toBe(true);
    expect(await c.connect()).toBe(c);
    for (const m of ['pSubscribe', 'sSubscribe', 'subscribe', 'sendCommand', 'duplicate', 'scanIterator', 'multi', 'mGet', 'pTTL', 'xRead', 'sPublish']) {
      expect(typeof (c as unknown as Record<string, unknown>)[m]).toBe('function');
    }
    // Libraries pick their code path by these: a cluster client (masters, slots, nodeClient),
    // Sentinel (getSentinelNode), ioredis (status, defineCommand, send_command).
    for (const absent of ['masters', 'slots', '_slots', 'nodeClient', 'getSentinelNode', 'status', 'defineCommand', 'send_command', 'isCluster']) {
      expect(absent in c).toBe(false);
    }
  });

  it('SET takes node-redis options: expiration objects, the flat keys, condition, GET', async () => {
    const c = asNodeRedis(pool);
    const k = unique('set');
    expect(await c.set(k, 'a', { expiration: { type: 'EX', value: 100 } })).toBe('OK');
    expect(await c.ttl(k)).toBeGreaterThan(90);
    expect(await c.set(k, 'b', { expiration: { type: 'PX', value: 50_000 } })).toBe('OK');
    expect(await c.pTTL(k)).toBeLessThanOrEqual(50_000);
    expect(await c.set(k, 'c', { EX: 200 })).toBe('OK');
    expect(await c.ttl(k)).toBeGreaterThan(100);
    expect(await c.set(k, 'd', { expiration: 'KEEPTTL' })).toBe('OK');
    expect(await c.ttl(k)).toBeGreaterThan(100);
    expect(await c.set(k, 'e', { condition: 'NX' })).toBeNull();
    expect(await c.set(k, 'f', { NX: true })).toBeNull();
    expect(await c.set(k, 'g', { condition: 'XX', GET: true })).toBe('d');
    expect(await c.get(k)).toBe('g');
    expect(await c.ttl(k)).toBe(-1);
    const at = Math.floor(Date.now() / 1000) + 300;
    expect(await c.set(k, 'h', { expiration: { type: 'EXAT', value: at } })).toBe('OK');
    expect(await c.ttl(k)).toBeGreaterThan(250);
  });

  it('refuses an option it does not handle with a TypeError naming it and the facade, and sends nothing', async () => {
    const c = asNodeRedis(pool);
    const k = unique('refused');
    await expect(c.set(k, 'v', { EXPIRE: 10 } as never)).rejects.toThrow(/asNodeRedis: set\(\) got the option "EXPIRE"/);
    await expect(c.set(k, 'v', { expiration: { type: 'EX', value: 1, unit: 's' } } as never)).rejects.toThrow(/option "unit"/);
    await expect(c.set(k, 'v', { expiration: { type: 'SECONDS', value: 1 } } as never)).rejects.toThrow(/expiration\.type "SECONDS"/);
    await expect(c.set(k, 'v', { condition: 'IFEQ' } as never)).rejects.toThrow(/asNodeRedis: set\(\) got condition "IFEQ"/);
    expect(await c.exists(k)).toBe(0);
    await expect(c.scan('0', { match: '*' } as never)).rejects.toThrow(/asNodeRedis: scan\(\) got the option "match"/);
    expect(() => c.scanIterator({ MATCH: '*', cursor: '0' } as never)).toThrow(/asNodeRedis: scanIterator\(\) got the option "cursor"/);
    await expect(c.eval('return 1', { keys: [], numKeys: 0 } as never)).rejects.toThrow(/eval\(\) got the option "numKeys"/);
    await expect(c.xAdd(k, '*', { f: 'v' }, { TRIM: { threshold: 10 } } as never)).rejects.toThrow(/xAdd\(\) needs TRIM.strategy/);
    await expect(c.xAdd(k, '*', { f: 'v' }, { NOMKSTREAM: true } as never)).rejects.toThrow(/xAdd\(\) got the option "NOMKSTREAM"/);
    await expect(c.xRead({ key: k, id: '0' }, { MAXCOUNT: 1 } as never)).rejects.toThrow(/xRead\(\) got the option "MAXCOUNT"/);
    await expect(c.sendCommand('PING' as never)).rejects.toThrow(/asNodeRedis: sendCommand\(\) takes the command as a non-empty array/);
    await expect(c.sendCommand(['PING'], { asap: true } as never)).rejects.toThrow(/sendCommand\(\) got the option "asap"/);
    await expect(c.flushDb('NOW' as never)).rejects.toThrow(/flushDb\(\) takes 'ASYNC' or 'SYNC'/);
    expect(() => c.duplicate({ url: 'redis://elsewhere' } as never)).toThrow(/asNodeRedis: duplicate\(\) got the option "url"/);
    expect(() => c.multi().set(k, 'v', { PXX: 1 } as never)).toThrow(/set\(\) got the option "PXX"/);
    await expect(c.subscribe('ch', undefined as never)).rejects.toThrow(/subscribe\(\) needs a listener function/);
    await expect(c.pSubscribe([], () => {})).rejects.toThrow(/pSubscribe\(\) takes a name or an array of names/);
    expect(await c.exists(k)).toBe(0);
    expect(() => asNodeRedis({} as never)).toThrow(/asNodeRedis\(pool\) takes a StandalonePool, SentinelPool or ClusterPool/);
  });

  it.skipIf(!server.has('expire-options'))(`takes keys one by one or as arrays, and answers as node-redis v5 does (numbers, null, arrays) ${server.needs('expire-options')}`, async () => {
    const c = asNodeRedis(pool);
    const [a, b, missing] = [unique('a'), unique('b'), unique('missing')];
    await c.set(a, '1');
    await c.set(b, '2');
    expect(await c.mGet([a, missing, b])).toEqual(['1', null, '2']);
    expect(await c.mGet(a)).toEqual(['1']);
    expect(await c.exists([a, b, missing])).toBe(2);
    expect(await c.incrBy(a, 41)).toBe(42);
    expect(await c.expire(a, 100)).toBe(1);
    expect(await c.expire(a, 50, 'GT')).toBe(0);
    expect(await c.pExpire(b, 90_000)).toBe(1);
    expect(await c.pTTL(b)).toBeGreaterThan(80_000);
    expect(await c.ttl(missing)).toBe(-2);
    expect(await c.unlink(b)).toBe(1);
    expect(await c.del([a, missing])).toBe(1);
    expect(await c.del(missing)).toBe(0);
    expect(await c.sendCommand(['SET', a, 'raw'])).toBe('OK');
    expect(await c.sendCommand(['GET', a])).toBe('raw');
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await expect(c.sendCommand(['GET', a], { abortSignal: ac.signal })).rejects.toThrow('stop');
  });

  it('EVAL/EVALSHA take { keys, arguments }; NOSCRIPT reaches the caller as node-redis words it', async () => {
    const c = asNodeRedis(pool);
    const k = unique('eval');
    const src = "redis.call('SET', KEYS[1], ARGV[1]); return {KEYS[1], ARGV[1], ARGV[2]}";
    expect(await c.eval(src, { keys: [k], arguments: ['x', 'y'] })).toEqual([k, 'x', 'y']);
    expect(await c.eval('return ARGV[1]', { arguments: 'only' })).toBe('only');
    expect(await c.eval('return 7')).toBe(7);
    const sha = (await c.sendCommand(['SCRIPT', 'LOAD', 'return KEYS[1]'])) as string;
    expect(await c.evalSha(sha, { keys: [k] })).toBe(k);
    const err = await c.evalSha('0'.repeat(40), { keys: [k] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as Error).message).toMatch(/^NOSCRIPT/);
  });

  it('streams: xAdd with TRIM, xRange, xRead (and a blocking xRead woken by another handle)', async () => {
    const c = asNodeRedis(pool);
    const s = unique('stream');
    for (let i = 0; i < 30; i++) await c.xAdd(s, '*', { n: String(i) }, { TRIM: { strategy: 'MAXLEN', strategyModifier: '=', threshold: 5 } });
    const entries = await c.xRange(s, '-', '+');
    expect(entries.map((e) => e.message.n)).toEqual(['25', '26', '27', '28', '29']);
    expect(await c.xRange(s, '-', '+', { COUNT: 2 })).toHaveLength(2);
    const read = await c.xRead({ key: s, id: entries[3]!.id }, { COUNT: 10 });
    expect(read).toEqual([{ name: s, messages: [{ id: entries[4]!.id, message: { n: '29' } }] }]);
    expect(await c.xRead([{ key: s, id: '$' }], { BLOCK: 50 })).toBeNull();
    const reader = c.duplicate();
    const pending = reader.xRead({ key: s, id: '$' }, { BLOCK: 20_000, COUNT: 1 });
    await waitFor(async () => /blocked_clients:1/.test(await topo.server.cli('INFO', 'clients')), 'the reader to block');
    const id = await c.xAdd(s, '*', { n: 'late' });
    expect(await pending).toEqual([{ name: s, messages: [{ id, message: { n: 'late' } }] }]);
  });

  it('destroy() aborts its blocking xRead at once; the pool and other handles go on', async () => {
    const c = asNodeRedis(pool);
    const reader = c.duplicate();
    const s = unique('blocked');
    const pending = reader.xRead({ key: s, id: '$' }, { BLOCK: 30_000 });
    await waitFor(async () => /blocked_clients:1/.test(await topo.server.cli('INFO', 'clients')), 'the reader to block');
    reader.destroy();
    await expect(pending).rejects.toBeInstanceOf(ClientClosedError);
    expect(await c.xAdd(s, '*', { still: 'works' })).toMatch(/^\d+-\d+$/);
  });

  it('scan gives { cursor, keys }; scanIterator yields arrays of at most COUNT keys, covering every match once', async () => {
    const c = asNodeRedis(pool);
    const prefix = unique('scan');
    const keys = Array.from({ length: 45 }, (_, i) => `${prefix}:${i}`);
    for (const k of keys) await c.set(k, 'v');
    await c.xAdd(`${prefix}:stream`, '*', { f: 'v' });
    const step = await c.scan('0', { MATCH: `${prefix}:*`, COUNT: 1000, TYPE: 'string' });
    expect(typeof step.cursor).toBe('string');
    expect(step.keys.sort()).toEqual([...keys].sort());
    const batches: string[][] = [];
    for await (const batch of c.scanIterator({ MATCH: `${prefix}:*`, COUNT: 10 })) batches.push(batch);
    expect(batches.every((b) => Array.isArray(b) && b.length > 0 && b.length <= 10)).toBe(true);
    expect(batches.flat().sort()).toEqual([...keys, `${prefix}:stream`].sort());
    const strings: string[] = [];
    for await (const batch of c.scanIterator({ MATCH: `${prefix}:*`, TYPE: 'stream' })) strings.push(...batch);
    expect(strings).toEqual([`${prefix}:stream`]);
  });

  it('multi() chains camelCase commands; exec() is flat, exec(true) pipelines, failures give MultiErrorReply', async () => {
    const c = asNodeRedis(pool);
    const k = unique('multi');
    const r = await c.multi().set(k, '5', { EX: 60 }).incrBy(k, 3).pTTL(k).get(k).exec();
    expect(r.slice(0, 2)).toEqual(['OK', 8]);
    expect(r[2]).toBeGreaterThan(50_000);
    expect(r[3]).toBe('8');
    const p = await c.multi().incrBy(k, 1).pTTL(k).exec(true);
    expect(p[0]).toBe(9);
    expect(await c.multi().exec()).toEqual([]);
    expect(await c.multi().execAsPipeline()).toEqual([]);
    expect(await c.multi().addCommand(['SET', k, 'x']).get(k).del(k).exec()).toEqual(['OK', 'x', 1]);
    await c.set(k, 'text');
    const err = await c.multi().get(k).incrBy(k, 1).exec().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MultiErrorReply);
    expect((err as MultiErrorReply).errorIndexes).toEqual([1]);
    expect((err as MultiErrorReply).replies[0]).toBe('text');
    expect((err as MultiErrorReply).replies[1]).toBeInstanceOf(RedisError);
  });

  it.skipIf(!server.has('sharded-pubsub'))(`pub/sub: string and buffer listeners, patterns, sharded channels, unsubscribe by name and by listener ${server.needs('sharded-pubsub')}`, async () => {
    const sub = asNodeRedis(pool);
    const pub = asNodeRedis(pool);
    const ch = unique('ch');
    const strings: Array<[unknown, unknown]> = [];
    const buffers: Array<[unknown, unknown]> = [];
    const onString = (m: string, c: string) => strings.push([m, c]);
    const onBuffer = (m: Buffer, c: Buffer) => buffers.push([m, c]);
    await sub.subscribe(ch, onString);
    await sub.subscribe([ch], onBuffer, true);
    expect(sub.isPubSubActive).toBe(true);
    expect(await numsub('NUMSUB', ch)).toBe(1);
    expect(await pub.publish(ch, 'hello')).toBe(1);
    await waitFor(() => strings.length === 1 && buffers.length === 1, 'both listeners');
    expect(strings[0]).toEqual(['hello', ch]);
    expect(Buffer.isBuffer(buffers[0]![0]) && Buffer.isBuffer(buffers[0]![1])).toBe(true);
    expect(buffers[0]!.map(String)).toEqual(['hello', ch]);

    await sub.unsubscribe(ch, onString);
    expect(await numsub('NUMSUB', ch)).toBe(1);
    await pub.publish(ch, 'second');
    await waitFor(() => buffers.length === 2, 'the buffer listener alone');
    expect(strings).toHaveLength(1);
    await sub.unsubscribe(ch, onBuffer, true);
    expect(await numsub('NUMSUB', ch)).toBe(0);

    const pattern = `${unique('pat')}:*`;
    const viaPattern: unknown[] = [];
    await sub.pSubscribe(pattern, (m: string, c: string) => viaPattern.push([m, c]));
    const target = pattern.replace('*', 'room1');
    await pub.publish(target, 'p');
    await waitFor(() => viaPattern.length === 1, 'the pattern message');
    expect(viaPattern[0]).toEqual(['p', target]);
    await sub.pUnsubscribe(pattern);

    const sharded = unique('sch');
    const viaShard: unknown[] = [];
    await sub.sSubscribe(sharded, (m: Buffer) => viaShard.push(m.toString()), true);
    expect(await numsub('SHARDNUMSUB', sharded)).toBe(1);
    expect(await pub.sPublish(sharded, 's')).toBe(1);
    await waitFor(() => viaShard.length === 1, 'the sharded message');
    await sub.sUnsubscribe();
    expect(await numsub('SHARDNUMSUB', sharded)).toBe(0);
    expect(sub.isPubSubActive).toBe(false);
  });

  it('a listener that throws does not keep the message from the others; the handle reports it', async () => {
    const sub = asNodeRedis(pool);
    const errors: unknown[] = [];
    sub.on('error', (e) => errors.push(e));
    const ch = unique('throws');
    const heard: string[] = [];
    await sub.subscribe(ch, () => { throw new Error('listener bug'); });
    await sub.subscribe(ch, (m: string) => heard.push(m));
    await pool.publish(ch, 'x');
    await waitFor(() => heard.length === 1 && errors.length === 1, 'the other listener and the error');
    expect((errors[0] as Error).message).toBe('listener bug');
    await sub.quit();
  });
});

describe('a handle never owns the pool', () => {
  it('quit/close/destroy/disconnect end the handle only: its calls reject, its subscriptions end, the pool and other handles go on', async () => {
    for (const end of ['quit', 'close', 'destroy', 'disconnect'] as const) {
      const c = asNodeRedis(pool);
      const other = c.duplicate();
      const ch = unique(`end-${end}`);
      await c.subscribe(ch, () => {});
      const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
      const r = c[end]();
      if (end === 'quit') expect(await r).toBe('OK');
      else await r;
      await ended;
      expect(c.isOpen).toBe(false);
      await expect(c.get('k')).rejects.toBeInstanceOf(ClientClosedError);
      await expect(c.sendCommand(['PING'])).rejects.toBeInstanceOf(ClientClosedError);
      await expect(c.multi().get('k').exec()).rejects.toBeInstanceOf(ClientClosedError);
      await waitFor(async () => (await numsub('NUMSUB', ch)) === 0, `the ${end}ed handle's subscription to end`);
      expect(await other.sendCommand(['PING'])).toBe('PONG');
      expect(await pool.call('PING')).toBe('PONG');
      // connect() opens it again, as node-redis reconnects a closed client.
      await c.connect();
      expect(c.isOpen).toBe(true);
      expect(await c.sendCommand(['PING'])).toBe('PONG');
    }
  });

  it('a subscribe still pending when its name is unsubscribed or its handle closes resolves; one cut off by pool.close() rejects', async () => {
    // The Socket.IO adapters subscribe without awaiting: a rejection there would be unhandled.
    const c = asNodeRedis(pool);
    const ch = unique('pending');
    const p1 = c.subscribe(ch, () => {});
    const u = c.unsubscribe(ch);
    await expect(p1).resolves.toBeUndefined();
    await u;
    const p2 = c.pSubscribe(`${ch}:*`, () => {});
    c.destroy();
    await expect(p2).resolves.toBeUndefined();
    await waitFor(async () => Number((await topo.server.cli('PUBSUB', 'NUMPAT'))) === 0, 'no pattern left');
    const p = await StandalonePool.create(topo.url);
    const d = asNodeRedis(p);
    const p3 = d.subscribe(ch, () => {});
    const p4 = d.subscribe(`${ch}-given-up`, () => {});
    void d.unsubscribe(`${ch}-given-up`);
    await p.close();
    await expect(p3).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p4).resolves.toBeUndefined();
  });

  it('after pool.close() every call of every handle rejects with PoolClosedError', async () => {
    const p = await StandalonePool.create(topo.url);
    const c = asNodeRedis(p);
    const d = c.duplicate();
    const ch = unique('closing');
    await c.subscribe(ch, () => {});
    await p.close();
    expect(c.isOpen).toBe(false);
    expect(d.isReady).toBe(false);
    const calls: Array<() => Promise<unknown>> = [
      () => c.get('k'), () => c.set('k', 'v', { EX: 1 }), () => c.mGet(['k']), () => c.del(['k']), () => c.expire('k', 1), () => c.pTTL('k'),
      () => c.incrBy('k', 1), () => c.eval('return 1'), () => c.xAdd('s', '*', { f: 'v' }), () => c.xRead({ key: 's', id: '$' }, { BLOCK: 10 }),
      () => c.scan('0'), () => c.publish(ch, 'x'), () => c.sPublish(ch, 'x'), () => c.sendCommand(['PING']), () => c.flushDb(),
      () => c.multi().get('k').exec(), () => c.multi().get('k').exec(true), () => c.subscribe(ch, () => {}), () => c.sSubscribe('s', () => {}),
      () => c.connect(), () => d.get('k'), () => c.scanIterator().next(),
    ];
    for (const call of calls) await expect(call()).rejects.toBeInstanceOf(PoolClosedError);
    await c.quit();
    await expect(c.get('k')).rejects.toBeInstanceOf(PoolClosedError);
    expect(() => c.duplicate()).toThrow(PoolClosedError);
  });
});

describe('library flows on a StandalonePool', () => {
  allNodeRedisFlows({
    pool: () => pool,
    createPool: () => StandalonePool.create(topo.url),
    numsub: (channel) => numsub('NUMSUB', channel),
  });
});
