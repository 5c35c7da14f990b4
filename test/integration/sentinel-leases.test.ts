/**
 * Leases across a Sentinel failover: a lease borrowed before the switch must not keep writing
 * to the old master (whose acknowledged writes are lost once it is demoted), and a long-lived
 * subscriber must learn that its connection is gone so it can resubscribe on the new master.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, SentinelPool, type FailoverEvent } from '../../src/index.js';
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
    // The writer's next command after the switch was refused before it was sent...
    expect(firstRefusal).toBeInstanceOf(ConnectionError);
    expect((firstRefusal as Error).message).toMatch(/was not sent/);
    // ...so at most the one command already in flight at the switch was acknowledged after it.
    expect(acksAfterSwitch).toBeLessThanOrEqual(1);
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
