/**
 * Pool-level pub/sub against a real redis-server, under RESP2 and RESP3: listeners and async
 * iterators, shared subscriber connections, unsubscribe/close, slow consumers, throwing
 * listeners, keyspace notifications, bad input, and automatic resubscribe after the server
 * cuts the subscriber connection (CLIENT KILL TYPE pubsub) while a publisher runs at 1,000/s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoolClosedError, SlowConsumerError, StandalonePool, type Subscription } from '../../src/index.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { ReceivedLog, startPublisher } from '../support/pubsub-check.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;

beforeAll(async () => {
  topo = await startStandalone({ config: { 'notify-keyspace-events': 'KEA' } });
}, 60_000);

afterAll(async () => {
  await topo?.stop();
});

async function pubsubClients(): Promise<number> {
  const list = await topo.server.cli('CLIENT', 'LIST', 'TYPE', 'pubsub');
  return list.split('\n').filter((l) => l.trim() !== '').length;
}

async function numsub(channel: string): Promise<number> {
  const out = await topo.server.cli('PUBSUB', 'NUMSUB', channel);
  return Number(out.split('\n')[1]);
}

describe.each([2, 3] as const)('pub/sub over RESP%i', (protocol) => {
  let pool: StandalonePool;
  beforeAll(async () => {
    pool = await StandalonePool.create(topo.address, { protocol });
  });
  afterAll(async () => {
    await pool?.close();
  });

  it('delivers to a listener and to the async iterator, in order', async () => {
    const ch = `ch-${protocol}-a`;
    const heard: string[] = [];
    // Typed as strings without returnBuffers (a compile error under `npm run typecheck` otherwise).
    const sub = await pool.subscribe(ch, (m: string, c: string) => heard.push(`${c}=${m}`));
    const it: AsyncIterator<{ channel: string; message: string }> = sub[Symbol.asyncIterator]();
    expect(await pool.publish(ch, 'one')).toBe(1);
    await pool.publish(ch, 'two');
    expect((await it.next()).value).toEqual({ channel: ch, message: 'one' });
    expect((await it.next()).value).toEqual({ channel: ch, message: 'two' });
    await waitFor(() => heard.length === 2, 'listener messages');
    expect(heard).toEqual([`${ch}=one`, `${ch}=two`]);
    await sub.close();
    expect(await it.next()).toEqual({ value: undefined, done: true });
    await waitFor(async () => (await numsub(ch)) === 0, 'the server to drop the subscription');
  });

  it('psubscribe reports the pattern; returnBuffers keeps payloads binary', async () => {
    const seen: Array<[unknown, string, string | undefined]> = [];
    const sub = await pool.psubscribe(`news-${protocol}.*`, (m: Buffer, c, p) => seen.push([m, c, p]), { returnBuffers: true });
    const payload = Buffer.from([0, 255, 1, 254]);
    await pool.publish(`news-${protocol}.sport`, payload);
    await waitFor(() => seen.length === 1, 'pattern message');
    const [m, c, p] = seen[0]!;
    expect(Buffer.isBuffer(m)).toBe(true);
    expect((m as Buffer).equals(payload)).toBe(true);
    expect(c).toBe(`news-${protocol}.sport`);
    expect(p).toBe(`news-${protocol}.*`);
    await sub.close();
  });

  it('shares one subscriber connection between subscriptions and subscribes a channel once', async () => {
    const ch = `shared-${protocol}`;
    const a: string[] = [];
    const b: string[] = [];
    const before = await pubsubClients();
    const s1 = await pool.subscribe([ch, `${ch}-x`], (m) => a.push(String(m)));
    const s2 = await pool.subscribe(ch, (m) => b.push(String(m)));
    expect(await pubsubClients()).toBe(before + 1);
    expect(await numsub(ch)).toBe(1);
    await pool.publish(ch, 'hello');
    await waitFor(() => a.length === 1 && b.length === 1, 'both subscriptions');
    await s1.unsubscribe(ch);
    expect(s1.channels).toEqual([`${ch}-x`]);
    await pool.publish(ch, 'again');
    await waitFor(() => b.length === 2, 'the remaining subscription');
    expect(a).toEqual(['hello']);
    await s2.close();
    await waitFor(async () => (await numsub(ch)) === 0, 'channel unsubscribed on the server');
    await s1.close();
    await waitFor(async () => (await pubsubClients()) === before, 'the subscriber connection to close');
    expect(pool.stats().pubsub).toMatchObject({ subscriptions: 0, names: 0, connections: 0 });
    await expect(s1.unsubscribe('x')).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('a throwing listener does not stop delivery to others', async () => {
    const ch = `throws-${protocol}`;
    const good: string[] = [];
    const errors: Error[] = [];
    const bad = await pool.subscribe(ch, () => { throw new Error('listener bug'); });
    bad.on('error', (e) => errors.push(e));
    const ok = await pool.subscribe(ch, (m) => good.push(String(m)));
    await pool.publish(ch, '1');
    await pool.publish(ch, '2');
    await waitFor(() => good.length === 2, 'the good listener');
    expect(errors.map((e) => e.message)).toEqual(['listener bug', 'listener bug']);
    await bad.close();
    await ok.close();
  });

  it('slow consumers: drop-oldest counts what it dropped, error ends the iteration', async () => {
    const ch = `slow-${protocol}`;
    const dropping = await pool.subscribe(ch, undefined, { highWaterMark: 3 });
    let dropped = 0;
    dropping.on('dropped', (d) => { dropped += d.count; });
    const it = dropping[Symbol.asyncIterator]();
    const failing = await pool.subscribe(ch, undefined, { highWaterMark: 3, overflow: 'error' });
    const it2 = failing[Symbol.asyncIterator]();
    for (let i = 0; i < 5; i++) await pool.publish(ch, String(i));
    await waitFor(() => dropped === 2, 'two dropped');
    const got: string[] = [];
    for (let i = 0; i < 3; i++) got.push(String((await it.next()).value!.message));
    expect(got).toEqual(['2', '3', '4']);
    await expect(it2.next()).rejects.toBeInstanceOf(SlowConsumerError);
    expect(failing.closed).toBe(true);
    await dropping.close();
  });

  it('keyspace notifications arrive through psubscribe', async () => {
    const events: string[] = [];
    const sub = await pool.psubscribe(`__keyspace@0__:ks-${protocol}:*`, (m, c) => events.push(`${c} ${String(m)}`));
    await pool.set(`ks-${protocol}:a`, '1');
    await pool.del(`ks-${protocol}:a`);
    await waitFor(() => events.length === 2, 'two keyspace events');
    expect(events).toEqual([`__keyspace@0__:ks-${protocol}:a set`, `__keyspace@0__:ks-${protocol}:a del`]);
    await sub.close();
  });

  it('resubscribes after CLIENT KILL TYPE pubsub: every message published after resubscribed arrives once, in order', async () => {
    const ch = `seq-${protocol}`;
    const log = new ReceivedLog();
    const sub = await pool.subscribe(ch, log.listener);
    const events: Array<{ channels: string[]; reason: string; gapMs: number; at: number }> = [];
    let after = -1;
    const publisher = startPublisher((m) => pool.publish(ch, m));
    sub.on('resubscribed', (e) => {
      events.push({ ...e, at: Date.now() });
      after = publisher.next;
    });
    await waitFor(() => log.seqs.length > 100, 'messages before the fault');
    const killedAt = Date.now();
    await topo.server.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await waitFor(() => events.length === 1, 'resubscribed');
    await waitFor(() => log.seqs.length > 0 && log.seqs.at(-1)! > after + 100, 'messages after the resubscribe');
    await publisher.stop();
    await log.waitComplete(after, publisher.acknowledged);
    expect(events[0]).toMatchObject({ channels: [ch], reason: 'connection-lost' });
    // The gap lies within the window from the kill to the event (its lower bound: the test below).
    expect(events[0]!.gapMs).toBeGreaterThanOrEqual(0);
    expect(events[0]!.gapMs).toBeLessThanOrEqual(events[0]!.at - killedAt);
    expect(log.missingFrom(after, publisher.acknowledged)).toEqual([]);
    expect(log.disorder()).toEqual([]);
    expect(await numsub(ch)).toBe(1);
    await sub.close();
    expect(await numsub(ch)).toBe(0);
  });
});

describe('the gap a resubscription reports', () => {
  it('gapMs covers the whole time without a subscription: from the lost connection to the resubscribe', async () => {
    // Through a proxy that refuses new connections: the subscription stays down until heal().
    const proxy = await FaultProxy.start(topo.address);
    const pool = await StandalonePool.create(proxy.address, { pool: { reconnect: { initialDelay: 100, maxDelay: 200 } } });
    try {
      const ch = 'gap-ch';
      const heard: string[] = [];
      const sub = await pool.subscribe(ch, (m) => heard.push(String(m)));
      const failures: number[] = [];
      const events: Array<{ reason: string; gapMs: number; at: number }> = [];
      sub.on('error', () => failures.push(Date.now()));
      sub.on('resubscribed', (e) => events.push({ ...e, at: Date.now() }));
      const cutAt = Date.now();
      await proxy.refuse('close');
      proxy.cut();
      // Each failed resubscribe is reported after the loss; two of them are a backoff apart
      // (at least a quarter of initialDelay), so the subscription was down at least from the
      // first report to heal().
      await waitFor(() => failures.length >= 2, 'two failed resubscribes', 20_000);
      const firstFailure = failures[0]!;
      const healedAt = Date.now();
      await proxy.heal();
      await waitFor(() => events.length === 1, 'resubscribed', 20_000);
      expect(events[0]!.reason).toBe('connection-lost');
      expect(events[0]!.gapMs).toBeGreaterThanOrEqual(healedAt - firstFailure);
      expect(healedAt - firstFailure).toBeGreaterThan(0);
      expect(events[0]!.gapMs).toBeLessThanOrEqual(events[0]!.at - cutAt);
      // And the subscription works again.
      expect(await pool.publish(ch, 'after')).toBe(1);
      await waitFor(() => heard.includes('after'), 'a message after the resubscribe');
    } finally {
      await pool.close();
      await proxy.close();
    }
  });
});

describe('bad input and lifecycle', () => {
  let pool: StandalonePool;
  beforeAll(async () => {
    pool = await StandalonePool.create(topo.address);
  });
  afterAll(async () => {
    await pool?.close();
  });

  it('rejects empty lists, bad listeners and bad options with TypeError (ssubscribe too)', async () => {
    await expect(pool.subscribe([])).rejects.toThrow(/subscribe needs at least one name/);
    await expect(pool.subscribe('a', 'nope' as never)).rejects.toThrow(/listener must be a function/);
    await expect(pool.subscribe('a', undefined, { highWaterMark: 0 })).rejects.toThrow(/highWaterMark/);
    await expect(pool.subscribe('a', undefined, { overflow: 'block' as never })).rejects.toThrow(/overflow/);
    await expect(pool.ssubscribe([])).rejects.toThrow(/ssubscribe needs at least one name/);
  });

  it('pool.close() ends open iterators and leaves no subscriber connection', async () => {
    const p = await StandalonePool.create(topo.address);
    const before = await pubsubClients();
    const sub: Subscription = await p.subscribe('closing-ch');
    expect(await pubsubClients()).toBe(before + 1);
    const pending = sub[Symbol.asyncIterator]().next();
    await p.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    await waitFor(async () => (await pubsubClients()) === before, 'subscriber connection closed');
    await expect(p.subscribe('x')).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('leaving a for-await loop closes the subscription', async () => {
    const sub = await pool.subscribe('loop-ch');
    const publishing = (async () => {
      await waitFor(async () => (await numsub('loop-ch')) === 1, 'subscribed');
      await pool.publish('loop-ch', 'x');
    })();
    for await (const m of sub) {
      expect(m).toEqual({ channel: 'loop-ch', message: 'x' });
      break;
    }
    await publishing;
    expect(sub.closed).toBe(true);
    await waitFor(async () => (await numsub('loop-ch')) === 0, 'unsubscribed');
  });
});
