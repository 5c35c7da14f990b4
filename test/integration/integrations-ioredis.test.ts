/**
 * `redis-ha-pool/ioredis` on a StandalonePool (one real redis-server 7.0): the facade's own
 * shapes (status and events, `[err, value]` tuples, callbacks on a later tick, TypeErrors for
 * what it does not support, a handle ending versus the pool closing, pub/sub events, scripts),
 * then the example flow of every library it serves: graphql-redis-subscriptions, @fastify/redis,
 * redlock 4 and 5, rate-limiter-flexible (ioredis mode).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolClosedError, RedisError, StandalonePool } from '../../src/index.js';
import { asIoredis } from '../../src/integrations/ioredis.js';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { allIoredisFlows, unique } from '../support/ioredis-flows.js';
import { sendCommand } from '../support/mini-client.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

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

/** A defined command, as a library calls it (not in the facade's static type). */
type Defined = Record<string, (...args: unknown[]) => Promise<unknown>>;

describe('the facade', () => {
  it('starts ready, emits connect then ready on a later tick, and answers PING', async () => {
    const r = asIoredis(pool);
    const events: string[] = [];
    r.on('connect', () => events.push('connect')).on('ready', () => events.push('ready'));
    expect(r.status).toBe('ready');
    expect(events).toEqual([]);
    await waitFor(() => events.length === 2, 'connect and ready');
    expect(events).toEqual(['connect', 'ready']);
    expect(await r.ping()).toBe('PONG');
    expect(await r.ping('hello')).toBe('hello');
  });

  it("passes the pool's error events to handles listening for error, and holds no pool listener otherwise", () => {
    const before = pool.listenerCount('error');
    const quiet = asIoredis(pool);
    expect(pool.listenerCount('error')).toBe(before);
    const loud = asIoredis(pool);
    const seen: Error[] = [];
    const onError = (e: Error) => seen.push(e);
    loud.on('error', onError);
    expect(pool.listenerCount('error')).toBe(before + 1);
    const e = new Error('background refresh failed');
    pool.emit('error', e);
    expect(seen).toEqual([e]);
    loud.off('error', onError);
    expect(pool.listenerCount('error')).toBe(before);
    loud.on('error', onError);
    loud.disconnect();
    quiet.disconnect();
    expect(pool.listenerCount('error')).toBe(before);
  });

  it('takes ioredis-style arguments: SET tokens, flattened arrays, records for HSET/MSET; HGETALL gives an object', async () => {
    const r = asIoredis(pool);
    const k = unique('k');
    expect(await r.set(k, 'v', 'PX', 60_000, 'NX')).toBe('OK');
    expect(await r.set(k, 'w', 'PX', 60_000, 'NX')).toBeNull();
    expect(Number(await r.pttl(k))).toBeGreaterThan(50_000);
    expect(await r.set(k, 'x', 'GET')).toBe('v');
    const h = unique('h');
    expect(await r.hset(h, { a: '1', b: 2 })).toBe(2);
    expect(await r.hset(h, 'c', '3', ['d', '4'])).toBe(2);
    expect(await r.hgetall(h)).toEqual({ a: '1', b: '2', c: '3', d: '4' });
    expect(await r.hgetall(unique('none'))).toEqual({});
    const m1 = `{m}${unique('a')}`;
    const m2 = `{m}${unique('b')}`;
    expect(await r.mset({ [m1]: 'x', [m2]: 'y' })).toBe('OK');
    expect(await r.mget([m1, m2], unique('missing'))).toEqual(['x', 'y', null]);
    expect(await r.del([m1, m2])).toBe(2);
    expect(await r.eval('return {KEYS[1], ARGV[1], 7}', 1, 'key', 'arg')).toEqual(['key', 'arg', 7]);
    expect(await r.incr(k + ':n')).toBe(1);
    expect(await r.call('HGETALL', h)).toEqual({ a: '1', b: '2', c: '3', d: '4' });
    expect(await r.send_command('GET', k)).toBe('x');
    expect(await r.getBuffer(k)).toEqual(Buffer.from('x'));
    expect(await r.callBuffer('GET', k)).toEqual(Buffer.from('x'));
  });

  it('pipeline() and multi() resolve [err, value] tuples; a failing command is its entry; exec(true) is accepted as ioredis accepts it', async () => {
    const r = asIoredis(pool);
    const k = unique('p');
    const p = r.pipeline().set(k, 'text').incr(k).get(k);
    expect(p.length).toBe(3);
    const out = await p.exec();
    expect(out![0]).toEqual([null, 'OK']);
    expect(out![1]![0]).toBeInstanceOf(RedisError);
    expect(out![1]![0]!.message).toMatch(/not an integer/);
    expect(out![2]).toEqual([null, 'text']);
    const t = await r.multi().set(k, 5).incrby(k, 2).pttl(k).hgetall(unique('none')).exec(true);
    expect(t).toEqual([[null, 'OK'], [null, 7], [null, -1], [null, {}]]);
    expect(await r.pipeline([['set', k, 'a'], ['get', k], ['call', 'STRLEN', k]]).exec()).toEqual([[null, 'OK'], [null, 'a'], [null, 1]]);
    expect(await r.pipeline().exec()).toEqual([]);
  });

  it('calls a node-style callback on a later tick, after the promise settled, for values and errors; the unused promise leaves no unhandled rejection', async () => {
    const r = asIoredis(pool);
    const k = unique('cb');
    await r.set(k, 'v');
    const order: string[] = [];
    const got = await new Promise<unknown>((resolve) => {
      const p = r.get(k, (err, value) => {
        order.push('callback');
        resolve([err, value]);
      });
      void p.then(() => order.push('promise'));
      order.push('returned');
    });
    expect(got).toEqual([null, 'v']);
    expect(order).toEqual(['returned', 'promise', 'callback']);

    const err = await new Promise<Error | null>((resolve) => void r.call('NOSUCHCOMMAND', (e) => resolve(e)));
    expect(err).toBeInstanceOf(RedisError);
    const tuple = await new Promise<unknown>((resolve) => {
      const batch = r.pipeline().get(k, (e, v) => resolve([e, v]));
      void batch.exec();
    });
    expect(tuple).toEqual([null, 'v']);
    const execd = await new Promise<unknown>((resolve) => void r.multi().get(k).exec((e, v) => resolve([e, v])));
    expect(execd).toEqual([null, [[null, 'v']]]);
  });

  it('defineCommand installs name and nameBuffer, takes an args array or varargs, survives SCRIPT FLUSH (NOSCRIPT -> EVAL), and reaches batches', async () => {
    const r = asIoredis(pool);
    r.defineCommand('echoKeys', { numberOfKeys: 2, lua: 'return {KEYS[1], KEYS[2], ARGV[1]}' });
    const c = r as unknown as Defined;
    expect(typeof c.echoKeys).toBe('function');
    expect(await c.echoKeys!(['{t}a', '{t}b', 'x'])).toEqual(['{t}a', '{t}b', 'x']);
    expect(await c.echoKeys!('{t}a', '{t}b', 'y')).toEqual(['{t}a', '{t}b', 'y']);
    expect(await c.echoKeysBuffer!('{t}a', '{t}b', 'z')).toEqual([Buffer.from('{t}a'), Buffer.from('{t}b'), Buffer.from('z')]);
    await sendCommand(topo.address, ['SCRIPT', 'FLUSH']);
    expect(await c.echoKeys!('{t}a', '{t}b', 'after-flush')).toEqual(['{t}a', '{t}b', 'after-flush']);
    r.defineCommand('dynamic', { lua: 'return #KEYS * 10 + #ARGV' });
    expect(await c.dynamic!(2, 'k1', 'k2', 'a')).toBe(21);
    expect(await c.dynamic!([0, 'a', 'b'])).toBe(2);
    const batch = r.pipeline() as unknown as Defined & { exec(): Promise<unknown> };
    batch.echoKeys!('{t}a', '{t}b', 'in-batch');
    expect(await batch.exec()).toEqual([[null, ['{t}a', '{t}b', 'in-batch']]]);
    // Redefining (two rate limiters on one client both define rlflxIncr) replaces it.
    r.defineCommand('echoKeys', { numberOfKeys: 1, lua: 'return KEYS[1]' });
    expect(await c.echoKeys!('only')).toBe('only');
  });

  it('refuses what it does not support with a TypeError naming the facade', async () => {
    const r = asIoredis(pool);
    const loose = r as unknown as Record<string, (...a: unknown[]) => unknown>;
    await expect(loose.set!('k', null)).rejects.toThrow(/asIoredis: set: argument 2 is null/);
    await expect(loose.set!('k', 'v', { EX: 10 })).rejects.toThrow(TypeError);
    await expect(loose.get!(undefined)).rejects.toThrow(/asIoredis: get/);
    await expect(loose.call!(42)).rejects.toThrow(/asIoredis: call/);
    expect(() => r.duplicate({ keyPrefix: 'x:' })).toThrow(/asIoredis: duplicate\(options\) does not take options \(got keyPrefix\)/);
    expect(() => r.multi({ pipeline: false })).toThrow(/asIoredis: multi\(\{ pipeline: false \}\)/);
    expect(() => r.disconnect(true)).toThrow(/asIoredis: disconnect\(reconnect\)/);
    expect(() => r.defineCommand('x', { lua: 'return 1', numberOfKeys: 0, readOnly: true } as never)).toThrow(/asIoredis: defineCommand option readOnly/);
    expect(() => r.defineCommand('get', { lua: 'return 1', numberOfKeys: 0 })).toThrow(/asIoredis: defineCommand\('get'\)/);
    expect(() => r.pipeline([['nosuch', 'k']] as never)).toThrow(/asIoredis: .*nosuch is not a command of the facade/);
    await expect(r.pipeline().exec('yes' as never)).rejects.toThrow(/asIoredis: exec\(\)/);
    await expect(r.subscribe()).rejects.toThrow(/asIoredis: subscribe\(\) needs at least one name/);
    expect(r.status).toBe('ready');
    // Defines only what it supports: libraries duck-type on these.
    for (const absent of ['isCluster', 'nodes', 'connect', 'ssubscribe', 'watch', 'select', 'options']) expect(absent in r).toBe(false);
  });

  it('pub/sub: message, messageBuffer, pmessage and pmessageBuffer events with exact bytes; counts; unsubscribe of an unknown name is a no-op', async () => {
    const sub = asIoredis(pool);
    const pub = asIoredis(pool);
    const ch = unique('ch');
    const events: unknown[][] = [];
    sub.on('message', (...a: unknown[]) => events.push(['message', ...a]));
    sub.on('messageBuffer', (...a: unknown[]) => events.push(['messageBuffer', ...a]));
    sub.on('pmessage', (...a: unknown[]) => events.push(['pmessage', ...a]));
    sub.on('pmessageBuffer', (...a: unknown[]) => events.push(['pmessageBuffer', ...a]));
    expect(await sub.subscribe(ch, `${ch}-2`)).toBe(2);
    expect(await sub.subscribe([ch])).toBe(2);
    const count = await new Promise<unknown>((resolve) => void sub.psubscribe(`${ch}*`, (e, n) => resolve([e, n])));
    expect(count).toEqual([null, 3]);
    const payload = Buffer.from([0xff, 0x00, 0x41]);
    expect(await pub.publish(ch, payload)).toBe(2);
    await waitFor(() => events.length === 4, 'four events');
    expect(events).toEqual([
      ['message', ch, payload.toString()],
      ['messageBuffer', Buffer.from(ch), payload],
      ['pmessage', `${ch}*`, ch, payload.toString()],
      ['pmessageBuffer', `${ch}*`, Buffer.from(ch), payload],
    ]);
    expect(await sub.unsubscribe('never-subscribed')).toBe(3);
    expect(await sub.punsubscribe('never-subscribed')).toBe(3);
    expect(await sub.unsubscribe()).toBe(1);
    expect(await sub.punsubscribe()).toBe(0);
    expect(await pub.publish(ch, 'gone')).toBe(0);
    // A subscribed handle still sends other commands (ioredis would refuse them in subscriber mode).
    expect(await sub.ping()).toBe('PONG');
  });

  it('a subscribe callback runs before any message of its channels, even one that arrives with the confirmation', async () => {
    // Eight publishers send back to back while the handle subscribes: in about one round in ten
    // a message shares the confirmation's read and reaches the pool before the subscribe call
    // has resolved. The facade holds it back until the callback has run (ioredis's order, which
    // graphql-redis-subscriptions relies on). Forty rounds make a miss all but certain to show.
    for (let round = 0; round < 40; round++) {
      const sub = asIoredis(pool);
      const ch = unique('first');
      let stop = false;
      let sent = 0;
      const publishers = Array.from({ length: 8 }, async () => {
        while (!stop) await pool.publish(ch, String(++sent));
      });
      await waitFor(() => sent > 16, 'the publishers to run', 20_000, 1);
      const order: string[] = [];
      sub.on('message', (_c: string, m: string) => order.push(m));
      await new Promise<void>((resolve) => void sub.subscribe(ch, () => {
        order.push('callback');
        resolve();
      }));
      await waitFor(() => order.length > 3, 'messages after the subscription', 20_000, 1);
      stop = true;
      await Promise.all(publishers);
      await sub.quit();
      expect(order[0], `round ${round}`).toBe('callback');
    }
  });

  it('quit() and disconnect() end the handle only: close/end events, later calls refused, blocking calls aborted (others complete), the pool and other handles unaffected', async () => {
    const a = asIoredis(pool);
    const b = a.duplicate();
    const events: string[] = [];
    a.on('close', () => events.push('close')).on('end', () => events.push('end'));
    await a.subscribe(unique('q'));
    expect(await a.quit()).toBe('OK');
    expect(a.status).toBe('end');
    await waitFor(() => events.length === 2, 'close and end');
    expect(events).toEqual(['close', 'end']);
    await expect(a.get('k')).rejects.toThrow(/Connection is closed/);
    await expect(a.pipeline().get('k').exec()).rejects.toThrow(/Connection is closed/);
    await expect(a.quit()).rejects.toThrow(/Connection is closed/);
    expect(await b.ping()).toBe('PONG');
    expect(await pool.call('PING')).toBe('PONG');

    const list = unique('list');
    const blocked = b.blpop(list, 0);
    const reading = b.xread('BLOCK', 0, 'STREAMS', unique('stream'), '$');
    await waitFor(async () => pool.stats().exclusive.borrowed === 2, 'the BLPOP and the XREAD BLOCK to hold exclusive connections');
    const plain = b.set(unique('inflight'), 'v');
    b.disconnect();
    expect(b.status).toBe('end');
    await expect(blocked).rejects.toThrow(/Connection is closed/);
    await expect(reading).rejects.toThrow(/Connection is closed/);
    expect(await plain).toBe('OK');
    await waitFor(() => pool.stats().exclusive.borrowed === 0, 'the aborted calls to give their connections back');
    await pool.rpush(list, 'x');
    const c = asIoredis(pool);
    expect(await c.blpop(list, 1)).toEqual([list, 'x']);
  });

  it('a RESP3 pool gives ioredis (RESP2) shapes: maps as flat arrays, HGETALL as an object', async () => {
    const p3 = await StandalonePool.create(topo.url, { protocol: 3 });
    try {
      const r = asIoredis(p3);
      const h = unique('h3');
      await r.hset(h, 'f', 'v');
      expect(await r.hgetall(h)).toEqual({ f: 'v' });
      expect(await r.call('CONFIG', 'GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      expect(await r.multi().hgetall(h).exec()).toEqual([[null, { f: 'v' }]]);
    } finally {
      await p3.close();
    }
  });

  it('after pool.close() every handle call rejects with PoolClosedError and status is end; rate-limiter-flexible sees it', async () => {
    const own = await StandalonePool.create(topo.url);
    const r = asIoredis(own);
    const ended = asIoredis(own);
    r.defineCommand('one', { numberOfKeys: 0, lua: 'return 1' });
    await r.subscribe(unique('closing'));
    const limiter = new RateLimiterRedis({ storeClient: r, points: 1, duration: 1, rejectIfRedisNotReady: true });
    await limiter.consume('x');
    await ended.quit();
    await own.close();
    expect(r.status).toBe('end');
    const calls: Array<() => Promise<unknown>> = [
      () => r.get('k'), () => r.call('PING'), () => r.ping(), () => r.pipeline().set('k', 1).exec(), () => r.multi().get('k').exec(),
      () => (r as unknown as Defined).one!(), () => r.subscribe('x'), () => r.unsubscribe(), () => r.quit(), () => ended.get('k'),
    ];
    for (const call of calls) await expect(call()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(limiter.consume('x')).rejects.toThrow(/Redis connection is not ready/);
  });
});

describe('the libraries', () => {
  allIoredisFlows({
    pool: () => pool,
    numsub: async (channel) => Number(((await sendCommand(topo.address, ['PUBSUB', 'NUMSUB', channel])) as unknown[])[1]),
  });
});
