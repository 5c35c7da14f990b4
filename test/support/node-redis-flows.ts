/**
 * The example flow of every library `redis-ha-pool/node-redis` serves, run through the facade
 * on whatever pool a test file gives (StandalonePool, SentinelPool, ClusterPool): the libraries
 * are the real ones (dev dependencies), and so are the servers.
 *
 * - connect-redis 9 in an express 5 + express-session app (login, read, touch, logout over
 *   HTTP), then connect-redis's own lifecycle test (set/get/touch/length/ids/all/destroy/clear);
 * - rate-limiter-flexible 11 `RateLimiterRedis` with `useRedisPackage: true`;
 * - two Socket.IO servers, each on its own pool, through @socket.io/redis-adapter (classic and
 *   sharded) and @socket.io/redis-streams-adapter: broadcasts, serverSideEmit (with ack) and
 *   fetchSockets;
 * - rate-limit-redis 6 with express-rate-limit 8 (the facade's `sendCommand`, and `pool.call`
 *   unbound).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import express from 'express';
import session from 'express-session';
import { RedisStore as SessionStore } from 'connect-redis';
import { rateLimit } from 'express-rate-limit';
import { RedisStore as RateLimitStore } from 'rate-limit-redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { Server as IoServer, type ServerOptions } from 'socket.io';
import { io as ioClient, type Socket as ClientSocket } from 'socket.io-client';
import { createAdapter as createClassicAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import { createAdapter as createStreamsAdapter } from '@socket.io/redis-streams-adapter';
import type { ClusterPool, SentinelPool, StandalonePool } from '../../src/index.js';
import { asNodeRedis, type NodeRedisClient } from '../../src/integrations/node-redis.js';
import { waitFor } from './wait.js';

/** Any pool mode. */
export type AnyPool = StandalonePool | SentinelPool | ClusterPool;

/** A name no other test uses. */
export const unique = (what: string): string => `${what}-${randomBytes(4).toString('hex')}`;

/** What a test file supplies. */
export interface FlowContext {
  /** The file's pool. */
  pool(): AnyPool;
  /** Another pool of the same mode (a second Socket.IO server needs its own); the flow closes it. */
  createPool(): Promise<AnyPool>;
  /** Subscribers of a plain channel, summed over every server (PUBSUB NUMSUB). */
  numsub(channel: string): Promise<number>;
}

// ------------------------------------------------------------------------------------- HTTP

/** An HTTP server on 127.0.0.1, on a free port. */
export async function listen(handler: Parameters<typeof createServer>[1] | undefined): Promise<{ server: HttpServer; url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A browser's cookie jar for one site, as far as these apps need one. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();
  async fetch(url: string): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { headers: cookie ? { cookie } : {} });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
    return res;
  }
}

// ---------------------------------------------------------------------------- connect-redis

/** An express-session app storing its sessions through connect-redis on `client`. */
export async function sessionApp(client: NodeRedisClient, prefix: string): Promise<{ url: string; store: SessionStore; close(): Promise<void> }> {
  const store = new SessionStore({ client, prefix });
  const app = express();
  app.use(session({ store, secret: 'test secret', resave: false, saveUninitialized: false, rolling: true, cookie: { maxAge: 60_000 } }));
  app.get('/login/:user', (req, res) => {
    (req.session as unknown as { user: string }).user = req.params.user;
    res.send('ok');
  });
  app.get('/me', (req, res) => {
    res.json({ user: (req.session as unknown as { user?: string }).user ?? null });
  });
  app.get('/logout', (req, res, next) => {
    req.session.destroy((err) => (err ? next(err) : res.send('bye')));
  });
  const http = await listen(app);
  return { url: http.url, store, close: http.close };
}

