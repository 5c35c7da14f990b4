/**
 * StandalonePool against a real redis-server: every typed helper under RESP2 and RESP3,
 * binary safety, pipelines and transactions, leases, generation swaps, close(), option
 * validation, authentication, and behaviour while the server is killed or paused.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConnectionError,
  PoolClosedError,
  RedisError,
  StandalonePool,
  TimeoutError,
  UncertainWriteError,
  type StandaloneOptions,
} from '../../src/index.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

const PROTOCOLS = [2, 3] as const;

/** Settles a promise into `{ ok, value | error }` so tests can inspect rejections without unhandled ones. */
function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** Names of the clients connected to a server, from CLIENT LIST. */
async function clientNames(topo: StandaloneTopology): Promise<string[]> {
  const list = await topo.server.cli('CLIENT', 'LIST');
  return list
    .split('\n')
    .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? '')
    .filter((n) => n !== '');
}

async function countClients(topo: StandaloneTopology, name: string): Promise<number> {
  return (await clientNames(topo)).filter((n) => n === name).length;
}

/** Yields to the event loop once, so commands queued this tick have been written to the socket. */
const flushed = (): Promise<void> => new Promise((r) => setImmediate(r));

let shared: StandaloneTopology;
const pools: StandalonePool[] = [];
const extraTopologies: StandaloneTopology[] = [];

/** Creates a pool that is closed after the test even if it fails. */
async function pool(address: StandaloneTopology | string, options: StandaloneOptions = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(typeof address === 'string' ? address : address.url, options);
  pools.push(p);
  return p;
}

/** A server of its own, for tests that kill, pause or authenticate. Stopped after the test. */
async function ownServer(options?: Parameters<typeof startStandalone>[0]): Promise<StandaloneTopology> {
  const t = await startStandalone(options);
  extraTopologies.push(t);
  return t;
}

beforeAll(async () => {
  shared = await startStandalone();
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  await Promise.all(extraTopologies.splice(0).map((t) => t.stop()));
});

afterAll(async () => {
  await shared?.stop();
});

