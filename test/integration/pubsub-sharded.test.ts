/**
 * Sharded pub/sub (SSUBSCRIBE / SPUBLISH, Redis 7) on a StandalonePool against a real
 * redis-server: a standalone server has sharded channels too, and the Socket.IO sharded
 * adapter uses them. Delivery (strings and Buffers), kinds kept apart from plain channels,
 * unsubscribe (also of a subscription's last name), resubscribe after the server cuts the
 * subscriber connection, and the pool's unbound `call`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolClosedError, RedisError, StandalonePool, UnsupportedCommandError } from '../../src/index.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: StandaloneTopology;
let pool: StandalonePool;

beforeAll(async () => {
  topo = await startStandalone();
  pool = await StandalonePool.create(topo.address);
}, 60_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function shardNumsub(channel: string): Promise<number> {
  const out = await topo.server.cli('PUBSUB', 'SHARDNUMSUB', channel);
  return Number(out.split('\n')[1]);
}

describe('ssubscribe / spublish on a StandalonePool', () => {
  it.skipIf(!server.has('sharded-pubsub'))(`delivers sharded messages to the listener and the iterator, as strings or Buffers ${server.needs('sharded-pubsub')}`, async () => {
    const heard: string[] = [];
    const sub = await pool.ssubscribe('sh-a', (m, c) => heard.push(`${c}=${m}`));
    const raw = await pool.ssubscribe('sh-b', undefined, { returnBuffers: true });
    const it = raw[Symbol.asyncIterator]();
    expect(await shardNumsub('sh-a')).toBe(1);
    expect(await pool.spublish('sh-a', 'one')).toBe(1);
    expect(await pool.spublish('sh-b', Buffer.from([0xff, 0x00]))).toBe(1);
    await waitFor(() => heard.length === 1, 'the sharded message');
    expect(heard).toEqual(['sh-a=one']);
    const got = (await it.next()).value!;
    expect(got.channel).toBe('sh-b');
    expect(Buffer.isBuffer(got.message) && got.message.equals(Buffer.from([0xff, 0x00]))).toBe(true);
    await sub.close();
    await raw.close();
    expect(await shardNumsub('sh-a')).toBe(0);
    expect(await pool.spublish('sh-a', 'nobody')).toBe(0);
  });

  it.skipIf(!server.has('sharded-pubsub'))(`keeps sharded and plain channels of the same name apart ${server.needs('sharded-pubsub')}`, async () => {
    const sharded: string[] = [];
    const plain: string[] = [];
    const s1 = await pool.ssubscribe('same', (m) => sharded.push(m));
    const s2 = await pool.subscribe('same', (m) => plain.push(m));
    await pool.spublish('same', 'via-spublish');
    await pool.publish('same', 'via-publish');
    await waitFor(() => sharded.length === 1 && plain.length === 1, 'one message on each kind');
    expect(sharded).toEqual(['via-spublish']);
    expect(plain).toEqual(['via-publish']);
    await s1.unsubscribe('same');
    expect(s1.closed).toBe(true);
    expect(await shardNumsub('same')).toBe(0);
    expect(await pool.publish('same', 'still')).toBe(1);
    await s2.close();
  });

  it.skipIf(!server.has('sharded-pubsub'))(`resubscribes sharded channels after the server cuts the subscriber connection ${server.needs('sharded-pubsub')}`, async () => {
    const heard: string[] = [];
    const sub = await pool.ssubscribe(['sh-x', 'sh-y'], (m, c) => heard.push(`${c}=${m}`));
    const resubscribed: Array<{ channels: string[]; reason: string }> = [];
    sub.on('resubscribed', (e) => resubscribed.push(e));
    await topo.server.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await waitFor(() => resubscribed.length === 1, 'resubscribed');
    expect(resubscribed[0]!.channels.sort()).toEqual(['sh-x', 'sh-y']);
    expect(resubscribed[0]!.reason).toBe('connection-lost');
    await pool.spublish('sh-y', 'after');
    await waitFor(() => heard.includes('sh-y=after'), 'a message after the resubscribe');
    await sub.close();
  });

  it('refuses bad input with a TypeError naming ssubscribe', async () => {
    await expect(pool.ssubscribe([])).rejects.toThrow(/ssubscribe needs at least one name/);
    await expect(pool.ssubscribe('c', 'not a function' as never)).rejects.toThrow(TypeError);
  });
});

describe('Subscription.unsubscribe() of its last name', () => {
  it.each(server.has('sharded-pubsub') ? (['subscribe', 'ssubscribe'] as const) : (['subscribe'] as const))('%s: the server forgets the name (it used to stay subscribed with nobody to deliver to)', async (method) => {
    const count = async (c: string) => Number((await topo.server.cli('PUBSUB', method === 'subscribe' ? 'NUMSUB' : 'SHARDNUMSUB', c)).split('\n')[1]);
    const sub = await pool[method](['last-1', 'last-2'], () => {});
    await sub.unsubscribe('last-1');
    expect(await count('last-1')).toBe(0);
    expect(await count('last-2')).toBe(1);
    await sub.unsubscribe('last-2');
    expect(sub.closed).toBe(true);
    expect(await count('last-2')).toBe(0);
    expect(pool.stats().pubsub).toMatchObject({ subscriptions: 0, names: 0 });
  });
});

describe('a server without sharded pub/sub (Redis 6.2)', () => {
  it.skipIf(server.has('sharded-pubsub'))(`ssubscribe and spublish reject with UnsupportedCommandError naming the server version and what to do; plain pub/sub still works ${server.has('sharded-pubsub') ? `(skipped: ${server.label} has sharded pub/sub, tested above)` : ''}`, async () => {
    const err = await pool.ssubscribe('old-server', () => {}).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedCommandError);
    const e = err as UnsupportedCommandError;
    expect(e.command).toBe('SSUBSCRIBE');
    expect(e.serverVersion).toBe(server.version);
    expect(e.message).toContain(`(${server.label})`);
    expect(e.message).toMatch(/needs Redis 7\.0 or later.*Use subscribe\(\) with plain channels/);
    expect(e.cause).toBeInstanceOf(RedisError);
    expect((e.cause as RedisError).message).toMatch(/unknown command/i);
    // SPUBLISH says the same, naming itself and publish() as the way out.
    const pub = await pool.spublish('old-server', 'x').then(() => undefined, (x: unknown) => x);
    expect(pub).toBeInstanceOf(UnsupportedCommandError);
    expect((pub as UnsupportedCommandError).command).toBe('SPUBLISH');
    expect((pub as Error).message).toContain(`(${server.label})`);
    expect((pub as Error).message).toMatch(/Sharded pub\/sub \(SPUBLISH\).*Use publish\(\) with plain channels/);
    expect((pub as Error).cause).toBeInstanceOf(RedisError);
    // Nothing half-subscribed is left behind, and the plain kind works on the same pool.
    expect(pool.stats().pubsub).toMatchObject({ subscriptions: 0, names: 0 });
    const heard: string[] = [];
    const sub = await pool.subscribe('old-server', (m) => heard.push(m));
    expect(await pool.publish('old-server', 'plain')).toBe(1);
    await waitFor(() => heard.length === 1, 'the plain message');
    await sub.close();
  });
});

describe('pool.call unbound', () => {
  it('works detached from its pool, as a send function', async () => {
    const send = pool.call;
    expect(await send('PING')).toBe('PONG');
    await send('SET', 'unbound-k', 'v');
    const { call } = pool;
    expect(await call<string>('GET', 'unbound-k')).toBe('v');
    // The shape rate-limit-redis takes: `sendCommand: pool.call`, called with its own `this`.
    const store = { sendCommand: pool.call };
    expect(await store.sendCommand('ECHO', 'x')).toBe('x');
    expect(await Reflect.apply(pool.call, undefined, ['EXISTS', 'unbound-k'])).toBe(1);
  });

  it('a detached call of a closed pool rejects with PoolClosedError', async () => {
    const other = await StandalonePool.create(topo.address);
    const send = other.call;
    await other.close();
    await expect(send('PING')).rejects.toBeInstanceOf(PoolClosedError);
  });
});
