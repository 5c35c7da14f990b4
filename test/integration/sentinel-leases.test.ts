/**
 * Leases across a Sentinel failover: a lease borrowed before the switch must not keep writing
 * to the old master (whose acknowledged writes are lost once it is demoted), and a long-lived
 * subscriber must learn that its connection is gone so it can resubscribe on the new master.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, SentinelPool, UncertainWriteError, type FailoverEvent } from '../../src/index.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';
import { sameAddr } from '../support/sentinel-helpers.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
});

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('leases across a failover', () => {
  it('a lease in use stops taking commands when the pool moves, and its subscriber connection is closed', async () => {
    const from = pool.master();
    let failover: FailoverEvent | undefined;
    pool.once('failover', (e) => (failover = e));

    // A lease that writes in a loop until its connection stops being usable.
    let acksAfterSwitch = 0;
    let firstRefusal: unknown;
    const writer = pool.use(async (lease) => {
      for (let i = 0; ; i++) {
        try {
          await lease.incr('lease:counter');
          if (failover) acksAfterSwitch++;
        } catch (err) {
          firstRefusal = err;
          return i;
        }
      }
    });

    // A subscriber that waits for its lease's signal.
    let subscriberEnded: unknown;
    const subscriber = pool.use(async (lease) => {
      await lease.subscribe('lease:news', () => {});
      await new Promise<void>((resolve) => lease.signal.addEventListener('abort', () => resolve(), { once: true }));
      subscriberEnded = lease.signal.reason;
    });

    await waitFor(async () => Number(await topo.master.cli('PUBSUB', 'NUMSUB', 'lease:news').then((r) => r.split('\n')[1])) === 1, 'subscriber registered');
    await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName);
    await waitFor(() => failover !== undefined, 'failover event', 30_000);

    const writes = await writer;
    await subscriber;
    expect(writes).toBeGreaterThan(0);
    // The writer's command at the switch ended it: refused before it was sent, or, when it was
    // already in flight, cut as an uncertain write (the old node's late reply is never an ack)...
    expect(firstRefusal).toBeInstanceOf(ConnectionError);
    expect((firstRefusal as Error).message).toMatch(/was not sent|it may have executed/);
    expect((firstRefusal as Error).message).toMatch(/The pool moved from/);
    // ...so nothing was acknowledged after the switch.
    expect(acksAfterSwitch).toBe(0);
    expect(subscriberEnded).toBeInstanceOf(Error);
    expect(sameAddr(failover!.from, from)).toBe(true);

    // A new lease goes to the new master.
    const addr = await pool.use(async (lease) => {
      await lease.incr('lease:counter');
      return lease.address;
    });
    expect(sameAddr(addr, failover!.to)).toBe(true);
  });
});

describe('a lease with a transaction in flight when the master is paused and replaced', () => {
  it('its EXEC is never acknowledged by the old master after the switch: it ends as UncertainWriteError', async () => {
    const own = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
    const p = await SentinelPool.create(own.masterName, own.sentinelAddresses, { commandTimeout: 20_000 });
    try {
      const from = p.master();
      const oldMaster = own.handleFor(from)!;
      let switchedAt = 0;
      p.once('failover', () => (switchedAt = Date.now()));
      let settledAt = 0;
      // An idle exclusive connection ready, so the lease needs no handshake with a paused node.
      await p.use(async (lease) => lease.call('PING'));
      // The master stops answering; the transaction goes onto the wire to it.
      oldMaster.pause();
      const tx = p.use(async (lease) => lease.multi().set('lease:tx:a', '1').set('lease:tx:b', '2').exec())
        .then((v) => ({ ok: true as const, v }), (e: unknown) => ({ ok: false as const, e }))
        .finally(() => (settledAt = Date.now()));
      await waitFor(() => switchedAt > 0, 'the sentinels to fail over and the pool to switch', 30_000);
      oldMaster.resume(); // it would now answer EXEC, as a master about to be demoted
      const r = await tx;
      expect(r.ok).toBe(false);
      expect((r as { e: unknown }).e).toBeInstanceOf(UncertainWriteError);
      // It ended at the switch, not when the old node answered.
      expect(settledAt).toBeGreaterThanOrEqual(switchedAt);
      // The pool writes to the new master; the old one's late answers were never taken as acks.
      // (Idempotent: on a loaded machine the sentinels may switch once more while it is in flight,
      // and a write cut by a switch is, rightly, an UncertainWriteError unless it may be re-sent.)
      expect(await p.with({ idempotent: true }).set('lease:tx:after', 'v')).toBe('OK');
    } finally {
      if (own.dataNodes.some((n) => n.isPaused())) for (const n of own.dataNodes) if (n.isPaused()) n.resume();
      await p.close();
      await own.stop();
    }
  });
});