describe.each(PROTOCOLS)('typed helpers, protocol %i', (protocol) => {
  let p: StandalonePool;
  const k = (name: string) => `helpers:p${protocol}:${name}`;

  beforeAll(async () => {
    p = await StandalonePool.create(shared.url, { protocol, clientName: `helpers-p${protocol}` });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('get / set with EX, PX, NX, XX, GET', async () => {
    expect(await p.get(k('missing'))).toBeNull();
    expect(await p.set(k('s'), 'v1')).toBe('OK');
    expect(await p.get(k('s'))).toBe('v1');

    expect(await p.set(k('ex'), 'x', { EX: 100 })).toBe('OK');
    const ttl = await p.ttl(k('ex'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(100);

    expect(await p.set(k('px'), 'x', { PX: 100_000 })).toBe('OK');
    const pttl = await p.call<number>('PTTL', k('px'));
    expect(pttl).toBeGreaterThan(90_000);
    expect(pttl).toBeLessThanOrEqual(100_000);

    expect(await p.set(k('s'), 'v2', { NX: true })).toBeNull();
    expect(await p.get(k('s'))).toBe('v1');
    expect(await p.set(k('nx-new'), 'n', { NX: true })).toBe('OK');

    expect(await p.set(k('xx-missing'), 'x', { XX: true })).toBeNull();
    expect(await p.exists(k('xx-missing'))).toBe(0);
    expect(await p.set(k('s'), 'v3', { XX: true })).toBe('OK');

    expect(await p.set(k('s'), 'v4', { GET: true })).toBe('v3');
    expect(await p.set(k('get-new'), 'g', { GET: true })).toBeNull();
    expect(await p.get(k('s'))).toBe('v4');
  });

  it('del / exists / expire / ttl', async () => {
    await p.set(k('d1'), '1');
    await p.set(k('d2'), '2');
    expect(await p.exists(k('d1'), k('d2'), k('d-missing'))).toBe(2);
    expect(await p.ttl(k('d1'))).toBe(-1);
    expect(await p.ttl(k('d-missing'))).toBe(-2);
    expect(await p.expire(k('d1'), 50)).toBe(1);
    const ttl = await p.ttl(k('d1'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(50);
    expect(await p.expire(k('d-missing'), 10)).toBe(0);
    expect(await p.del(k('d1'), k('d2'), k('d-missing'))).toBe(2);
    expect(await p.exists(k('d1'))).toBe(0);
  });

  it.skipIf(!server.has('expire-options'))(`expire NX leaves an existing TTL alone ${server.needs('expire-options')}`, async () => {
    await p.set(k('dx'), '1');
    expect(await p.expire(k('dx'), 50)).toBe(1);
    expect(await p.expire(k('dx'), 10, 'NX')).toBe(0); // already has a TTL
    expect(await p.ttl(k('dx'))).toBeGreaterThan(10);
  });

  it('incr / incrby / decr', async () => {
    expect(await p.incr(k('n'))).toBe(1);
    expect(await p.incrby(k('n'), 10)).toBe(11);
    expect(await p.incrby(k('n'), 5n)).toBe(16);
    expect(await p.decr(k('n'))).toBe(15);
    expect(await p.incrby(k('n'), -20)).toBe(-5);
    await p.set(k('not-a-number'), 'abc');
    const err = await p.incr(k('not-a-number')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).code).toBe('ERR');
  });

  it('mget / mset, both forms', async () => {
    expect(await p.mset(k('m1'), '1', k('m2'), '2')).toBe('OK');
    expect(await p.mset({ [k('m3')]: '3', [k('m4')]: 4 })).toBe('OK');
    expect(await p.mget(k('m1'), k('m2'), k('m-missing'), k('m3'), k('m4'))).toEqual(['1', '2', null, '3', '4']);
  });

  it('hget / hset (both forms) / hgetall as a plain object / hdel', async () => {
    expect(await p.hset(k('h'), 'f1', 'v1')).toBe(1);
    expect(await p.hset(k('h'), { f2: 'v2', f3: 3 })).toBe(2);
    expect(await p.hset(k('h'), 'f1', 'v1b')).toBe(0);
    expect(await p.hget(k('h'), 'f1')).toBe('v1b');
    expect(await p.hget(k('h'), 'nope')).toBeNull();
    const all = await p.hgetall(k('h'));
    expect(Object.getPrototypeOf(all)).toBe(Object.prototype);
    expect(all).toEqual({ f1: 'v1b', f2: 'v2', f3: '3' });
    expect(await p.hgetall(k('h-missing'))).toEqual({});
    expect(await p.hdel(k('h'), 'f1', 'f3', 'nope')).toBe(2);
    expect(await p.hgetall(k('h'))).toEqual({ f2: 'v2' });
  });

  it('lpush / rpush / lpop / rpop (with count) / lrange', async () => {
    expect(await p.rpush(k('l'), 'a', 'b', 'c')).toBe(3);
    expect(await p.lpush(k('l'), 'y', 'z')).toBe(5);
    expect(await p.lrange(k('l'), 0, -1)).toEqual(['z', 'y', 'a', 'b', 'c']);
    expect(await p.lpop(k('l'))).toBe('z');
    expect(await p.rpop(k('l'))).toBe('c');
    expect(await p.rpop(k('l'), 2)).toEqual(['b', 'a']);
    expect(await p.lpop(k('l'), 5)).toEqual(['y']);
    expect(await p.lpop(k('l'))).toBeNull();
    expect(await p.rpop(k('l'), 2)).toBeNull();
    expect(await p.lrange(k('l'), 0, -1)).toEqual([]);
  });

  it('blpop returns [key, value], and null on timeout', async () => {
    await p.rpush(k('bl2'), 'v');
    expect(await p.blpop(k('bl1'), k('bl2'), 1)).toEqual([k('bl2'), 'v']);
    const started = Date.now();
    expect(await p.blpop(k('bl-empty'), 0.2)).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    // The same through call(): it is recognised as blocking too.
    await p.rpush(k('bl3'), 'w');
    expect(await p.call('BLPOP', k('bl3'), 1)).toEqual([k('bl3'), 'w']);
  });

  it('blpop runs on an exclusive connection: a concurrent GET is not blocked behind it', async () => {
    await p.set(k('side'), 'free');
    const events: string[] = [];
    const blocked = p.blpop(k('bl-wait'), 20).then((v) => {
      events.push('blpop');
      return v;
    });
    await waitFor(() => p.stats().exclusive.borrowed === 1, 'the BLPOP to borrow an exclusive connection', 10_000);
    // The GET must complete while BLPOP still waits on the server.
    expect(await p.get(k('side'))).toBe('free');
    events.push('get');
    expect(events).toEqual(['get']);
    await waitFor(async () => (await shared.server.cli('CLIENT', 'LIST')).includes('cmd=blpop'), 'the BLPOP to be blocked on the server', 10_000);
    expect(await p.rpush(k('bl-wait'), 'go')).toBe(1);
    expect(await blocked).toEqual([k('bl-wait'), 'go']);
    expect(events).toEqual(['get', 'blpop']);
    await waitFor(() => p.stats().exclusive.borrowed === 0, 'the BLPOP connection to be returned', 10_000);
  });

  it('sadd / srem / smembers', async () => {
    expect(await p.sadd(k('set'), 'a', 'b', 'c', 'a')).toBe(3);
    expect(await p.srem(k('set'), 'b', 'nope')).toBe(1);
    const members = await p.smembers(k('set'));
    expect(Array.isArray(members)).toBe(true);
    expect([...members].sort()).toEqual(['a', 'c']);
    expect(await p.smembers(k('set-missing'))).toEqual([]);
  });

  it('zadd (both forms) / zrange (WITHSCORES flat) / zscore (number)', async () => {
    expect(await p.zadd(k('z'), 1, 'a', 2.5, 'b')).toBe(2);
    expect(await p.zadd(k('z'), { c: 3, d: -4 })).toBe(2);
    expect(await p.zrange(k('z'), 0, -1)).toEqual(['d', 'a', 'b', 'c']);
    expect(await p.zrange(k('z'), 0, -1, { WITHSCORES: true })).toEqual(['d', '-4', 'a', '1', 'b', '2.5', 'c', '3']);
    expect(await p.zrange(k('z'), 0, 1, { REV: true, WITHSCORES: true })).toEqual(['c', '3', 'b', '2.5']);
    expect(await p.zrange(k('z'), 1, 3, { BYSCORE: true })).toEqual(['a', 'b', 'c']);
    expect(await p.zrange(k('z-missing'), 0, -1, { WITHSCORES: true })).toEqual([]);
    expect(await p.zscore(k('z'), 'b')).toBe(2.5);
    expect(await p.zscore(k('z'), 'd')).toBe(-4);
    expect(await p.zscore(k('z'), 'nope')).toBeNull();
  });

  it('infinite and fractional scores read the same under both protocols', async () => {
    expect(await p.zadd(k('zinf'), '-inf', 'lo', '+inf', 'hi', 0.1, 'tenth')).toBe(3);
    const flat = await p.zrange(k('zinf'), 0, -1, { WITHSCORES: true });
    expect(flat.filter((_, i) => i % 2 === 0)).toEqual(['lo', 'tenth', 'hi']);
    expect(Number(flat[3])).toBe(0.1);
    // Redis spells infinite scores 'inf' / '-inf' (RESP2 text); RESP3 doubles must map back to that.
    expect([flat[1], flat[5]]).toEqual(['-inf', 'inf']);
    expect(await p.zscore(k('zinf'), 'tenth')).toBe(0.1);
    expect(await p.zscore(k('zinf'), 'hi')).toBe(Infinity);
    expect(await p.zscore(k('zinf'), 'lo')).toBe(-Infinity);
  });

  it('publish reaches a subscriber on a leased connection', async () => {
    expect(await p.publish(k('ch-nobody'), 'x')).toBe(0);
    const got: Array<[string, string]> = [];
    await p.use(async (lease) => {
      await lease.subscribe(k('ch'), (message, channel) => got.push([message, channel]));
      expect(await p.publish(k('ch'), 'hello')).toBe(1);
      await waitFor(() => got.length === 1, 'the message to arrive', 10_000);
    });
    expect(got).toEqual([['hello', k('ch')]]);
    // A subscribed connection is destroyed, never returned to the idle pool.
    await waitFor(() => p.stats().exclusive.borrowed === 0 && p.stats().exclusive.available === 0, 'the subscribed connection to be destroyed', 10_000);
    // The server drops the subscriber when it reads the close, which may come after our next command.
    await waitFor(async () => (await p.publish(k('ch'), 'after')) === 0, 'the server to count no subscriber', 10_000);
  });

  it('eval / evalsha', async () => {
    const script = 'return {KEYS[1], ARGV[1], tonumber(ARGV[2]) * 2}';
    expect(await p.eval(script, 1, k('ek'), 'arg', 21)).toEqual([k('ek'), 'arg', 42]);
    const sha = await p.call<string>('SCRIPT', 'LOAD', script);
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await p.evalsha(sha, 1, k('ek'), 'again', 1)).toEqual([k('ek'), 'again', 2]);
    const err = await p.evalsha('0'.repeat(40), 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).code).toBe('NOSCRIPT');
    expect(await p.eval('return redis.call("SET", KEYS[1], ARGV[1])', 1, k('ek2'), 'lua')).toBe('OK');
    expect(await p.get(k('ek2'))).toBe('lua');
  });

  it('scan and scanIterator return every key of a pattern exactly once', async () => {
    // A database of its own, so nothing else grows or shrinks the keyspace during the scan.
    const db = 10 + protocol;
    const q = await StandalonePool.create(shared.url, { protocol, db });
    try {
      await q.call('FLUSHDB');
      const expected = new Set<string>();
      const pairs: string[] = [];
      for (let i = 0; i < 600; i++) {
        const key = `scan:${i}`;
        expected.add(key);
        pairs.push(key, String(i));
      }
      await q.mset(...pairs);
      await q.mset('other:1', 'x', 'other:2', 'y');
      await q.hset('scan:hash', 'f', 'v'); // matches the pattern but not the type filter

      const seen: string[] = [];
      for await (const key of q.scanIterator({ match: 'scan:*', count: 25, type: 'string' })) seen.push(key);
      expect(seen.length).toBe(expected.size);
      expect(new Set(seen)).toEqual(expected);

      // One step by hand: [cursor, keys].
      const [cursor, keys] = await q.scan('0', { match: 'scan:*', count: 10 });
      expect(typeof cursor).toBe('string');
      expect(Array.isArray(keys)).toBe(true);
      for (const key of keys) expect(key.startsWith('scan:')).toBe(true);

      // Walk with scan() by hand to the end: same set.
      const manual = new Set<string>();
      let c = '0';
      do {
        const [next, batch] = await q.scan(c, { match: 'scan:*', count: 100 });
        for (const key of batch) manual.add(key);
        c = next;
      } while (c !== '0');
      expect(manual.size).toBe(expected.size + 1); // plus scan:hash
    } finally {
      await q.close();
    }
  });

  it('binary values round-trip byte for byte', async () => {
    const value = randomBytes(64 * 1024);
    value[0] = 0xff; // never valid UTF-8
    value[1] = 0xfe;
    const key = Buffer.concat([Buffer.from(k('bin:')), randomBytes(16)]);
    expect(await p.set(key, value)).toBe('OK');
    const back = await p.with({ returnBuffers: true }).get(key);
    expect(Buffer.isBuffer(back)).toBe(true);
    expect(Buffer.compare(back as unknown as Buffer, value)).toBe(0);
    const viaCall = await p.with({ returnBuffers: true }).call<Buffer>('GET', key);
    expect(viaCall.equals(value)).toBe(true);
    // Many binary values in flight at once on the lane stay matched to their callers.
    const values = Array.from({ length: 50 }, (_, i) => randomBytes(100 + i * 37));
    await Promise.all(values.map((v, i) => p.set(k(`bin:${i}`), v)));
    const reads = await Promise.all(values.map((_, i) => p.with({ returnBuffers: true }).get(k(`bin:${i}`))));
    reads.forEach((r, i) => expect((r as unknown as Buffer).equals(values[i]!)).toBe(true));
    // Without returnBuffers strings come back as strings.
    expect(typeof (await p.get(k('bin:0')))).toBe('string');
  });

  it('a pipeline gives the failing command its RedisError and the others their values', async () => {
    await p.set(k('pipe:str'), 'text');
    const results = await p
      .pipeline()
      .set(k('pipe:a'), '1')
      .call('LPUSH', k('pipe:str'), 'x')
      .get(k('pipe:a'))
      .hset(k('pipe:h'), { f: 'v' })
      .hgetall(k('pipe:h'))
      .exec();
    expect(results).not.toBeNull();
    expect(results!.length).toBe(5);
    expect(results![0]).toBe('OK');
    expect(results![1]).toBeInstanceOf(RedisError);
    expect((results![1] as RedisError).code).toBe('WRONGTYPE');
    expect(results![2]).toBe('1');
    expect(results![3]).toBe(1);
    expect(results![4]).toEqual({ f: 'v' }); // helper transforms apply in batches too
    expect(await p.pipeline().exec()).toEqual([]);
  });

  it('MULTI/EXEC returns the results; a runtime error is that entry only', async () => {
    await p.set(k('tx:str'), 'text');
    const results = await p
      .multi()
      .set(k('tx:a'), '1')
      .incr(k('tx:a'))
      .incr(k('tx:str')) // runtime error inside EXEC
      .get(k('tx:a'))
      .hset(k('tx:h'), 'f', 'v')
      .hgetall(k('tx:h'))
      .exec();
    expect(results).not.toBeNull();
    expect(results![0]).toBe('OK');
    expect(results![1]).toBe(2);
    expect(results![2]).toBeInstanceOf(RedisError);
    expect(results![3]).toBe('2');
    expect(results![4]).toBe(1);
    expect(results![5]).toEqual({ f: 'v' });
  });

  it('WATCH: a key changed by another connection aborts the transaction (null)', async () => {
    await p.set(k('watch'), 'start');
    const aborted = await p.use(async (lease) => {
      expect(await lease.call('WATCH', k('watch'))).toBe('OK');
      expect(await p.set(k('watch'), 'changed-elsewhere')).toBe('OK'); // the lane, another connection
      return lease.multi().set(k('watch'), 'x').exec();
    });
    expect(aborted).toBeNull();
    expect(await p.get(k('watch'))).toBe('changed-elsewhere');

    const committed = await p.use(async (lease) => {
      await lease.call('WATCH', k('watch'));
      return lease.multi().set(k('watch'), 'x').get(k('watch')).exec();
    });
    expect(committed).toEqual(['OK', 'x']);
  });

  it('EXECABORT: a queued syntax error rejects the transaction with RedisError, nothing runs', async () => {
    const err = await p.multi().set(k('abort'), '1').call('SET', k('abort')).exec().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).code).toBe('EXECABORT');
    expect((err as Error).cause).toBeInstanceOf(RedisError);
    expect(await p.get(k('abort'))).toBeNull();
    // The pool is fine afterwards.
    expect(await p.multi().set(k('abort'), '2').exec()).toEqual(['OK']);
  });
});

describe('leases', () => {
  it('use() returns the connection even when fn throws', async () => {
    const p = await pool(shared);
    const boom = new Error('boom');
    await expect(p.use(async (lease) => {
      expect(await lease.call('PING')).toBe('PONG');
      throw boom;
    })).rejects.toBe(boom);
    await waitFor(() => p.stats().exclusive.borrowed === 0, 'the lease to be returned', 5000);
    expect(p.stats().exclusive).toMatchObject({ borrowed: 0, available: 1, size: 1 });
    // And it is reusable.
    expect(await p.use((lease) => lease.call('PING'))).toBe('PONG');
    await waitFor(() => p.stats().exclusive.available === 1, 'the lease to be returned', 5000);
    expect(p.stats().exclusive).toMatchObject({ borrowed: 0, available: 1, size: 1 });
  });

  it('an aborted BLPOP does not leave its connection blocked for the next borrower', async () => {
    const p = await pool(shared, { pool: { max: 1 } });
    const ac = new AbortController();
    const blocked = settle(p.with({ signal: ac.signal }).blpop('lease:never-pushed', 0));
    await waitFor(async () => (await shared.server.cli('CLIENT', 'LIST')).includes('cmd=blpop'), 'the BLPOP to block on the server', 10_000);
    ac.abort();
    expect((await blocked).ok).toBe(false);
    // max 1: the next lease gets that same connection unless it was discarded. The server still
    // blocks BLPOP 0 on it, so a PING queued behind it would never be answered.
    const started = Date.now();
    const pong = await settle(p.with({ timeout: 2000 }).use((lease) => lease.call('PING')));
    expect(pong).toEqual({ ok: true, value: 'PONG' });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('a lease is unusable once use() has returned', async () => {
    const p = await pool(shared);
    let kept: { call(c: string): Promise<unknown> } | undefined;
    await p.use(async (lease) => {
      kept = lease;
    });
    await expect(kept!.call('PING')).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('acquire times out with TimeoutError when the exclusive pool is exhausted', async () => {
    const acquireTimeoutMillis = 300;
    const p = await pool(shared, { pool: { max: 1, acquireTimeoutMillis } });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const holder = p.use(async () => {
      entered();
      await held;
      return 'held';
    });
    await inside;
    const started = Date.now();
    const err = await p.use(async () => 'never').catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/acquireTimeoutMillis/);
    expect(elapsed).toBeGreaterThanOrEqual(acquireTimeoutMillis - 50);
    expect(elapsed).toBeLessThan(acquireTimeoutMillis + 2000);
    // MULTI needs an exclusive connection too.
    await expect(p.multi().set('x', '1').exec()).rejects.toBeInstanceOf(TimeoutError);
    release();
    expect(await holder).toBe('held');
    expect(await p.use((lease) => lease.call('PING'))).toBe('PONG');
  });

  it('generation swap: calls go to the new server; an old lease takes no new command and its connection is destroyed on release', async () => {
    const other = await ownServer();
    await shared.server.cli('SET', 'swap:where', 'first');
    await other.server.cli('SET', 'swap:where', 'second');
    const name = `swap-${process.pid}`;
    const p = await pool(shared, { clientName: name });
    expect(await p.get('swap:where')).toBe('first');
    expect(p.stats().generation).toBe(1);

    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let leased!: (addr: unknown) => void;
    const inside = new Promise<unknown>((r) => (leased = r));
    const holder = p.use(async (lease) => {
      expect(await lease.call('GET', 'swap:where')).toBe('first');
      leased(lease.address);
      await held;
      // After the swap the old node must get no new command (for a Sentinel master, writes
      // there would be lost): the lease says so before sending, and its signal has fired.
      expect(lease.signal.aborted).toBe(true);
      return lease.call('GET', 'swap:where').then(
        () => 'sent',
        (e: unknown) => (e instanceof ConnectionError && /was not sent/.test(e.message) ? 'refused' : e),
      );
    });
    expect(await inside).toEqual(shared.address);
    expect(p.stats().exclusive.borrowed).toBe(1);

    // NodePool.swap is internal (Sentinel failover drives it); reached through the private field here.
    const swapped = (p as unknown as { node: { swap(a: { host: string; port: number }): boolean } }).node.swap(other.address);
    expect(swapped).toBe(true);
    expect(p.stats().generation).toBe(2);
    expect(p.address).toEqual(other.address);
    expect(await p.get('swap:where')).toBe('second');
    expect(await p.set('swap:written', 'after-swap')).toBe('OK');
    expect(await other.server.cli('GET', 'swap:written')).toBe('after-swap');
    expect(await shared.server.cli('EXISTS', 'swap:written')).toBe('0');

    release();
    expect(await holder).toBe('refused');
    // The old-generation connection is destroyed, not returned to idle.
    await waitFor(() => p.stats().exclusive.borrowed === 0, 'the old lease to be released', 5000);
    expect(p.stats().exclusive).toMatchObject({ borrowed: 0, available: 0, size: 0 });
    await waitFor(async () => (await countClients(shared, name)) === 0, 'every connection to the old server to close', 10_000);
    // New leases go to the new server.
    expect(await p.use(async (lease) => [lease.address, await lease.call('GET', 'swap:where')])).toEqual([other.address, 'second']);
    expect(await countClients(other, name)).toBeGreaterThanOrEqual(2); // a lane and an exclusive connection
    await shared.server.cli('DEL', 'swap:where');
  });
});

describe('close()', () => {
  it('lets in-flight commands finish, then rejects every call with PoolClosedError and leaves no socket', async () => {
    const name = `close-${process.pid}`;
    const p = await StandalonePool.create(shared.url, { clientName: name, pool: { lanes: 2 } });
    await p.set('close:k', 'v');
    await p.use((lease) => lease.call('PING')); // an idle exclusive connection too
    expect(await countClients(shared, name)).toBeGreaterThanOrEqual(2);

    const closes: Array<Error | undefined> = [];
    p.on('close', (i) => closes.push(i.error));
    const slow = p.call('DEBUG', 'SLEEP', '0.3');
    const reads = Array.from({ length: 20 }, () => p.get('close:k'));
    await flushed();
    const closing = p.close();
    expect(p.stats().closed).toBe(true);
    expect(await slow).toBe('OK');
    expect(await Promise.all(reads)).toEqual(Array(20).fill('v'));
    await closing;
    // The lanes and the idle exclusive connection were closed on purpose: no error in the events.
    expect(closes.length).toBeGreaterThanOrEqual(2);
    expect(closes.map((e) => e && String(e))).toEqual(closes.map(() => undefined));

    await expect(p.get('close:k')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.call('PING')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.with({ timeout: 100 }).get('close:k')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.use(async () => 1)).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.pipeline().get('close:k').exec()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.multi().get('close:k').exec()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.blpop('close:list', 1)).rejects.toBeInstanceOf(PoolClosedError);
    const it = p.scanIterator();
    await expect(it.next()).rejects.toBeInstanceOf(PoolClosedError);
    // A promise that rejects, not a throw: `tokens.on('renewed', () => pool.reauthenticate().catch(report))`.
    const reauth = p.reauthenticate();
    await expect(reauth).rejects.toBeInstanceOf(PoolClosedError);
    await expect(p.subscribe('close:ch')).rejects.toBeInstanceOf(PoolClosedError);
    await p.close(); // idempotent

    await waitFor(async () => (await countClients(shared, name)) === 0, 'every connection of the pool to close', 10_000);
  });

  it('waits for a lease still in use, and bounds a never-ending BLPOP by closeTimeout', async () => {
    const name = `close-lease-${process.pid}`;
    const closeTimeout = 500;
    const p = await StandalonePool.create(shared.url, { clientName: name, closeTimeout });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const leased = p.use(async (lease) => {
      entered();
      await held;
      return lease.call('PING'); // the lease still works while close() waits for it
    });
    await inside;
    const blocked = settle(p.blpop('close:never-pushed', 0));
    await waitFor(async () => (await shared.server.cli('CLIENT', 'LIST')).includes('cmd=blpop'), 'the BLPOP to block on the server', 10_000);

    const started = Date.now();
    const closing = p.close();
    await expect(p.get('x')).rejects.toBeInstanceOf(PoolClosedError);
    release();
    expect(await leased).toBe('PONG');
    await closing;
    expect(Date.now() - started).toBeLessThan(closeTimeout + 2000);
    const b = await blocked;
    expect(b.ok).toBe(false);
    const err = (b as { error: Error }).error;
    // The BLPOP was sent (it may have popped something): uncertain, ended by the close.
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect(err.cause).toBeInstanceOf(PoolClosedError);
    await waitFor(async () => (await countClients(shared, name)) === 0, 'every connection of the pool to close', 10_000);
  });

  it('await using closes the pool (Symbol.asyncDispose)', async () => {
    const name = `dispose-${process.pid}`;
    let outer: StandalonePool | undefined;
    {
      await using p = await StandalonePool.create(shared.url, { clientName: name });
      outer = p;
      expect(await p.set('dispose:k', '1')).toBe('OK');
      expect(await countClients(shared, name)).toBe(1);
    }
    expect(outer.stats().closed).toBe(true);
    await expect(outer.get('dispose:k')).rejects.toBeInstanceOf(PoolClosedError);
    await waitFor(async () => (await countClients(shared, name)) === 0, 'the disposed pool to close its sockets', 10_000);
    expect(typeof outer[Symbol.asyncDispose]).toBe('function');
  });
});

describe('option validation', () => {
  // A port nothing listens on: a TypeError proves validation ran before any connection attempt.
  let deadAddress: string;
  beforeAll(async () => {
    const t = await startStandalone();
    deadAddress = `${t.address.host}:${t.address.port}`;
    await t.stop();
  });

  const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
    ['pool.max: 0', () => StandalonePool.create(deadAddress, { pool: { max: 0 } }), /pool\.max/],
    ['commandTimeout: -1', () => StandalonePool.create(deadAddress, { commandTimeout: -1 }), /commandTimeout/],
    ['protocol: 4', () => StandalonePool.create(deadAddress, { protocol: 4 as 2 }), /protocol/],
    ['unknown option comandTimeout', () => StandalonePool.create(deadAddress, { comandTimeout: 100 } as StandaloneOptions), /comandTimeout/],
    ["address 'localhost'", () => StandalonePool.create('localhost'), /address/],
    ["address 'localhost:70000'", () => StandalonePool.create('localhost:70000'), /port/],
    ['address { port: 70000 }', () => StandalonePool.create({ host: 'localhost', port: 70000 }), /port/],
    ['address redis://localhost:70000', () => StandalonePool.create('redis://localhost:70000'), /address/],
    ['pool.min > pool.max', () => StandalonePool.create(deadAddress, { pool: { min: 5, max: 2 } }), /pool\.min/],
    ['unknown pool option', () => StandalonePool.create(deadAddress, { pool: { maxx: 2 } as never }), /pool\.maxx/],
    ['closeTimeout: "1"', () => StandalonePool.create(deadAddress, { closeTimeout: '1' as never }), /closeTimeout/],
  ];

  it.each(cases)('%s fails at once with a TypeError naming it', async (_label, create, names) => {
    const started = Date.now();
    const err = await create().then(
      () => new Error('created'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toMatch(names);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('bad per-call options fail with a TypeError naming them', async () => {
    const p = await pool(shared);
    expect(() => p.with({ timeout: -1 })).toThrow(/timeout/);
    expect(() => p.with({ timout: 5 } as never)).toThrow(/timout/);
    expect(() => p.with({ signal: 'x' as never })).toThrow(/signal/);
  });
});

describe('authentication', () => {
  const password = `S3cr3t-${randomBytes(6).toString('hex')}`;
  const wrong = `Wr0ng-${randomBytes(6).toString('hex')}`;

  it.each(PROTOCOLS)('a wrong password rejects with AuthenticationError and never shows the password (protocol %i)', async (protocol) => {
    const t = await ownServer({ password });
    for (const attempt of [
      () => StandalonePool.create(t.address, { protocol, password: wrong }),
      () => StandalonePool.create(`redis://:${wrong}@${t.address.host}:${t.address.port}`, { protocol }),
      () => StandalonePool.create(t.address, { protocol, username: 'default', password: wrong }),
    ]) {
      const err = await attempt().then(
        (p) => {
          pools.push(p);
          return new Error('connected with a wrong password');
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AuthenticationError);
      const e = err as Error;
      expect(e.message).not.toContain(wrong);
      expect(e.message).not.toContain(password);
      expect(String(e.cause)).not.toContain(wrong);
      expect(String(e.stack)).not.toContain(wrong);
      expect(JSON.stringify(e, Object.getOwnPropertyNames(e))).not.toContain(wrong);
    }
    // No password at all: NOAUTH on the first command is an authentication problem, not a hang.
    const ok = await pool(t, { protocol, password });
    expect(await ok.call('PING')).toBe('PONG');
    expect(await pool(t.url, { protocol }).then((q) => q.call('PING'))).toBe('PONG');
  });
});

describe('server failures', () => {
  it('server killed while idle, then restarted: the next calls succeed', async () => {
    const t = await ownServer();
    const p = await pool(t, { pool: { reconnect: { initialDelay: 20, maxDelay: 200 } } });
    expect(await p.set('k', 'before')).toBe('OK');
    await p.use((lease) => lease.call('PING')); // an idle exclusive connection too
    await t.server.kill();
    await t.server.restart();
    // The data did not survive (no persistence) but the pool did.
    expect(await p.get('k')).toBeNull();
    expect(await p.set('k', 'after')).toBe('OK');
    expect(await p.get('k')).toBe('after');
    expect(await p.use((lease) => lease.call('GET', 'k'))).toBe('after');
    expect(await p.multi().incr('n').exec()).toEqual([1]);
    expect(p.stats().lanes.connected).toBe(1);
  });

  it('server killed with commands in flight: written writes reject as uncertain; reads and idempotent writes are retried', async () => {
    const t = await ownServer();
    const p = await pool(t, { commandTimeout: 30_000, pool: { reconnect: { initialDelay: 20, maxDelay: 200 } } });
    await p.set('counter', '10');
    t.server.pause();
    const write = settle(p.incr('counter'));
    const read = settle(p.get('counter'));
    const idempotent = settle(p.with({ idempotent: true }).set('marker', 'written-after-restart'));
    const readBuffers = settle(p.with({ returnBuffers: true }).call<Buffer>('GET', 'counter'));
    await flushed();
    expect(p.stats().lanes.pending).toBe(4);
    await t.server.kill();

    const w = await write;
    expect(w.ok).toBe(false);
    const werr = (w as { error: unknown }).error;
    // Its connection closed under it, long before its 30 s deadline: uncertain, not re-sent.
    expect(werr).toBeInstanceOf(UncertainWriteError);
    expect((werr as Error).message).toMatch(/^INCR was sent to .* it may have executed\.$/);

    await t.server.restart();
    const r = await read;
    expect(r).toEqual({ ok: true, value: null }); // retried on the restarted (empty) server
    expect(await idempotent).toEqual({ ok: true, value: 'OK' });
    expect(await readBuffers).toEqual({ ok: true, value: null });
    expect(await p.get('marker')).toBe('written-after-restart');
  });

  it('commands and pipelines issued while the server is down complete once it is back, within their deadline', async () => {
    const t = await ownServer();
    const p = await pool(t, { commandTimeout: 30_000, pool: { reconnect: { initialDelay: 20, maxDelay: 200 } } });
    expect(await p.set('k', 'v')).toBe('OK');
    await t.server.kill();
    await waitFor(() => p.stats().lanes.connected === 0, 'the pool to notice the lane is gone', 10_000);
    // Nothing of these can have been written while the server is down, so all may be retried.
    const read = settle(p.get('k'));
    const write = settle(p.set('k2', 'w'));
    const batch = settle(p.pipeline().set('k3', 'x').get('k3').exec());
    await t.server.restart();
    expect(await read).toEqual({ ok: true, value: null });
    expect(await write).toEqual({ ok: true, value: 'OK' });
    expect(await batch).toEqual({ ok: true, value: ['OK', 'x'] });
  });

  it('a read that cannot be retried within its deadline rejects with TimeoutError', async () => {
    const t = await ownServer();
    const p = await pool(t, { pool: { reconnect: { initialDelay: 20, maxDelay: 100 } } });
    expect(await p.set('k', 'v')).toBe('OK');
    await t.server.kill();
    const started = Date.now();
    const err = await p.with({ timeout: 500 }).get('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(Date.now() - started).toBeLessThan(3000);
    // A write that was never sent is not "uncertain".
    const werr = await p.with({ timeout: 300 }).set('k', 'v2').catch((e: unknown) => e);
    expect(werr).toBeInstanceOf(TimeoutError);
    expect((werr as TimeoutError).sent).toBe(false);
    expect((werr as Error).message).toMatch(/it was not sent\.$/);
    await t.server.restart();
    expect(await p.set('k', 'v3')).toBe('OK');
  });

  it('per-call timeout on a paused server rejects with TimeoutError; the pool recovers after resume', async () => {
    const t = await ownServer();
    const p = await pool(t);
    await p.set('k', 'v');
    t.server.pause();
    try {
      const started = Date.now();
      const err = await p.with({ timeout: 50 }).get('k').catch((e: unknown) => e);
      const elapsed = Date.now() - started;
      expect(err).toBeInstanceOf(TimeoutError);
      expect(elapsed).toBeGreaterThanOrEqual(40);
      expect(elapsed).toBeLessThan(2000);
      const werr = await p.with({ timeout: 50 }).set('k', 'w').catch((e: unknown) => e);
      expect(werr).toBeInstanceOf(TimeoutError);
      expect((werr as TimeoutError).sent).toBe(true);
    } finally {
      t.server.resume();
    }
    expect(await p.get('k')).toBe('w'); // the timed-out SET did run once the server woke up
    expect(await p.set('k', 'x')).toBe('OK');
    expect(await p.get('k')).toBe('x');
  });

  it('an aborted signal rejects with its reason', async () => {
    const t = await ownServer();
    const p = await pool(t);
    await p.set('k', 'v');

    const already = new AbortController();
    const reason0 = new Error('aborted before the call');
    already.abort(reason0);
    await expect(p.with({ signal: already.signal }).get('k')).rejects.toBe(reason0);

    t.server.pause();
    try {
      const ac = new AbortController();
      const reason = new Error('caller gave up');
      const pending = settle(p.with({ signal: ac.signal }).get('k'));
      await flushed();
      ac.abort(reason);
      expect(await pending).toEqual({ ok: false, error: reason });

      const ac2 = new AbortController();
      const pendingBlpop = settle(p.with({ signal: ac2.signal }).blpop('list', 0));
      await flushed();
      ac2.abort();
      const b = await pendingBlpop;
      expect(b.ok).toBe(false);
      expect((b as { error: Error }).error.name).toBe('AbortError');
    } finally {
      t.server.resume();
    }
    expect(await p.get('k')).toBe('v');
  });
});

describe('call() refuses commands that change its shared connection', () => {
  it('WATCH, MULTI, SELECT … reject with a TypeError pointing at use(); on a lease they run', async () => {
    const topo = await startStandalone();
    const pool = await StandalonePool.create(topo.address);
    try {
      for (const args of [['WATCH', 'k'], ['MULTI'], ['EXEC'], ['SELECT', '1'], ['AUTH', 'x']]) {
        const err = await pool.call(args[0]!, ...args.slice(1)).catch((e: unknown) => e);
        expect(err, args[0]).toBeInstanceOf(TypeError);
        expect((err as Error).message).toMatch(/leased connection|pool\.use/);
      }
      // Nothing reached the server: the lane still answers in database 0.
      await pool.set('state:k', 'v');
      expect(await pool.get('state:k')).toBe('v');
      expect(await pool.use(async (l) => {
        expect(await l.call('WATCH', 'state:k')).toBe('OK');
        return l.multi().set('state:k', 'w').exec();
      })).toEqual(['OK']);
    } finally {
      await pool.close();
      await topo.stop();
    }
  });

  it('CLIENT REPLY, TRACKING, SETNAME … are refused too, in call(), pipelines and transactions; replies never go to the wrong caller', async () => {
    const topo = await startStandalone();
    const pool = await StandalonePool.create(topo.address, { commandTimeout: 2000 });
    try {
      await pool.set('cr:a', 'AAA');
      await pool.set('cr:b', 'BBB');
      for (const args of [['CLIENT', 'REPLY', 'SKIP'], ['CLIENT', 'REPLY', 'OFF'], ['client', 'tracking', 'on'], ['CLIENT', 'SETNAME', 'x'], ['CLIENT', 'NO-EVICT', 'on']]) {
        const err = await pool.call(args[0]!, ...args.slice(1)).catch((e: unknown) => e);
        expect(err, args.join(' ')).toBeInstanceOf(TypeError);
        expect((err as Error).message).toContain(`${args[0]} ${args[1]} changes the state`);
        expect(() => pool.pipeline().call(args[0]!, ...args.slice(1))).toThrow(TypeError);
        expect(() => pool.multi().call(args[0]!, ...args.slice(1))).toThrow(TypeError);
        expect(() => pool.pipeline().call('SELECT', '1')).toThrow(/pipeline shares/);
      }
      // What a user saw before: a reply skipped on the lane, and the next callers got each other's replies.
      const [a, b, ping, a2] = await Promise.all([pool.get('cr:a'), pool.get('cr:b'), pool.call('PING'), pool.get('cr:a')]);
      expect([a, b, ping, a2]).toEqual(['AAA', 'BBB', 'PONG', 'AAA']);
      // Plain CLIENT subcommands still run on the lane; on a lease the state-changing ones run.
      expect(Number(await pool.call('CLIENT', 'ID'))).toBeGreaterThan(0);
      expect(await pool.use(async (l) => {
        await l.call('CLIENT', 'SETNAME', 'leased');
        return l.call('CLIENT', 'GETNAME');
      })).toBe('leased');
    } finally {
      await pool.close();
      await topo.stop();
    }
  });
});
