/**
 * `redis-ha-pool/node-redis` on a SentinelPool (1 master, 2 replicas, 3 sentinels): every
 * library flow (connect-redis, rate-limiter-flexible, the Socket.IO classic, sharded and streams
 * adapters, rate-limit-redis), then `SENTINEL FAILOVER` under them: a session written before it
 * is read after it, and Socket.IO broadcasts sent after it reach the other server through the
 * classic and the sharded adapter (both servers resubscribed on the new master by themselves).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter as createClassicAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import { SentinelPool } from '../../src/index.js';
import { asNodeRedis } from '../../src/integrations/node-redis.js';
import { sendCommand } from '../support/mini-client.js';
import { allNodeRedisFlows, collect, CookieJar, ioPair, sessionApp, unique, type FlowContext } from '../support/node-redis-flows.js';
import { fmt, sameAddr, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: SentinelTopology;
let pool: SentinelPool;

const create = (): Promise<SentinelPool> => SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  pool = await create();
}, 90_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function numsub(kind: 'NUMSUB' | 'SHARDNUMSUB', channel: string): Promise<number> {
  let n = 0;
  for (const node of topo.dataNodes) if (node.isAlive()) n += Number(((await sendCommand(node.address, ['PUBSUB', kind, channel])) as unknown[])[1]);
  return n;
}

const ctx: FlowContext = { pool: () => pool, createPool: create, numsub: (ch) => numsub('NUMSUB', ch) };

describe('the libraries on a SentinelPool', () => {
  allNodeRedisFlows(ctx);
});

describe('through SENTINEL FAILOVER', () => {
  it.skipIf(!server.has('sharded-pubsub'))(`a session written before the failover is read after it; broadcasts after it reach the other Socket.IO server (classic and sharded adapters) ${server.needs('sharded-pubsub')}`, async () => {
    await waitSettled(topo, 2);
    const app = await sessionApp(asNodeRedis(pool), `${unique('fo-sess')}:`);
    const key = unique('fo-sio');
    const channelPrefix = unique('fo-ssio');
    const classic = await ioPair(ctx, (p) => {
      const pub = asNodeRedis(p);
      return createClassicAdapter(pub, pub.duplicate(), { key, requestsTimeout: 10_000 });
    });
    const sharded = await ioPair(ctx, (p) => {
      const pub = asNodeRedis(p);
      return createShardedAdapter(pub, pub.duplicate(), { channelPrefix });
    });
    try {
      const jar = new CookieJar();
      expect(await (await jar.fetch(`${app.url}/login/grace`)).text()).toBe('ok');
      expect(await (await jar.fetch(`${app.url}/me`)).json()).toEqual({ user: 'grace' });

      const from = pool.master();
      const pools = [pool, ...classic.pools, ...sharded.pools] as SentinelPool[];
      expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
      await waitFor(() => pools.every((p) => !sameAddr(p.master(), from)), 'every pool to follow the failover', 30_000);
      const to = pool.master();
      console.log(`node-redis facade through SENTINEL FAILOVER ${fmt(from)} -> ${fmt(to)}`);

      // The session written on the old master is read from the new one.
      expect(await (await jar.fetch(`${app.url}/me`)).json()).toEqual({ user: 'grace' });

      // Both servers of each pair resubscribed on the new master by themselves: the adapters,
      // which count servers through the new master, see two again.
      for (const pair of [classic, sharded]) {
        await waitFor(async () => (await pair.a.io.of('/').adapter.serverCount()) === 2, 'both servers subscribed on the new master', 30_000);
      }
      expect(Number(((await sendCommand(to, ['PUBSUB', 'NUMSUB', `${key}-request#/#`])) as unknown[])[1])).toBe(2);
      expect(Number(((await sendCommand(to, ['PUBSUB', 'SHARDNUMSUB', `${channelPrefix}#/#`])) as unknown[])[1])).toBe(2);
      for (const pair of [classic, sharded]) {
        const got = collect(pair.b.client, 'after');
        for (let i = 0; i < 5; i++) pair.a.io.to(pair.room).emit('after', i);
        await waitFor(() => got.length === 5, 'every broadcast sent after the failover', 20_000);
        expect(got.map((m) => m[0])).toEqual([0, 1, 2, 3, 4]);
        expect((await pair.a.io.fetchSockets()).map((s) => s.id).sort()).toEqual([pair.a.client.id, pair.b.client.id].sort());
      }
    } finally {
      await classic.close();
      await sharded.close();
      await app.close();
    }
  });
});
