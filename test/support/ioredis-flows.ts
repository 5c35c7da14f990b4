/**
 * The example flow of every library `redis-ha-pool/ioredis` serves, run through the facade on
 * whatever pool a test file gives (StandalonePool, SentinelPool, ClusterPool): the libraries are
 * the real ones (dev dependencies), and so are the servers.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { expect, it } from 'vitest';
import fastify from 'fastify';
import fastifyRedis from '@fastify/redis';
import type { Redis } from 'ioredis';
import { RedisPubSub } from 'graphql-redis-subscriptions';
import { RateLimiterRedis, RateLimiterRedisNonAtomic, RateLimiterRes } from 'rate-limiter-flexible';
import type { ClusterPool, SentinelPool, StandalonePool } from '../../src/index.js';
import { asIoredis, type IoredisClient } from '../../src/integrations/ioredis.js';
import { waitFor } from './wait.js';

/** Any pool mode. */
export type AnyPool = StandalonePool | SentinelPool | ClusterPool;

/** redlock 4 ships no types: the part of its API the flows use. */
export interface Redlock4Lock {
  value: string;
  unlock(): Promise<void>;
  extend(ttl: number): Promise<Redlock4Lock>;
}
export interface Redlock4 {
  lock(resource: string, ttl: number): Promise<Redlock4Lock>;
  lock(resource: string, ttl: number, callback: (err: Error | null, lock?: Redlock4Lock) => void): void;
  quit(): Promise<void>;
  on(event: 'clientError', listener: (e: Error) => void): unknown;
}
const requireCjs = createRequire(import.meta.url);
export const Redlock4 = requireCjs('redlock') as new (clients: unknown[], options?: { retryCount?: number; retryDelay?: number }) => Redlock4;

/** redlock 5's types do not resolve under NodeNext (its exports map has no types): the part the flows use. */
export interface Redlock5Lock {
  value: string;
  extend(duration: number): Promise<Redlock5Lock>;
  release(): Promise<unknown>;
}
export interface Redlock5 {
  acquire(resources: string[], duration: number): Promise<Redlock5Lock>;
  using<T>(resources: string[], duration: number, routine: () => Promise<T>): Promise<T>;
  quit(): Promise<void>;
}
const redlock5 = requireCjs('redlock5') as { default: new (clients: unknown[], settings?: { retryCount?: number }) => Redlock5; ExecutionError: new (...a: never[]) => Error };
export const Redlock5 = redlock5.default;
export const ExecutionError = redlock5.ExecutionError;

/** A name no other test uses. */
export const unique = (what: string): string => `${what}-${randomBytes(4).toString('hex')}`;

/** What a test file supplies: its pool, and how to count a channel's subscribers across its servers. */
export interface FlowContext {
  pool(): AnyPool;
  /** Subscribers of a plain channel, summed over every server (PUBSUB NUMSUB). */
  numsub(channel: string): Promise<number>;
}

