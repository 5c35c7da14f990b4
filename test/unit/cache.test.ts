/**
 * The client-side cache's decisions without sockets: what is cached (the table), the freshness
 * rules for reads in flight (an invalidation or a flush while a read is out keeps its reply out
 * of the cache), slot flushes, and option checks. The connection is a bare event emitter that
 * delivers `invalidate` pushes, as a RESP3 connection does.
 */
import { EventEmitter } from 'eventemitter3';
import { describe, expect, it } from 'vitest';
import { cachePlan, copyReply, entryId } from '../../src/cache/cacheable.js';
import { ClientCache, YIELD } from '../../src/cache/client-cache.js';
import { resolveCacheOptions, trackingCommand } from '../../src/cache/options.js';
import type { Connection } from '../../src/connection/connection.js';
import type { Reply } from '../../src/types.js';
import { deferred } from '../support/deferred.js';

const OPTS = resolveCacheOptions({}, 3)!;


function fakeConnection(lane = true): Connection & EventEmitter {
  const c = new EventEmitter() as unknown as Connection & EventEmitter;
  (c as { lane: boolean }).lane = lane;
  return c;
}

describe('cachePlan', () => {
  it.each([
    [['GET', 'k'], { kind: 'read', key: 'k', entry: 'get k' }],
    [['hget', 'h', 'f'], { kind: 'read', key: 'h', entry: entryId('hget', ['hget', 'h', 'f']) }],
    [['ZRANGE', 'z', 0, -1], { kind: 'read', key: 'z', entry: entryId('zrange', ['ZRANGE', 'z', 0, -1]) }],
    [['EXISTS', 'a'], { kind: 'read', key: 'a', entry: 'exists a' }],
    [['EXISTS', 'a', 'b'], { kind: 'none' }],
    [['MGET', 'a', 'b'], { kind: 'mget', keys: ['a', 'b'] }],
    [['TTL', 'k'], { kind: 'none' }],
    [['GETEX', 'k', 'EX', 10], { kind: 'write', keys: ['k'] }],
    [['SRANDMEMBER', 's'], { kind: 'none' }],
    [['SET', 'k', 'v'], { kind: 'write', keys: ['k'] }],
    [['MSET', 'a', '1', 'b', '2'], { kind: 'write', keys: ['a', 'b'] }],
    [['DEL', 'a', 'b'], { kind: 'write', keys: ['a', 'b'] }],
    [['EVAL', 'return 1', 1, 'k'], { kind: 'write', keys: ['k'] }],
    [['GET', Buffer.from('k')], { kind: 'none' }],
    [['PING'], { kind: 'none' }],
  ])('%j', (args, plan) => {
    expect(cachePlan(args as never, undefined)).toEqual(plan);
  });

  it('ids keep argument boundaries apart', () => {
    expect(entryId('hget', ['hget', 'a b', 'c'])).not.toBe(entryId('hget', ['hget', 'a', 'b c']));
  });

  it('with prefixes only keys under them are cached', () => {
    expect(cachePlan(['GET', 'app:x'], ['app:']).kind).toBe('read');
    expect(cachePlan(['GET', 'other'], ['app:']).kind).toBe('none');
  });
});

