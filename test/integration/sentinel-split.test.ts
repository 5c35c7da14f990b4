/**
 * Five sentinels, split 2|3 as the client sees them: the fault proxy cuts the pool off from
 * three of the five (black-holed: no RST, nothing answers) while the two it still reaches run a
 * failover and name the promoted replica. Two voices of five are not a majority of the
 * sentinels the pool knows, whatever they say: writes are held (never sent to either node)
 * until the split heals and the pool hears a majority, then they go to the master that majority
 * names. Every acknowledged write is looked for there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueFullError, SentinelPool, TimeoutError, type FailoverEvent } from '../../src/index.js';
import { proxySentinel } from '../support/fault-proxy.js';
import { sendCommand } from '../support/mini-client.js';
import { fmt, missingOn, sameAddr, startWrites, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;

beforeAll(async () => {
  topo = await startSentinel({ replicas: 2, sentinels: 5, quorum: 3, downAfterMs: 1000, failoverTimeoutMs: 10_000 });
});

afterAll(async () => {
  await topo?.stop();
});

const paced = <T>(p: Promise<T>): Promise<T> => p.then((v) => new Promise<T>((r) => setTimeout(() => r(v), 1)));

describe('five sentinels, the client on the side of two', () => {
  it('two of five naming the promoted replica do not move the pool; after the split heals the majority does, with 0 acknowledged writes lost', async () => {
    const px = await proxySentinel(topo);
    const pool = await SentinelPool.create(topo.masterName, px.sentinelAddresses, { natMap: px.natMap });
    try {
      await waitFor(() => pool.stats().sentinels.filter((s) => s.connected).length === 5 && pool.stats().watchedReplicas.length === 2, 'five subscriber loops and two watched replicas');
      const events: FailoverEvent[] = [];
      pool.on('failover', (e) => events.push(e));
      const load = startWrites((k, v) => paced(pool.with({ idempotent: true }).set(k, v)), 10, 'split');
      await load.waitForAcks(2000, 'writes before the split');
      const fromReal = px.toReal(pool.master());
      const [near1, , ...far] = topo.sentinels;
      for (const s of far) px.of(s!).blackhole();

      // The side the pool still reaches runs a failover; all five sentinels really adopt it.
      expect(await sendCommand(near1!.address, ['SENTINEL', 'FAILOVER', topo.masterName])).toBe('OK');
      const toReal = await topo.waitForNewMaster(fromReal, 45_000);
      const committedAt = Date.now();
      // The pool has seen the promotion (its watch, the near sentinels' messages) but only two
      // voices of five: for 3 s it neither switches nor acknowledges a write anywhere.
      const acksAtCommit = load.acks.length;
      await waitFor(() => Date.now() - committedAt >= 3000 || !sameAddr(px.toReal(pool.master()), fromReal), 'three seconds of the split', 10_000);
      expect(sameAddr(px.toReal(pool.master()), fromReal)).toBe(true);
      expect(events).toEqual([]);
      expect(pool.stats().fenced).toBe(true);
      expect(load.acks.length).toBe(acksAtCommit);

      await px.healAll();
      const healedAt = Date.now();
      await waitFor(() => events.length > 0, 'the failover event once the pool hears a majority', 30_000);
      expect(sameAddr(px.toReal(events[0]!.to), toReal)).toBe(true);
      expect(events[0]!.confirmedBy).toBeGreaterThanOrEqual(3);
      await load.waitForAcks(1000, 'writes after the heal');
      const final = await waitSettled(topo, 2, 60_000);
      await load.stop();
      expect(sameAddr(final, toReal)).toBe(true);
      expect(load.acks.filter((a) => a.at > committedAt && a.at < healedAt)).toEqual([]);
      const lost = await missingOn(final, load.acks);
      // Nothing was sent during the split: every call that failed before the heal says so. (A write
      // held almost to its deadline and sent after the heal may time out there: it says it may
      // have executed, and is not counted as acknowledged.)
      const uncertain = load.failures.filter((f) => f.at < healedAt && !(f.error instanceof QueueFullError || (f.error instanceof TimeoutError && !f.error.sent)));
      console.log(
        `split 2|3: ${load.acks.length} acknowledged, ${lost.length} lost on ${fmt(final)}; ${load.failures.length} failed (${uncertain.length} uncertain before the heal); ` +
          `event confirmedBy ${events[0]!.confirmedBy}, epoch ${events[0]!.epoch}, held ${events[0]!.heldMs} ms, ${events[0]!.at - healedAt} ms after the heal`,
      );
      expect(lost).toEqual([]);
      expect(uncertain.map((f) => String(f.error))).toEqual([]);
    } finally {
      await pool.close();
      await px.close();
    }
  }, 180_000);

  it('sentinels listed by host name (each then known under two addresses), two of five paused: the three that adopt a failover are a majority of five, each counted once', async () => {
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses.map((a) => `localhost:${a.port}`));
    const paused = [topo.sentinels[0]!, topo.sentinels[1]!];
    try {
      // The sentinel asked lists the four others by IP: nine addresses for five sentinels.
      await waitFor(() => pool.stats().sentinels.length >= 9, 'the sentinels discovered under their announced IPs as well');
      await waitSettled(topo, 2, 60_000);
      const events: FailoverEvent[] = [];
      pool.on('failover', (e) => events.push(e));
      const from = pool.master();
      for (const s of paused) s.pause();
      expect(await sendCommand(topo.sentinels[3]!.address, ['SENTINEL', 'FAILOVER', topo.masterName])).toBe('OK');
      const to = await topo.waitForNewMaster(from, 45_000);
      // Counted by address, 9 known and 5 needed: the three that answer (under six addresses)
      // would have to count twice. By run id: 3 of 5.
      await waitFor(() => events.length > 0, 'the failover event', 30_000);
      expect(sameAddr(events[0]!.to, to)).toBe(true);
      expect(events[0]!.confirmedBy).toBe(3);
      expect(await pool.with({ idempotent: true }).set('split:byname', '1')).toBe('OK');
      expect(await sendCommand(to, ['GET', 'split:byname'])).toBe('1');
    } finally {
      for (const s of paused) if (s.isPaused()) s.resume();
      await pool.close();
    }
  }, 120_000);
});