/** graphql-redis-subscriptions: plain, pattern and async-iterator delivery, unsubscribe, close. */
export function graphqlFlows(ctx: FlowContext): void {
  const make = () => {
    const publisher = asIoredis(ctx.pool());
    const subscriber = asIoredis(ctx.pool());
    return { publisher, subscriber, pubsub: new RedisPubSub({ publisher: publisher as never, subscriber: subscriber as never }) };
  };

  it('graphql-redis-subscriptions: a plain subscription receives published payloads; unsubscribe removes it from the server', async () => {
    const { pubsub, publisher, subscriber } = make();
    const trigger = unique('gql-plain');
    const got: unknown[] = [];
    const id = await pubsub.subscribe(trigger, (payload: unknown) => got.push(payload));
    expect(await ctx.numsub(trigger)).toBe(1);
    await pubsub.publish(trigger, { post: { id: 1, title: 'hello' } });
    await pubsub.publish(trigger, { post: { id: 2, title: 'world' } });
    await waitFor(() => got.length === 2, 'both payloads');
    expect(got).toEqual([{ post: { id: 1, title: 'hello' } }, { post: { id: 2, title: 'world' } }]);
    pubsub.unsubscribe(id);
    await waitFor(async () => (await ctx.numsub(trigger)) === 0, 'the channel to have no subscriber');
    await pubsub.close();
    expect([publisher.status, subscriber.status]).toEqual(['end', 'end']);
    expect(await ctx.pool().call('PING')).toBe('PONG');
  });

  it('graphql-redis-subscriptions: a pattern subscription receives every matching trigger', async () => {
    const { pubsub } = make();
    const base = unique('gql-pattern');
    const got: unknown[] = [];
    await pubsub.subscribe(`${base}.*`, (payload: unknown) => got.push(payload), { pattern: true });
    await pubsub.publish(`${base}.created`, { n: 1 });
    await pubsub.publish(`${base}.deleted`, { n: 2 });
    await pubsub.publish(`${unique('other')}.created`, { n: 3 });
    await waitFor(() => got.length >= 2, 'the two matching payloads');
    expect(got).toEqual([{ n: 1 }, { n: 2 }]);
    await pubsub.close();
  });

  it('graphql-redis-subscriptions: asyncIterableIterator yields payloads in order and unsubscribes on return()', async () => {
    const { pubsub } = make();
    const trigger = unique('gql-iter');
    const iterator = pubsub.asyncIterableIterator<{ n: number }>(trigger);
    const first = iterator.next();
    await waitFor(async () => (await ctx.numsub(trigger)) === 1, 'the iterator to subscribe');
    for (let n = 1; n <= 3; n++) await pubsub.publish(trigger, { n });
    expect(await first).toEqual({ value: { n: 1 }, done: false });
    expect(await iterator.next()).toEqual({ value: { n: 2 }, done: false });
    expect(await iterator.next()).toEqual({ value: { n: 3 }, done: false });
    await iterator.return!();
    await waitFor(async () => (await ctx.numsub(trigger)) === 0, 'the iterator to unsubscribe');
    await pubsub.close();
  });
}

/** @fastify/redis registered with the facade: commands through fastify.redis; fastify.close() ends the handle, not the pool. */
export function fastifyFlows(ctx: FlowContext): void {
  it('@fastify/redis: routes use fastify.redis; fastify.close() quits the handle and leaves the pool open', async () => {
    const client = asIoredis(ctx.pool());
    const app = fastify();
    await app.register(fastifyRedis, { client: client as unknown as Redis, closeClient: true });
    const key = unique('fastify');
    app.post<{ Body: { value: string } }>('/value', async (req) => app.redis.set(key, req.body.value, 'EX', 60));
    app.get('/value', async () => ({ value: await app.redis.get(key), ttl: await app.redis.ttl(key) }));
    expect((await app.inject({ method: 'POST', url: '/value', payload: { value: 'v1' } })).body).toBe('OK');
    const res = await app.inject({ method: 'GET', url: '/value' });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { value: string; ttl: number };
    expect(body.value).toBe('v1');
    expect(body.ttl).toBeGreaterThan(0);
    await app.close();
    expect(client.status).toBe('end');
    await expect(client.get(key)).rejects.toThrow(/Connection is closed/);
    expect(await ctx.pool().get(key)).toBe('v1');
  });

  it('@fastify/redis: without closeClient, fastify.close() leaves the handle ready', async () => {
    const client = asIoredis(ctx.pool());
    const app = fastify();
    await app.register(fastifyRedis, { client: client as unknown as Redis, namespace: 'cache' });
    const key = unique('fastify-ns');
    await app.redis.cache!.set(key, '1');
    await app.close();
    expect(client.status).toBe('ready');
    expect(await client.get(key)).toBe('1');
  });
}

