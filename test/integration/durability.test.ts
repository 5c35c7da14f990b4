/**
 * Durable acknowledgements against real servers: a standalone master with two replicas (joined
 * with REPLICAOF, no sentinels), and a server without replicas. Replicas are kept from
 * confirming by pausing them (SIGSTOP): their kernel still takes the replication stream, but
 * they send no acknowledgement, so the master's WAIT answers 0.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DurabilityError, StandalonePool, TimeoutError, UncertainWriteError } from '../../src/index.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { calls, startReplicated, type Replicated } from '../support/replicated.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: Replicated;
let lone: StandaloneTopology;
const pools: StandalonePool[] = [];

async function create(url: string, options: Parameters<typeof StandalonePool.create>[1] = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(url, options);
  pools.push(p);
  return p;
}

const pauseReplicas = () => topo.replicas.forEach((r) => r.server.pause());
const master = () => topo.master.address;

beforeAll(async () => {
  [topo, lone] = await Promise.all([startReplicated(2), startStandalone()]);
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  for (const r of topo?.replicas ?? []) if (r.server.isPaused()) r.server.resume();
  await topo?.waitLinked();
});

afterAll(async () => {
  await Promise.all([topo?.stop(), lone?.stop()]);
});

describe('durability on a master with two replicas', () => {
  it('a write resolves once the replicas have it: every acknowledged key is on both replicas at that moment', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 2, timeout: 2000 } });
    const keys = Array.from({ length: 500 }, (_, i) => `dur:ok:${i}`);
    await Promise.all(keys.map((k, i) => pool.set(k, String(i))));
    for (const r of topo.replicas) {
      const got = await sendCommands(r.address, keys.map((k) => ['GET', k]));
      expect(got).toEqual(keys.map((_, i) => String(i)));
    }
    const st = pool.stats().durability;
    expect(st.confirmed).toBe(500);
    expect(st.durabilityErrors).toBe(0);
    // One WAIT per flush, not per write.
    expect(st.waits).toBeGreaterThanOrEqual(1);
    expect(st.waits).toBeLessThan(50);
    expect(st.waitTime.max).toBeGreaterThanOrEqual(st.waitTime.mean);
  });

  it('a pipeline gets one WAIT after the batch; a MULTI one after EXEC; a read-only MULTI and plain reads none', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 1, timeout: 2000 } });
    await pool.set('dur:warm', '1');
    const w0 = await calls(master(), 'wait');
    const p = pool.pipeline();
    for (let i = 0; i < 100; i++) p.set(`dur:pipe:${i}`, String(i)).get(`dur:pipe:${i}`);
    const res = await p.exec();
    expect(res.filter((r) => r === 'OK')).toHaveLength(100);
    expect(await calls(master(), 'wait')).toBe(w0 + 1);

    expect(await pool.multi().set('dur:tx', 'a').incr('dur:tx:n').exec()).toEqual(['OK', 1]);
    expect(await calls(master(), 'wait')).toBe(w0 + 2);
    expect(await pool.multi().get('dur:tx').get('dur:tx:n').exec()).toEqual(['a', '1']);
    expect(await pool.get('dur:tx')).toBe('a');
    expect(await calls(master(), 'wait')).toBe(w0 + 2);
  });

  it('replicas kept from confirming: writes reject with DurabilityError (applied on the master, never re-sent); reads are not held back', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 1, timeout: 300 } });
    await pool.set('dur:short:warm', '0');
    pauseReplicas();
    const sets0 = await calls(master(), 'set');
    let writeSettled = false;
    const write = pool.with({ idempotent: true }).set('dur:short', 'v').finally(() => { writeSettled = true; });
    // Sent in the same turn, on the same connection: answered before the WAIT, not after it.
    const read = await pool.get('dur:short:warm');
    expect(read).toBe('0');
    expect(writeSettled).toBe(false);

    const err = (await write.catch((e: unknown) => e)) as DurabilityError;
    expect(err).toBeInstanceOf(DurabilityError);
    expect(err.replicas).toBe(0);
    expect(err.required).toBe(1);
    expect(err.address).toEqual(master());
    expect(err.message).toMatch(new RegExp(`^SET ran on 127\\.0\\.0\\.1:${master().port}, but only 0 of 1 replicas confirmed it within 300 ms`));
    // Applied on the master, sent exactly once although it was marked idempotent.
    expect(await sendCommand(master(), ['GET', 'dur:short'])).toBe('v');
    expect(await calls(master(), 'set')).toBe(sets0 + 1);

    // A pipeline: each write entry is its DurabilityError, the reads their values.
    const res = await pool.pipeline().set('dur:short:p', '1').get('dur:short:warm').incr('dur:short:n').exec();
    expect(res[0]).toBeInstanceOf(DurabilityError);
    expect(res[1]).toBe('0');
    expect(res[2]).toBeInstanceOf(DurabilityError);
    // A transaction rejects as a whole; one WATCH-aborted writes nothing and needs no confirmation.
    await expect(pool.multi().set('dur:short:tx', '1').exec()).rejects.toBeInstanceOf(DurabilityError);
    const aborted = await pool.use(async (lease) => {
      await lease.call('WATCH', 'dur:short:watched');
      await sendCommand(master(), ['SET', 'dur:short:watched', 'changed']);
      return lease.multi().set('dur:short:watched', 'mine').exec();
    });
    expect(aborted).toBeNull();

    const st = pool.stats().durability;
    expect(st.durabilityErrors).toBe(4);
    expect(st.confirmed).toBe(1);
  });

  it('writes sent while a WAIT is in flight wait for the next one (one WAIT at a time per connection), and are never acknowledged early', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 1, timeout: 300 } });
    await pool.set('dur:next:warm', '1');
    const waits0 = pool.stats().durability.waits;
    pauseReplicas();
    const first = pool.set('dur:next:a', '1').catch((e: unknown) => e);
    // Two turns later the first WAIT is on the wire: these go behind it.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(pool.stats().durability.waits).toBe(waits0 + 1);
    const later = Array.from({ length: 5 }, (_, i) => pool.set(`dur:next:b${i}`, '1').catch((e: unknown) => e));
    const results = await Promise.all([first, ...later]);
    for (const r of results) expect(r).toBeInstanceOf(DurabilityError);
    // The five shared one WAIT, sent when the first answered.
    expect(pool.stats().durability.waits).toBe(waits0 + 2);
    expect(pool.stats().durability.durabilityErrors).toBe(6);
  });

  it('per call: with({ durability: false }) skips the WAIT; with({ durability }) turns it on for a pool without it', async () => {
    const plain = await create(topo.master.url);
    const durable = await create(topo.master.url, { durability: { replicas: 1, timeout: 300 } });
    pauseReplicas();
    expect(await durable.with({ durability: false }).set('dur:call:off', '1')).toBe('OK');
    expect(await plain.set('dur:call:plain', '1')).toBe('OK');
    const err = await plain.with({ durability: { replicas: 1, timeout: 200 } }).set('dur:call:on', '1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DurabilityError);
    expect((err as Error).message).toMatch(/within 200 ms/);
    expect(plain.stats().durability.durabilityErrors).toBe(1);
    expect(durable.stats().durability.waits).toBe(0);
  });

  it('the WAIT counts within the call deadline: a 300 ms call does not wait out a 10 s durability timeout', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 1, timeout: 10_000 } });
    await pool.set('dur:deadline:warm', '1');
    pauseReplicas();
    const sets0 = await calls(master(), 'set');
    const t0 = Date.now();
    const err = await pool.with({ timeout: 300 }).set('dur:deadline', '1').catch((e: unknown) => e);
    const took = Date.now() - t0;
    // The WAIT asked for at most the 300 ms left: DurabilityError if the server answered first,
    // TimeoutError (sent) if the deadline fired first. Either way, never re-sent.
    expect(err instanceof DurabilityError || (err instanceof TimeoutError && err.sent)).toBe(true);
    expect(took).toBeLessThan(5000);
    expect(await calls(master(), 'set')).toBe(sets0 + 1);
    // The connection is not stuck behind a 10 s WAIT.
    expect(await pool.with({ durability: false, timeout: 5000 }).get('dur:deadline')).toBe('1');
  });

  it('leases: a write waits for its WAIT, and a hand-written MULTI confirms at EXEC', async () => {
    const pool = await create(topo.master.url, { durability: { replicas: 2, timeout: 300 } });
    const ok = await pool.use(async (lease) => {
      await lease.set('dur:lease:a', '1');
      await lease.call('MULTI');
      await lease.set('dur:lease:b', '2');
      return lease.call('EXEC');
    });
    expect(ok).toEqual(['OK']);
    for (const r of topo.replicas) expect(await sendCommand(r.address, ['GET', 'dur:lease:b'])).toBe('2');
    pauseReplicas();
    const errs = await pool.use(async (lease) => {
      const a = await lease.set('dur:lease:c', '3').catch((e: unknown) => e);
      await lease.call('MULTI');
      await lease.set('dur:lease:d', '4');
      const b = await lease.call('EXEC').catch((e: unknown) => e);
      return [a, b];
    });
    expect(errs[0]).toBeInstanceOf(DurabilityError);
    expect(errs[1]).toBeInstanceOf(DurabilityError);
    expect(await sendCommand(master(), ['GET', 'dur:lease:d'])).toBe('4');
  });

  it('the connection lost before the WAIT answers: UncertainWriteError, not re-sent', async () => {
    // (Like any uncertain write, one marked idempotent would be sent again, with a WAIT of its own.)
    const pool = await create(topo.master.url, { durability: { replicas: 1, timeout: 20_000 }, clientName: 'dur-kill' });
    await pool.set('dur:kill:warm', '1');
    pauseReplicas();
    const sets0 = await calls(master(), 'set');
    const write = pool.set('dur:kill', 'v').catch((e: unknown) => e);
    // The SET ran; the lane now sits in WAIT on the server.
    await waitFor(async () => (await sendCommand(master(), ['GET', 'dur:kill'])) === 'v', 'the SET to run on the master');
    const list = String(await sendCommand(master(), ['CLIENT', 'LIST']));
    const id = /id=(\d+) [^\n]*name=dur-kill [^\n]*cmd=wait/.exec(list)?.[1];
    expect(id, list).toBeDefined();
    expect(await sendCommand(master(), ['CLIENT', 'KILL', 'ID', id!])).toBe(1);
    const err = (await write) as UncertainWriteError;
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect(err.message).toMatch(/^SET ran on 127\.0\.0\.1:\d+, but the connection closed before the WAIT confirming its replication answered/);
    expect(err.cause).toBeInstanceOf(Error);
    expect(await calls(master(), 'set')).toBe(sets0 + 1);
    expect(pool.stats().durability.uncertain).toBe(1);
  });
});

describe('durability and ACL', () => {
  it('a user denied WAIT: writes reject with DurabilityError whose cause is the NOPERM refusal', async () => {
    await topo.master.server.cli('ACL', 'SETUSER', 'nowait', 'on', '>nowait-pw', '~*', '+@all', '-wait');
    const pool = await create(topo.master.url, { username: 'nowait', password: 'nowait-pw', durability: { replicas: 1, timeout: 500 } });
    const err = (await pool.set('dur:acl', '1').catch((e: unknown) => e)) as DurabilityError;
    expect(err).toBeInstanceOf(DurabilityError);
    expect(err.replicas).toBe(0);
    expect((err.cause as { code?: string }).code).toBe('NOPERM');
    expect(err.message).toMatch(/ACL \+wait/);
    expect(await pool.get('dur:acl')).toBe('1');
  });
});

describe('durability on a server without replicas', () => {
  it('replicas: 1 rejects every write with a DurabilityError that says the master has no replicas', async () => {
    const pool = await create(lone.url, { durability: { replicas: 1, timeout: 100 } });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.set(`lone:${i}`, 'x').catch((e: unknown) => e)));
    for (const r of results) {
      expect(r).toBeInstanceOf(DurabilityError);
      expect((r as DurabilityError).replicas).toBe(0);
      expect((r as Error).message).toMatch(/connected_slaves/);
    }
    // Reads work, and the writes did run on the master.
    expect(await pool.get('lone:3')).toBe('x');
    expect(pool.stats().durability.durabilityErrors).toBe(20);
  });
});
