/**
 * `redis-ha-pool/bullmq` on a StandalonePool against a real redis-server: BullMQ's Queue,
 * Worker, QueueEvents and FlowProducer through `asBullMQ(pool)` (see test/support/bullmq-flows.ts),
 * and the handle's own contract: it never owns the pool, a closed pool rejects every call,
 * bad options fail with a TypeError, and the trap of handing BullMQ the pool itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { PoolClosedError, StandalonePool } from '../../src/index.js';
import { asBullMQ } from '../../src/integrations/bullmq.js';
import { bullmqFlows } from '../support/bullmq-flows.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
let pool: StandalonePool;

beforeAll(async () => {
  topo = await startStandalone();
  pool = await StandalonePool.create(topo.url);
});
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('asBullMQ on a StandalonePool', () => {
  bullmqFlows(() => pool, 'bull');

  it('quit() and disconnect() end the handle only; the pool and other handles go on', async () => {
    const root = asBullMQ(pool);
    const dup = root.duplicate({ connectionName: 'ends-alone' });
    await dup.connect();
    expect(await topo.server.cli('CLIENT', 'LIST')).toContain('name=ends-alone');
    await dup.quit();
    expect(dup.status).toBe('end');
    expect(await root.get('nothing')).toBeNull();
    expect(await pool.call('PING')).toBe('PONG');
    expect(await topo.server.cli('CLIENT', 'LIST')).not.toContain('name=ends-alone');
    // BullMQ reconnects a disconnected handle with connect().
    const blocking = root.duplicate();
    await blocking.connect();
    const popped = blocking.bzpopmin('bq:z', 10);
    blocking.disconnect();
    expect(await popped).toBeNull();
    await blocking.connect();
    await pool.call('ZADD', 'bq:z', 1, 'm');
    expect(await blocking.bzpopmin('bq:z', 10)).toEqual(['bq:z', 'm', '1']);
    await blocking.quit();
  });

  it('after pool.close() every handle call rejects with PoolClosedError, a blocked one included', async () => {
    const p = await StandalonePool.create(topo.url);
    const h = asBullMQ(p);
    const dup = h.duplicate();
    await dup.connect();
    const blocked = dup.bzpopmin('bq:never', 0);
    await expect.poll(async () => /blocked_clients:1\b/.test(await topo.server.cli('INFO', 'clients'))).toBe(true);
    await p.close();
    await expect(blocked).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.get('k')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.runCommand('nope', [])).rejects.toThrow(/unknown command/);
    await expect(dup.connect()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.multi().hgetall('k').exec()).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('refuses options it does not handle with a TypeError naming them', async () => {
    expect(() => asBullMQ({} as never)).toThrow(/asBullMQ\(pool\) needs a redis-ha-pool pool/);
    expect(() => asBullMQ(pool, { keyPrefix: 'x' } as never)).toThrow(/Unknown option asBullMQ\.keyPrefix/);
    const h = asBullMQ(pool);
    expect(() => h.duplicate({ host: 'x' } as never)).toThrow(/asBullMQ: duplicate has no option "host"/);
    await expect(h.set('k', 'v', { NX: true } as never)).rejects.toThrow(/asBullMQ: set has no option "NX"/);
    await expect(h.xread([{ key: 'k', id: '0' }], { NOACK: true } as never)).rejects.toThrow(/asBullMQ: xread has no option "NOACK"/);
    expect(await h.get('k')).toBeNull();
  });

  it('the trap: BullMQ handed the pool itself (not asBullMQ) silently dials 127.0.0.1:6379 instead', async () => {
    // BullMQ reads anything without connect/disconnect/duplicate as ioredis *options*: the pool's
    // fields become options and ioredis connects to its default address, not to our server.
    const queue = new Queue('trap', { connection: pool as never });
    const errors: Error[] = [];
    queue.on('error', (e) => errors.push(e));
    let ready = false;
    queue.waitUntilReady().then(() => (ready = true), () => {});
    await waitFor(() => errors.length > 0 || ready, 'the queue to connect somewhere or fail');
    if (ready) {
      // Something answers on 6379 on this machine: the job goes there, never to our server.
      await queue.add('lost', {});
      expect(await topo.server.cli('EXISTS', 'bull:trap:id')).toBe('0');
    } else {
      expect(errors[0]!.message).toMatch(/ECONNREFUSED 127\.0\.0\.1:6379/);
    }
    await queue.close().catch(() => {});
  });
});