/** redlock 4 (callbacks) and redlock 5 (promises): acquire, contention, extend, release. */
export function redlockFlows(ctx: FlowContext): void {
  it('redlock 4: one of eight contenders gets the lock; extend and unlock work; the next acquire succeeds', async () => {
    const contenders = Array.from({ length: 8 }, () => new Redlock4([asIoredis(ctx.pool())], { retryCount: 0 }));
    const resource = unique('lock4');
    const results = await Promise.allSettled(contenders.map((r) => r.lock(resource, 10_000)));
    const won = results.filter((r): r is PromiseFulfilledResult<Redlock4Lock> => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as Error).name).toBe('LockError');
    const lock = won[0]!.value;
    expect(await ctx.pool().get(resource)).toBe(lock.value);
    await lock.extend(60_000);
    expect(Number(await ctx.pool().pttl(resource))).toBeGreaterThan(10_000);
    await lock.unlock();
    expect(await ctx.pool().get(resource)).toBeNull();
    // The node-style API of redlock itself, over the facade's callbacks.
    const again = await new Promise<Redlock4Lock>((resolve, reject) => contenders[0]!.lock(resource, 5_000, (err, l) => (err ? reject(err) : resolve(l!))));
    await again.unlock();
    await Promise.all(contenders.map((r) => r.quit()));
    expect(await ctx.pool().call('PING')).toBe('PONG');
  });

  it('redlock 5: acquire under contention, extend, release, using()', async () => {
    const a = new Redlock5([asIoredis(ctx.pool())], { retryCount: 0 });
    const b = new Redlock5([asIoredis(ctx.pool())], { retryCount: 0 });
    const resource = unique('lock5');
    const results = await Promise.allSettled([a.acquire([resource], 10_000), b.acquire([resource], 10_000)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(ExecutionError);
    let lock = (won[0] as PromiseFulfilledResult<Redlock5Lock>).value;
    lock = await lock.extend(60_000);
    expect(Number(await ctx.pool().pttl(resource))).toBeGreaterThan(10_000);
    await expect(b.acquire([resource], 1_000)).rejects.toBeInstanceOf(ExecutionError);
    await lock.release();
    expect(await ctx.pool().get(resource)).toBeNull();
    expect(await b.using([resource], 5_000, async () => ctx.pool().get(resource))).toMatch(/^[0-9a-f]{32}$/);
    await Promise.all([a.quit(), b.quit()]);
  });
}

/** rate-limiter-flexible in its default ioredis mode: consume, reject, get, block, delete. */
export function rateLimiterFlows(ctx: FlowContext): void {
  for (const [name, Limiter] of [['RateLimiterRedis', RateLimiterRedis], ['RateLimiterRedisNonAtomic', RateLimiterRedisNonAtomic]] as const) {
    it(`rate-limiter-flexible ${name} (ioredis mode): consume, reject, get, block, delete`, async () => {
      const client: IoredisClient = asIoredis(ctx.pool());
      const limiter = new Limiter({ storeClient: client, points: 3, duration: 60, keyPrefix: unique('rlf') });
      const user = 'user-1';
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) remaining.push((await limiter.consume(user)).remainingPoints);
      expect(remaining).toEqual([2, 1, 0]);
      const refused = await limiter.consume(user).then(() => 'allowed', (r: unknown) => r);
      expect(refused).toBeInstanceOf(RateLimiterRes);
      expect((refused as RateLimiterRes).remainingPoints).toBe(0);
      expect((refused as RateLimiterRes).msBeforeNext).toBeGreaterThan(0);
      expect((refused as RateLimiterRes).msBeforeNext).toBeLessThanOrEqual(60_000);
      const got = await limiter.get(user);
      expect(got?.consumedPoints).toBe(4);
      expect(got?.msBeforeNext).toBeGreaterThan(0);
      expect(await limiter.get('nobody')).toBeNull();

      const blocked = await limiter.block('user-2', 120);
      expect(blocked.msBeforeNext).toBeGreaterThan(60_000);
      await expect(limiter.consume('user-2')).rejects.toBeInstanceOf(RateLimiterRes);
      expect((await limiter.get('user-2'))?.msBeforeNext).toBeGreaterThan(60_000);

      expect(await limiter.delete(user)).toBe(true);
      expect(await limiter.delete(user)).toBe(false);
      expect(await limiter.get(user)).toBeNull();
      expect((await limiter.consume(user)).remainingPoints).toBe(2);
    });
  }
}

/** Every library flow. */
export function allIoredisFlows(ctx: FlowContext): void {
  graphqlFlows(ctx);
  fastifyFlows(ctx);
  redlockFlows(ctx);
  rateLimiterFlows(ctx);
}