/** connect-redis: an express-session app over the facade, then the library's own lifecycle test. */
export function connectRedisFlows(ctx: FlowContext): void {
  it('connect-redis: an express-session app logs in, reads, touches and destroys its session', async () => {
    const client = asNodeRedis(ctx.pool());
    const prefix = `${unique('sess')}:`;
    const app = await sessionApp(client, prefix);
    try {
      const jar = new CookieJar();
      expect(await (await jar.fetch(`${app.url}/me`)).json()).toEqual({ user: null });
      expect(await app.store.length()).toBe(0);
      expect(await (await jar.fetch(`${app.url}/login/ada`)).text()).toBe('ok');
      const [sid] = (await app.store.ids()) as string[];
      expect(sid).toBeDefined();
      const ttl = await client.ttl(`${prefix}${sid}`);
      expect(ttl).toBeGreaterThan(50);
      expect(ttl).toBeLessThanOrEqual(60);
      // rolling: every request touches the session (connect-redis EXPIREs it).
      await client.expire(`${prefix}${sid}`, 10);
      expect(await (await jar.fetch(`${app.url}/me`)).json()).toEqual({ user: 'ada' });
      expect(await client.ttl(`${prefix}${sid}`)).toBeGreaterThan(50);
      expect(await (await jar.fetch(`${app.url}/logout`)).text()).toBe('bye');
      expect(await client.exists(`${prefix}${sid}`)).toBe(0);
      expect(await (await jar.fetch(`${app.url}/me`)).json()).toEqual({ user: null });
    } finally {
      await app.close();
    }
  });

  it("connect-redis: the library's lifecycle test (set/get/touch/length/ids/all/destroy/clear)", async () => {
    const client = asNodeRedis(ctx.pool());
    const store = new SessionStore({ client, prefix: `${unique('life')}:` });
    const key = (sid: string) => `${store.prefix}${sid}`;
    await store.clear();
    const sess = { foo: 'bar', cookie: { originalMaxAge: null } };
    await store.set('123', sess as never);
    expect(await store.get('123')).toEqual(sess);
    expect(await client.ttl(key('123'))).toBeGreaterThanOrEqual(86399);
    const expires = new Date(Date.now() + 60_000);
    await store.set('456', { cookie: { originalMaxAge: null, expires } } as never);
    expect(await client.ttl(key('456'))).toBeLessThanOrEqual(60);
    await store.touch('456', { cookie: { originalMaxAge: null, expires: new Date(Date.now() + 90_000) } } as never);
    expect(await client.ttl(key('456'))).toBeGreaterThan(60);
    expect(await store.length()).toBe(2);
    expect(((await store.ids()) as string[]).sort()).toEqual(['123', '456']);
    const all = ((await store.all()) as Array<{ id: string }>).sort((a, b) => (a.id > b.id ? 1 : -1));
    expect(all).toEqual([
      { id: '123', foo: 'bar', cookie: { originalMaxAge: null } },
      { id: '456', cookie: { originalMaxAge: null, expires: expires.toISOString() } },
    ]);
    await store.destroy('456');
    expect(await store.length()).toBe(1);
    await store.clear();
    expect(await store.length()).toBe(0);
    // Many sessions: length, ids and clear walk them in SCAN batches (every master in a cluster).
    const count = 500;
    await Promise.all(Array.from({ length: count }, (_, i) => store.set(`s${i}`, { cookie: { originalMaxAge: null, expires: new Date(Date.now() + 60_000) } } as never)));
    expect(await store.length()).toBe(count);
    expect(new Set((await store.ids()) as string[]).size).toBe(count);
    await store.clear();
    expect(await store.length()).toBe(0);
    // A session whose cookie already expired is destroyed instead of stored.
    await store.set('789', { cookie: { originalMaxAge: null, expires: new Date(Date.now() + 60_000) } } as never);
    expect(await store.length()).toBe(1);
    await store.set('789', { cookie: { originalMaxAge: null, expires: new Date(Date.now() - 60_000) } } as never);
    expect(await store.length()).toBe(0);
  });
}

// ---------------------------------------------------------------------- rate-limiter-flexible

/** rate-limiter-flexible in node-redis mode: consume, reject at the limit, get, block, delete. */
export function rateLimiterFlexibleFlows(ctx: FlowContext): void {
  it('rate-limiter-flexible (useRedisPackage): consume, reject at the limit, get, reward, penalty, block, delete', async () => {
    const limiter = new RateLimiterRedis({
      storeClient: asNodeRedis(ctx.pool()), useRedisPackage: true, rejectIfRedisNotReady: true, keyPrefix: unique('rlf'), points: 3, duration: 60,
    });
    const user = 'user-1';
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) remaining.push((await limiter.consume(user)).remainingPoints);
    expect(remaining).toEqual([2, 1, 0]);
    const rejected = await limiter.consume(user).catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(RateLimiterRes);
    expect((rejected as RateLimiterRes).remainingPoints).toBe(0);
    expect((rejected as RateLimiterRes).msBeforeNext).toBeGreaterThan(50_000);
    const got = await limiter.get(user);
    expect(got?.consumedPoints).toBe(4);
    expect(await limiter.get('nobody')).toBeNull();
    expect((await limiter.reward(user, 2)).consumedPoints).toBe(2);
    expect((await limiter.penalty(user, 1)).consumedPoints).toBe(3);
    expect((await limiter.get(user))?.remainingPoints).toBe(0);
    // consume with 2 points at once, on another key, then block it for 120 s.
    expect((await limiter.consume('user-2', 2)).remainingPoints).toBe(1);
    await limiter.block('user-2', 120);
    const blocked = await limiter.get('user-2');
    expect(blocked!.msBeforeNext).toBeGreaterThan(100_000);
    await expect(limiter.consume('user-2')).rejects.toBeInstanceOf(RateLimiterRes);
    expect(await limiter.delete('user-2')).toBe(true);
    expect(await limiter.delete('user-2')).toBe(false);
    expect((await limiter.consume('user-2')).remainingPoints).toBe(2);
  });
}