describe('ClientCache freshness', () => {
  it('identical reads in flight share one request; the reply is kept', async () => {
    const cache = new ClientCache(OPTS);
    const d = deferred<Reply>();
    let sends = 0;
    const send = () => { sends++; return d.promise; };
    const a = cache.run(['GET', 'k'], send) as Promise<Reply>;
    const b = cache.run(['GET', 'k'], send) as Promise<Reply>;
    expect(sends).toBe(1);
    d.resolve('v');
    expect(await a).toBe('v');
    expect(await b).toBe('v');
    expect(cache.run(['GET', 'k'], send)).toBe('v');
  });

  it('an invalidation while the read is out keeps its (possibly old) reply out of the cache', async () => {
    const cache = new ClientCache(OPTS);
    const conn = fakeConnection();
    cache.attach(conn);
    const d = deferred<Reply>();
    const p = cache.run(['GET', 'k'], () => d.promise) as Promise<Reply>;
    conn.emit('push', ['invalidate', ['k']]);
    d.resolve('old');
    expect(await p).toBe('old');
    expect(cache.stats().entries).toBe(0);
  });

  it('a flush while the read is out does the same (a connection lost, a failover)', async () => {
    const cache = new ClientCache(OPTS);
    const d = deferred<Reply>();
    const p = cache.run(['GET', 'k'], () => d.promise) as Promise<Reply>;
    cache.flush('failover');
    d.resolve('old');
    await p;
    expect(cache.stats()).toMatchObject({ entries: 0, flushes: { failover: 1 } });
  });

  it("a lost lane flushes; a lease's connection does not", async () => {
    const cache = new ClientCache(OPTS);
    const lane = fakeConnection(true);
    const lease = fakeConnection(false);
    cache.attach(lane);
    cache.attach(lease);
    await cache.run(['GET', 'k'], async () => 'v');
    lease.emit('close', undefined);
    expect(cache.stats().entries).toBe(1);
    lane.emit('close', new Error('dropped'));
    expect(cache.stats()).toMatchObject({ entries: 0, flushes: { 'connection-lost': 1 } });
    // A lane the pool closes on purpose counts as 'closed'.
    const closing = fakeConnection(true);
    cache.attach(closing);
    await cache.run(['GET', 'k2'], async () => 'v');
    closing.emit('close', undefined);
    expect(cache.stats()).toMatchObject({ entries: 0, flushes: { 'connection-lost': 1, closed: 1 } });
  });

  it('a null invalidation flushes everything', async () => {
    const cache = new ClientCache(OPTS);
    const conn = fakeConnection();
    cache.attach(conn);
    await cache.run(['GET', 'a'], async () => '1');
    await cache.run(['GET', 'b'], async () => '2');
    conn.emit('push', ['invalidate', null]);
    expect(cache.stats()).toMatchObject({ entries: 0, flushes: { flushall: 1 } });
  });

  it('a slot flush drops only the keys of those slots, and poisons their reads in flight', async () => {
    const cache = new ClientCache(OPTS, (key) => (key.startsWith('a') ? 1 : 2));
    await cache.run(['GET', 'a1'], async () => '1');
    await cache.run(['GET', 'b1'], async () => '2');
    const d = deferred<Reply>();
    const p = cache.run(['GET', 'a2'], () => d.promise) as Promise<Reply>;
    cache.flushGroups(new Set([1]), 'slot-moved');
    d.resolve('x');
    await p;
    expect(cache.run(['GET', 'b1'], async () => 'server')).toBe('2');
    expect(cache.stats().entries).toBe(1);
  });

  it('an error reply is not cached', async () => {
    const cache = new ClientCache(OPTS);
    const { RedisError } = await import('../../src/errors.js');
    const err = new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value');
    await (cache.run(['GET', 'k'], async () => err as unknown as Reply) as Promise<Reply>);
    expect(cache.stats().entries).toBe(0);
  });

  it('after hitsPerTurn hits in one turn the next one yields', async () => {
    const cache = new ClientCache({ ...OPTS, hitsPerTurn: 3 });
    await cache.run(['GET', 'k'], async () => 'v');
    await new Promise((r) => setImmediate(r));
    const results = [1, 2, 3, 4].map(() => cache.run(['GET', 'k'], async () => 'server'));
    expect(results).toEqual(['v', 'v', 'v', YIELD]);
    await cache.nextTurn();
    expect(cache.run(['GET', 'k'], async () => 'server')).toBe('v');
  });
});

describe('cache options', () => {
  it('defaults and the tracking command', () => {
    expect(OPTS).toEqual({ maxEntries: 10_000, maxBytes: 64 * 1024 * 1024, ttl: 60_000, mode: 'default', prefixes: undefined, hitsPerTurn: 1000 });
    expect(trackingCommand(OPTS)).toEqual(['CLIENT', 'TRACKING', 'ON']);
    expect(trackingCommand(resolveCacheOptions({ mode: 'broadcast', prefixes: ['a:', 'b:'] }, 3)!)).toEqual(['CLIENT', 'TRACKING', 'ON', 'BCAST', 'PREFIX', 'a:', 'PREFIX', 'b:']);
    expect(resolveCacheOptions(undefined, 2)).toBeUndefined();
  });
  it.each([
    [{}, 2, /protocol: 3/],
    [{ maxEntries: 0 }, 3, /cache.maxEntries/],
    [{ maxBytes: 10 }, 3, /cache.maxBytes/],
    [{ ttl: -1 }, 3, /cache.ttl/],
    [{ hitsPerTurn: 0 }, 3, /cache.hitsPerTurn/],
    [{ mode: 'x' }, 3, /cache.mode/],
    [{ prefixes: 'a' }, 3, /cache.prefixes/],
    [{ other: 1 }, 3, /cache.other/],
    [5, 3, /Option cache must be an object/],
  ])('refuses %j (protocol %i)', (o, protocol, message) => {
    expect(() => resolveCacheOptions(o, protocol as 2 | 3)).toThrow(TypeError);
    expect(() => resolveCacheOptions(o, protocol as 2 | 3)).toThrow(message);
  });
});

describe('copyReply: what each caller of a cached reply gets', () => {
  it('returns scalars as they are (no allocation on the common hit) and new containers all the way down', () => {
    const buf = Buffer.from('x');
    for (const v of ['s', 1, 2n, true, null, buf]) expect(copyReply(v)).toBe(v);
    const nested = ['a', ['b', ['c']], new Map<unknown, unknown>([['k', ['v']]]), new Set(['m'])];
    const c = copyReply(nested);
    expect(c).toEqual(nested);
    expect(c).not.toBe(nested);
    expect(c[1]).not.toBe(nested[1]);
    expect((c[1] as unknown[])[1]).not.toBe((nested[1] as unknown[])[1]);
    expect(c[2]).not.toBe(nested[2]);
    expect((c[2] as Map<unknown, unknown>).get('k')).not.toBe((nested[2] as Map<unknown, unknown>).get('k'));
    expect(c[3]).not.toBe(nested[3]);
    (c[1] as unknown[]).push('changed');
    expect(nested[1]).toEqual(['b', ['c']]);
  });
});
