/**
 * Promotions Sentinel does not keep, with real sentinels, under write load (issue "Only the
 * master the sentinels keep"). The failover leader goes silent between promoting a replica and
 * broadcasting the new configuration:
 * - it is paused (SIGSTOP), or killed, the moment the replica is promoted: the other sentinels
 *   never learn of the promotion, keep the old master and turn the replica back;
 * - the old master is killed too, and the other replica is preferred: the others run a failover
 *   of their own and promote that one.
 * Every acknowledged write is then looked for on the master the sentinels settle on. A pool
 * with `failoverCommit: 'majority'` (the default) must lose none; one with `'promotion'` runs
 * beside it as the witness that the promotion really was undone (its losses are printed).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { QueueFullError, SentinelPool, TimeoutError, type FailoverEvent, type SentinelOptions } from '../../src/index.js';
import { sendCommand } from '../support/mini-client.js';
import { onPromotion } from '../support/promotion-hook.js';
import { failoverThrough, fmt, missingOn, paced, reviveSentinels, roleOf, sameAddr, startWrites, waitSettled, type WriteLoad } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type NodeAddress, type ServerHandle, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
const pools: SentinelPool[] = [];
const WRITERS = 10;

beforeAll(async () => {
  // failover-timeout 10 s: long enough that a resumed leader cannot retry within a round's checks,
  // short enough that the others may run a failover of their own after it (2x the timeout).
  topo = await startSentinel({ replicas: 2, sentinels: 3, quorum: 2, downAfterMs: 1000, failoverTimeoutMs: 10_000 });
});

beforeEach(async () => {
  await waitSettled(topo, 2, 90_000);
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  await reviveSentinels(topo);
  for (const n of topo?.dataNodes ?? []) {
    if (!n.isAlive()) await n.restart();
    await n.cli('CONFIG', 'SET', 'replica-priority', '100').catch(() => '');
  }
});

afterAll(async () => {
  await topo?.stop();
});

async function create(options: SentinelOptions = {}): Promise<SentinelPool> {
  const p = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, options);
  pools.push(p);
  await waitFor(() => p.stats().sentinels.filter((s) => s.connected).length === 3 && p.stats().watchedReplicas.length === 2, 'three subscriber loops and two watched replicas');
  return p;
}

/** What every sentinel still answering names as the master. */
async function namedByOthers(except: ServerHandle): Promise<NodeAddress[]> {
  const out: NodeAddress[] = [];
  for (const s of topo.sentinels) {
    if (s === except || !s.isAlive() || s.isPaused()) continue;
    const r = await sendCommand(s.address, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', topo.masterName]) as string[];
    out.push({ host: String(r[0]), port: Number(r[1]) });
  }
  return out;
}

interface Witness {
  pool: SentinelPool;
  load: WriteLoad;
  failovers: FailoverEvent[];
  aborts: string[];
}

function witness(pool: SentinelPool, tag: string): Witness {
  const w: Witness = { pool, load: startWrites((k, v) => paced(pool.with({ idempotent: true }).set(k, v)), WRITERS, tag), failovers: [], aborts: [] };
  pool.on('failover', (e) => w.failovers.push(e));
  pool.on('failover-abort', (e) => w.aborts.push(e.reason));
  return w;
}

/** Every failure is one the pool proves was never sent: nothing uncertain, nothing acknowledged-then-lost. */
function expectAllNotSent(w: Witness): void {
  const uncertain = w.load.failures.filter((f) => !(f.error instanceof QueueFullError || (f.error instanceof TimeoutError && !f.error.sent)));
  expect(uncertain.map((f) => `${(f.error as Error).name}: ${(f.error as Error).message}`).slice(0, 3)).toEqual([]);
}

interface Round {
  from: NodeAddress;
  promoted: NodeAddress;
  final: NodeAddress;
  majority: Witness;
  fast: Witness;
  lost: number;
  fastLost: number;
}

/**
 * One round: both pools write; `leader` runs SENTINEL FAILOVER and `silence` is applied to it
 * the moment a replica is promoted; `then` runs after that (the old master's fate); the round
 * ends when `outcome` says the others have decided, and the topology has settled.
 */
async function round(tag: string, leader: ServerHandle, silence: (s: ServerHandle) => void, then: (promoted: NodeAddress, from: NodeAddress) => Promise<void>, outcome: (promoted: NodeAddress, from: NodeAddress) => Promise<boolean>): Promise<Round> {
  const majority = await create();
  const fast = await create({ failoverCommit: 'promotion' });
  await majority.call('FLUSHALL');
  const m = witness(majority, `${tag}-majority`);
  const f = witness(fast, `${tag}-fast`);
  await m.load.waitForAcks(2000, 'writes before the fault');
  await f.load.waitForAcks(2000, 'writes before the fault');
  const from = majority.master();
  const hook = await onPromotion(topo.replicas.map((r) => r.address).concat(topo.master.address).filter((a) => !sameAddr(a, from)), () => silence(leader));
  let promoted: NodeAddress;
  try {
    await failoverThrough(topo, leader.address);
    promoted = (await Promise.race([hook.fired, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no promotion within 30 s')), 30_000).unref())])).replica;
  } finally {
    hook.stop();
  }
  await then(promoted, from);
  await waitFor(() => outcome(promoted, from), 'the other sentinels to decide', 60_000, 100);
  // Writes flow again through the majority pool, to the master the others named.
  await m.load.waitForAcks(1000, 'majority-pool writes after the others decided', 40_000);
  if (leader.isPaused()) leader.resume();
  if (!leader.isAlive()) await leader.restart();
  for (const n of topo.dataNodes) if (!n.isAlive()) await n.restart();
  const final = await waitSettled(topo, 2, 90_000);
  await m.load.waitForAcks(500, 'writes after the topology settled');
  await Promise.all([m.load.stop(), f.load.stop()]);
  const lost = (await missingOn(final, m.load.acks)).length;
  const fastLost = (await missingOn(final, f.load.acks)).length;
  console.log(
    `${tag}: promoted ${fmt(promoted)}, settled on ${fmt(final)} (old ${fmt(from)}); majority pool: ${m.load.acks.length} acknowledged, ${lost} lost, ` +
      `${m.load.failures.length} refused (not sent), events ${m.failovers.map((e) => `${fmt(e.from)}->${fmt(e.to)} epoch ${e.epoch} confirmedBy ${e.confirmedBy} held ${e.heldMs} ms`).join('; ') || 'none'}, aborts ${m.aborts.length}; ` +
      `promotion pool: ${f.load.acks.length} acknowledged, ${fastLost} lost, ${f.failovers.length} failover events`,
  );
  return { from, promoted, final, majority: m, fast: f, lost, fastLost };
}

/** The others kept the old master and turned the promoted replica back. */
const rolledBack = async (promoted: NodeAddress, from: NodeAddress, leader: ServerHandle) => {
  const named = await namedByOthers(leader);
  return named.length > 0 && named.every((a) => sameAddr(a, from)) && (await roleOf(promoted).catch(() => '')) === 'slave';
};

describe("a promotion the sentinels do not keep (failoverCommit 'majority')", () => {
  it('the leader paused right after it promotes: the others keep the old master, and the pool acknowledges nothing on the promoted replica', async () => {
    const leader = topo.sentinels[0]!;
    const r = await round('paused-leader', leader, (s) => s.pause(), async () => {}, (p, from) => rolledBack(p, from, leader));
    expect(sameAddr(r.final, r.from)).toBe(true);
    expect(r.lost).toBe(0);
    expect(r.majority.failovers).toEqual([]);
    expect(sameAddr(r.majority.pool.master(), r.from)).toBe(true);
    expect(r.majority.aborts.some((a) => /was not kept by the sentinels/.test(a))).toBe(true);
    expectAllNotSent(r.majority);
    // The 'promotion' pool switched on the promotion itself (no sentinel named it), and its
    // switch back to the master the sentinels kept is a failover event too.
    expect(r.fast.failovers.length).toBeGreaterThanOrEqual(2);
    expect(r.fast.failovers[0]!.confirmedBy).toBe(0);
    expect(sameAddr(r.fast.failovers[0]!.to, r.promoted)).toBe(true);
    expect(sameAddr(r.fast.failovers.at(-1)!.to, r.from)).toBe(true);
  }, 240_000);

  it('the leader killed right after it promotes: the same, 0 acknowledged writes lost', async () => {
    const leader = topo.sentinels[1]!;
    const r = await round('killed-leader', leader, (s) => void s.kill('SIGKILL'), async () => {}, (p, from) => rolledBack(p, from, leader));
    expect(sameAddr(r.final, r.from)).toBe(true);
    expect(r.lost).toBe(0);
    expect(r.majority.failovers).toEqual([]);
    expectAllNotSent(r.majority);
  }, 240_000);

  it('the old master killed and the leader stopped after promoting, the other replica preferred: the others promote it, and the pool goes there, never to the first', async () => {
    const leader = topo.sentinels[2]!;
    const r = await round('other-promoted', leader, (s) => s.pause(), async (promoted, from) => {
      // The other replica is preferred from now on, and the old master dies.
      const other = topo.dataNodes.find((n) => !sameAddr(n.address, promoted) && !sameAddr(n.address, from))!;
      await other.cli('CONFIG', 'SET', 'replica-priority', '1');
      await topo.handleFor(from)!.kill('SIGKILL');
    }, async (promoted, from) => {
      const named = await namedByOthers(leader);
      return named.length === 2 && named.every((a) => sameAddr(a, named[0]!)) && !sameAddr(named[0]!, from) && (await roleOf(named[0]!).catch(() => '')) === 'master';
    });
    expect(sameAddr(r.final, r.promoted)).toBe(false);
    expect(r.lost).toBe(0);
    // One switch, to the master the others committed to, with the votes that committed it.
    expect(r.majority.failovers).toHaveLength(1);
    expect(sameAddr(r.majority.failovers[0]!.to, r.final)).toBe(true);
    expect(r.majority.failovers[0]!.confirmedBy).toBeGreaterThanOrEqual(2);
    expect(r.majority.failovers[0]!.epoch).toBeGreaterThan(0);
  }, 240_000);
});