// -------------------------------------------------------------------------------- Socket.IO

type AdapterFactory = NonNullable<Partial<ServerOptions>['adapter']>;

export interface IoNode {
  io: IoServer;
  client: ClientSocket;
  close(): Promise<void>;
}

/** A Socket.IO server with `adapter` on 127.0.0.1, and one client connected to it (joined to `room`). */
async function ioNode(adapter: AdapterFactory, room: string): Promise<IoNode> {
  const http = createServer();
  const io = new IoServer(http, { adapter });
  io.on('connection', (s) => {
    void s.join(room);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const client = ioClient(`http://127.0.0.1:${port}`, { transports: ['websocket'], forceNew: true, reconnection: false });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('connect_error', reject);
  });
  await waitFor(() => io.of('/').adapter.rooms.get(room)?.has(client.id!) ?? false, 'the client in its room');
  return {
    io,
    client,
    close: async () => {
      client.disconnect();
      await new Promise<void>((resolve) => io.close(() => resolve()));
    },
  };
}

/** Events of one kind a client received. */
export function collect(client: ClientSocket, event: string): unknown[][] {
  const got: unknown[][] = [];
  client.on(event, (...args: unknown[]) => got.push(args));
  return got;
}

/** Two servers, each on its own pool with its own adapter, and what a test checks through them. */
export async function ioPair(ctx: FlowContext, make: (pool: AnyPool) => AdapterFactory): Promise<{ a: IoNode; b: IoNode; room: string; pools: AnyPool[]; close(): Promise<void> }> {
  const pools = [await ctx.createPool(), await ctx.createPool()];
  const room = unique('room');
  const nodes: IoNode[] = [];
  try {
    for (const p of pools) nodes.push(await ioNode(make(p), room));
  } catch (e) {
    await Promise.all(nodes.map((n) => n.close()));
    await Promise.all(pools.map((p) => p.close()));
    throw e;
  }
  const [a, b] = nodes as [IoNode, IoNode];
  // Every broadcast, request and response goes through Redis: wait until both servers count two.
  await waitFor(async () => (await a.io.of('/').adapter.serverCount()) === 2 && (await b.io.of('/').adapter.serverCount()) === 2, 'both servers to count two servers');
  return {
    a, b, room, pools,
    close: async () => {
      // Servers first: a pool closed under a running adapter would fail its calls.
      await Promise.all(nodes.map((n) => n.close()));
      await Promise.all(pools.map((p) => p.close()));
    },
  };
}

/** Broadcasts (all, room, with a Buffer), serverSideEmit with ack, fetchSockets: what every adapter must carry between two servers. */
export async function checkIoPair(pair: Awaited<ReturnType<typeof ioPair>>, settle?: () => Promise<void>): Promise<void> {
  const { a, b, room } = pair;
  const onB = collect(b.client, 'news');
  const onA = collect(a.client, 'news');
  await settle?.();
  a.io.to(room).emit('news', 1, 'to the room');
  a.io.emit('news', 2, Buffer.from([1, 2, 3]));
  b.io.except(room).emit('news', 3, 'to nobody');
  await waitFor(() => onB.length === 2 && onA.length === 2, 'both broadcasts on both clients');
  // Two channels (the room's, everyone's): in a cluster each PUBLISH goes to any master and
  // crosses the cluster bus, so they may arrive in either order (node-redis's cluster client
  // publishes the same way).
  const byNumber = (l: unknown[][]) => [...l].sort((x, y) => Number(x[0]) - Number(y[0]));
  const [room1, all2] = byNumber(onB);
  expect(room1).toEqual([1, 'to the room']);
  expect(all2![0]).toBe(2);
  expect(Buffer.from(all2![1] as ArrayBuffer)).toEqual(Buffer.from([1, 2, 3]));
  expect(byNumber(onA).map((m) => m[0])).toEqual([1, 2]);

  const heard: unknown[] = [];
  b.io.on('hello', (...args: unknown[]) => {
    const ack = args.at(-1);
    if (typeof ack === 'function') ack(`hi from b to ${String(args[0])}`);
    else heard.push(args[0]);
  });
  a.io.serverSideEmit('hello', 'plain');
  await waitFor(() => heard.length === 1, 'serverSideEmit on the other server');
  expect(heard).toEqual(['plain']);
  expect(await a.io.serverSideEmitWithAck('hello', 'a')).toEqual(['hi from b to a']);

  const sockets = await a.io.fetchSockets();
  expect(sockets.map((s) => s.id).sort()).toEqual([a.client.id, b.client.id].sort());
  const remote = sockets.find((s) => s.id === b.client.id)!;
  expect([...remote.rooms]).toContain(room);
  const inRoom = await b.io.in(room).fetchSockets();
  expect(inRoom).toHaveLength(2);
}

