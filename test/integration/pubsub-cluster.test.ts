/**
 * Pub/sub in a real 3+3 Redis Cluster (7.0): sharded channels across slots, plain channels,
 * keyspace notifications on every master, and a sharded subscription followed through a
 * `CLUSTER FAILOVER` of its shard, a live migration of its slot and a SIGKILL of its master,
 * while a publisher sends 1,000 sequenced SPUBLISHes/s. In each: a `resubscribed` event, every
 * message published after it arrives exactly once and in order, no duplicate subscriptions
 * on the servers (PUBSUB SHARDNUMSUB), and close() leaves none.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClusterPool, keySlot, type Subscription } from '../../src/index.js';
import { ReceivedLog, startPublisher } from '../support/pubsub-check.js';
import { failoverTo, migrateSlot, replicaOf } from '../support/cluster-ops.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: ClusterTopology;
const pools: ClusterPool[] = [];

async function create(): Promise<ClusterPool> {
  const p = await ClusterPool.create(topo.seeds, { commandTimeout: 15_000 });
  pools.push(p);
  return p;
}

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 1, config: { 'notify-keyspace-events': 'KEA' } });
}, 120_000);

beforeEach(async () => {
  await topo.waitForClusterOk(60_000);
}, 70_000);

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await topo?.stop();
});

async function shardNumsub(node: ServerHandle, channel: string): Promise<number> {
  const out = await node.cli('PUBSUB', 'SHARDNUMSUB', channel);
  return Number(out.split('\n')[1]);
}

/** Sum over every alive node: a sharded channel subscribed more than once anywhere shows up here. */
async function shardNumsubEverywhere(channel: string): Promise<number> {
  let n = 0;
  for (const node of topo.nodes) if (node.isAlive() && !node.isPaused()) n += await shardNumsub(node, channel);
  return n;
}

interface Run {
  events: Array<{ channels: string[]; reason: string; gapMs: number }>;
  log: ReceivedLog;
  publisher: ReturnType<typeof startPublisher>;
  after: number;
  sub: Subscription;
}

async function runThrough(channel: string, fault: () => Promise<void>): Promise<Run> {
  const subscriber = await create();
  const publisherPool = await create();
  const log = new ReceivedLog();
  const sub = await subscriber.ssubscribe(channel, log.listener);
  const run: Run = { events: [], log, publisher: startPublisher((m) => publisherPool.spublish(channel, m)), after: -1, sub };
  sub.on('resubscribed', (e) => {
    run.events.push(e);
    run.after = run.publisher.next;
  });
  await waitFor(() => log.seqs.length > 200, 'messages before the fault');
  await fault();
  await waitFor(() => run.events.length >= 1, 'resubscribed', 30_000);
  await waitFor(() => log.seqs.length > 0 && log.seqs.at(-1)! > run.after + 300, 'messages after the resubscribe', 30_000);
  await run.publisher.stop();
  await log.waitComplete(run.after, run.publisher.acknowledged);
  expect(run.log.missingFrom(run.after, run.publisher.acknowledged)).toEqual([]);
  expect(run.log.disorder()).toEqual([]);
  expect(await shardNumsubEverywhere(channel)).toBe(1);
  return run;
}

describe('pub/sub in a cluster', () => {
  it.skipIf(!server.has('sharded-pubsub'))(`ssubscribe across slots: one SSUBSCRIBE per slot on its owner; spublish and publish deliver ${server.needs('sharded-pubsub')}`, async () => {
    const pool = await create();
    const channels = ['{a}news', '{b}news', '{c}news', '{d}news', '{a}sport'];
    const got: string[] = [];
    const sub = await pool.ssubscribe(channels, (m, c) => got.push(`${c}=${String(m)}`));
    for (const c of channels) {
      const owner = await topo.nodeForSlot(keySlot(c));
      expect(await shardNumsub(owner, c), c).toBe(1);
      expect(await shardNumsubEverywhere(c), c).toBe(1);
    }
    for (const c of channels) expect(await pool.spublish(c, 'x')).toBe(1);
    await waitFor(() => got.length === channels.length, 'every sharded message');
    expect(got.sort()).toEqual(channels.map((c) => `${c}=x`).sort());

    const plain: string[] = [];
    const psub = await pool.subscribe('plain-ch', (m) => plain.push(String(m)));
    // In a cluster PUBLISH counts only the receiving node's subscribers, so the count says
    // nothing here; the message reaches the subscriber wherever it is.
    await pool.publish('plain-ch', 'hello');
    await waitFor(() => plain.length === 1, 'the plain message');
    await psub.close();
    await sub.close();
    for (const c of channels) expect(await shardNumsubEverywhere(c)).toBe(0);
    expect(pool.stats().pubsub.connections).toBe(0);
  });

  it('keyspace notifications are subscribed on every master', async () => {
    const pool = await create();
    const events: string[] = [];
    const sub = await pool.psubscribe('__keyevent@0__:set', (m) => events.push(String(m)));
    const keys = ['{a}k', '{b}k', '{c}k', '{d}k', '{e}k', '{f}k'];
    for (const k of keys) await pool.set(k, '1');
    await waitFor(() => events.length === keys.length, 'a set event from every shard');
    expect(events.sort()).toEqual([...keys].sort());
    expect(pool.stats().pubsub.connections).toBe(3);
    await sub.close();
  });

  it('ssubscribe with bad input: TypeError at once', async () => {
    const pool = await create();
    await expect(pool.ssubscribe([])).rejects.toThrow(TypeError);
    await expect(pool.ssubscribe('x', 42 as never)).rejects.toThrow(/listener must be a function/);
  });

  it.skipIf(!server.has('sharded-pubsub'))(`CLUSTER FAILOVER of the shard owning a sharded channel: followed to the new master ${server.needs('sharded-pubsub')}`, async () => {
    const channel = '{fo}seq';
    const owner = await topo.nodeForSlot(keySlot(channel));
    const replica = await replicaOf(topo, owner);
    const run = await runThrough(channel, () => failoverTo(topo, replica));
    console.log(`CLUSTER FAILOVER ${owner.port} -> ${replica.port}: ${run.events.map((e) => `${e.reason} gapMs ${e.gapMs}`).join(', ')}; ${run.publisher.acknowledged.length} published, ${run.log.seqs.length} received`);
    expect(await shardNumsub(replica, channel)).toBe(1);
  });

  it.skipIf(!server.has('sharded-pubsub'))(`live migration of the channel slot: followed to the new owner ${server.needs('sharded-pubsub')}`, async () => {
    const channel = '{mig}seq';
    const slot = keySlot(channel);
    const source = await topo.nodeForSlot(slot);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    const run = await runThrough(channel, () => migrateSlot(topo, slot, source, target));
    console.log(`migration of slot ${slot} ${source.port} -> ${target.port}: ${run.events.map((e) => `${e.reason} gapMs ${e.gapMs}`).join(', ')}`);
    expect(await shardNumsub(target, channel)).toBe(1);
  });

  it.skipIf(!server.has('sharded-pubsub'))(`SIGKILL of the shard master: followed to the promoted replica ${server.needs('sharded-pubsub')}`, async () => {
    const channel = '{kill}seq';
    const owner = await topo.nodeForSlot(keySlot(channel));
    const replica = await replicaOf(topo, owner);
    const run = await runThrough(channel, () => owner.kill('SIGKILL'));
    console.log(`SIGKILL ${owner.port} (replica ${replica.port}): ${run.events.map((e) => `${e.reason} gapMs ${e.gapMs}`).join(', ')}`);
    expect(await shardNumsub(replica, channel)).toBe(1);
    await owner.restart();
  });
});