/** Until one `probe` broadcast from a to b arrived: the streams adapter reads from '$', so one sent before b's first XREAD is not for b. */
async function streamLive(a: IoNode, b: IoNode): Promise<void> {
  let seen = false;
  const onProbe = () => { seen = true; };
  b.client.on('probe', onProbe);
  await waitFor(() => {
    if (!seen) a.io.emit('probe');
    return seen;
  }, 'a broadcast through the stream', 20_000, 200);
  b.client.off('probe', onProbe);
}

/** The three Socket.IO adapters, two servers each. */
export function socketIoFlows(ctx: FlowContext): void {
  it('@socket.io/redis-adapter: broadcasts, serverSideEmit and fetchSockets between two servers; closing unsubscribes', async () => {
    const key = unique('sio');
    const pair = await ioPair(ctx, (pool) => {
      const pub = asNodeRedis(pool);
      return createClassicAdapter(pub, pub.duplicate(), { key, requestsTimeout: 10_000 });
    });
    try {
      await checkIoPair(pair);
    } finally {
      await pair.close();
    }
    expect(await ctx.numsub(`${key}-request#/#`)).toBe(0);
  });

  it('@socket.io/redis-adapter createShardedAdapter: the same over sharded pub/sub (SSUBSCRIBE/SPUBLISH)', async () => {
    const channelPrefix = unique('ssio');
    const pair = await ioPair(ctx, (pool) => {
      const pub = asNodeRedis(pool);
      return createShardedAdapter(pub, pub.duplicate(), { channelPrefix });
    });
    try {
      await checkIoPair(pair);
    } finally {
      await pair.close();
    }
  });

  for (const sharded of [false, true]) {
    it(`@socket.io/redis-streams-adapter${sharded ? ' (useShardedPubSub)' : ''}: broadcasts through XADD/XREAD BLOCK, serverSideEmit and fetchSockets over ${sharded ? 'sharded ' : ''}pub/sub`, async () => {
      const streamName = unique('sio-stream');
      const channelPrefix = unique('sio-ch');
      const pair = await ioPair(ctx, (pool) => createStreamsAdapter(asNodeRedis(pool), { streamName, channelPrefix, blockTimeInMs: 1000, useShardedPubSub: sharded }));
      try {
        await checkIoPair(pair, () => streamLive(pair.a, pair.b));
        // The broadcasts are entries of the stream.
        const entries = await asNodeRedis(ctx.pool()).xRange(streamName, '-', '+');
        expect(entries.length).toBeGreaterThanOrEqual(3);
      } finally {
        await pair.close();
      }
      if (!sharded) expect(await ctx.numsub(`${channelPrefix}#/#`)).toBe(0);
    });
  }
}

// -------------------------------------------------------------------------- rate-limit-redis

/** rate-limit-redis with express-rate-limit: 200, 200, 200, 429, through the facade and through `pool.call` unbound. */
export function rateLimitRedisFlows(ctx: FlowContext): void {
  for (const via of ['facade', 'pool.call'] as const) {
    it(`rate-limit-redis + express-rate-limit (sendCommand through ${via}): 200, 200, 200, 429, also after SCRIPT FLUSH`, async () => {
      const pool = ctx.pool();
      const client = asNodeRedis(pool);
      const sendCommand = via === 'facade' ? (...args: string[]) => client.sendCommand<never>(args) : (pool.call as (...args: string[]) => Promise<never>);
      const app = express();
      app.use(rateLimit({ windowMs: 60_000, limit: 3, standardHeaders: 'draft-8', legacyHeaders: false, store: new RateLimitStore({ sendCommand, prefix: `${unique('rl')}:` }) }));
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      const http = await listen(app);
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 2; i++) statuses.push((await fetch(http.url)).status);
        // The store keeps the scripts' SHA1s; after a flush it reloads on NOSCRIPT.
        await pool.call('SCRIPT', 'FLUSH');
        for (let i = 0; i < 2; i++) statuses.push((await fetch(http.url)).status);
        expect(statuses).toEqual([200, 200, 200, 429]);
      } finally {
        await http.close();
      }
    });
  }
}

/** Every flow above. */
export function allNodeRedisFlows(ctx: FlowContext): void {
  connectRedisFlows(ctx);
  rateLimiterFlexibleFlows(ctx);
  socketIoFlows(ctx);
  rateLimitRedisFlows(ctx);
}
