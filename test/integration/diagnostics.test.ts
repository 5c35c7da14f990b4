/**
 * node:diagnostics_channel, as an APM agent sees it: a subscriber on `redis-ha-pool:command`
 * and the plain channels, against real servers (standalone, Sentinel, Cluster). Every command
 * of a pipeline, a Sentinel failover, a cluster MOVED from a live slot reassignment,
 * connect/close, exclusive-connection waits, and never an argument value.
 */
import dc from 'node:diagnostics_channel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterPool, DIAGNOSTICS_CHANNELS, keySlot, RedisError, SentinelPool, StandalonePool, TimeoutError,
  type AcquireDiagnostic, type CloseDiagnostic, type CommandTraceContext, type ConnectDiagnostic, type FailoverDiagnostic,
  type RedirectDiagnostic, type TopologyDiagnostic,
} from '../../src/index.js';
import { migrateSlot } from '../support/cluster-ops.js';
import { startCluster, startSentinel, startStandalone, waitFor, type ClusterTopology, type SentinelTopology, type StandaloneTopology } from '../support/topology.js';

type Phase = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error';
interface Traced {
  phase: Phase;
  ctx: CommandTraceContext;
  /** A copy of the context as it was when this phase was published. */
  seen: Record<string, unknown>;
}

/** Everything the library publishes while it is attached. */
class Recorder {
  readonly commands: Traced[] = [];
  readonly plain = new Map<string, unknown[]>();
  private readonly undo: Array<() => void> = [];

  constructor() {
    const tc = dc.tracingChannel<object, CommandTraceContext>(DIAGNOSTICS_CHANNELS.command);
    const on = (phase: Phase) => (ctx: CommandTraceContext) => this.commands.push({ phase, ctx, seen: { ...ctx } });
    const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') };
    tc.subscribe(handlers);
    this.undo.push(() => tc.unsubscribe(handlers));
    for (const [key, name] of Object.entries(DIAGNOSTICS_CHANNELS)) {
      if (key === 'command') continue;
      const list: unknown[] = [];
      this.plain.set(name, list);
      const fn = (msg: unknown) => void list.push(msg);
      dc.subscribe(name, fn);
      this.undo.push(() => dc.unsubscribe(name, fn));
    }
  }

  of<T>(name: string): T[] {
    return this.plain.get(name) as T[];
  }

  /** Contexts (one per traced send) whose start was seen, in start order. */
  started(filter: (c: CommandTraceContext) => boolean = () => true): CommandTraceContext[] {
    return this.commands.filter((t) => t.phase === 'start' && filter(t.ctx)).map((t) => t.ctx);
  }

  phases(ctx: CommandTraceContext): Phase[] {
    return this.commands.filter((t) => t.ctx === ctx).map((t) => t.phase);
  }

  /** Every payload as text, errors with their messages: what a subscriber could log. */
  dump(): string {
    const all = [...this.commands.map((t) => t.seen), ...[...this.plain.values()].flat()];
    return JSON.stringify(all, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message, code: (v as RedisError).code } : v));
  }

  close(): void {
    for (const u of this.undo.splice(0)) u();
  }
}

let rec: Recorder | undefined;
const record = () => (rec = new Recorder());
afterEach(() => {
  rec?.close();
  rec = undefined;
});

describe('standalone', () => {
  let topo: StandaloneTopology;
  beforeAll(async () => {
    topo = await startStandalone();
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('traces every command of a pipeline with batchSize, start to asyncEnd, and errors with their code', async () => {
    const pool = await StandalonePool.create(topo.url);
    try {
      const r = record();
      const p = pool.pipeline();
      p.set('diag:a', '1').incr('diag:a').get('diag:a').hset('diag:h', 'f', 'v').incr('diag:h');
      const results = await p.exec();
      expect(results.slice(0, 4)).toEqual(['OK', 2, '2', 1]);
      expect((results[4] as RedisError).code).toBe('WRONGTYPE');

      const traced = r.started();
      expect(traced.map((c) => c.command)).toEqual(['SET', 'INCR', 'GET', 'HSET', 'INCR']);
      expect(traced.map((c) => c.argCount)).toEqual([2, 1, 1, 3, 1]);
      for (const c of traced) {
        expect(c).toMatchObject({ address: topo.address, mode: 'standalone', attempt: 1, batchSize: 5 });
      }
      expect(r.phases(traced[0]!)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
      expect(r.phases(traced[4]!)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
      expect((traced[4]!.error as RedisError).code).toBe('WRONGTYPE');

      // A single command: no batchSize; a transaction: MULTI, the commands and EXEC, one write.
      await pool.get('diag:a');
      await pool.multi().incr('diag:a').get('diag:a').exec();
      const rest = r.started().slice(5);
      expect(rest.map((c) => [c.command, c.batchSize])).toEqual([['GET', undefined], ['MULTI', 4], ['INCR', 4], ['GET', 4], ['EXEC', 4]]);
      expect('batchSize' in rest[0]!).toBe(false);
    } finally {
      await pool.close();
    }
  });

  it('never publishes argument values or replies', async () => {
    const pool = await StandalonePool.create(topo.url);
    try {
      const r = record();
      const secret = 'Pa55-Very-Secret-Value';
      const key = 'user:4711:ssn';
      await pool.set(key, secret);
      expect(await pool.get(key)).toBe(secret);
      await pool.pipeline().hset('h:' + key, 'card', secret).hget('h:' + key, 'card').exec();
      await expect(pool.call('LPUSH', key, secret)).rejects.toThrow(/WRONGTYPE/);
      await pool.use((lease) => lease.call('GET', key));
      expect(r.started().map((c) => c.command)).toEqual(['SET', 'GET', 'HSET', 'HGET', 'LPUSH', 'GET']);
      const text = r.dump();
      expect(text).not.toContain(secret);
      expect(text).not.toContain('4711');
    } finally {
      await pool.close();
    }
  });

  it('traces what reaches the server: a read the client-side cache answers is not a command', async () => {
    const pool = await StandalonePool.create(topo.url, { protocol: 3, cache: {} });
    try {
      await pool.set('diag:cached', 'v');
      const r = record();
      expect(await pool.get('diag:cached')).toBe('v'); // miss: sent
      expect(await pool.get('diag:cached')).toBe('v'); // hit: nothing sent
      expect(pool.stats().cache).toMatchObject({ hits: 1, misses: 1 });
      expect(r.started().map((c) => c.command)).toEqual(['GET']);
    } finally {
      await pool.close();
    }
  });

  it('publishes connect and close with the same connection ids', async () => {
    const r = record();
    const pool = await StandalonePool.create(topo.url, { pool: { lanes: 2 } });
    await Promise.all([pool.get('a'), pool.get('b'), pool.get('c')]);
    await waitFor(() => pool.stats().lanes.connected === 2, 'both lanes to connect');
    const connects = r.of<ConnectDiagnostic>(DIAGNOSTICS_CHANNELS.connect);
    expect(connects.length).toBeGreaterThanOrEqual(2);
    for (const c of connects) expect(c).toMatchObject({ address: topo.address, mode: 'standalone' });
    await pool.close();
    const closes = r.of<CloseDiagnostic>(DIAGNOSTICS_CHANNELS.close);
    expect(closes.map((c) => c.connectionId).sort()).toEqual(connects.map((c) => c.connectionId).sort());
    for (const c of closes) expect(c).toMatchObject({ address: topo.address, mode: 'standalone', error: undefined });
  });

  it('publishes each wait for an exclusive connection: how long, how many were queued, and a failure', async () => {
    const pool = await StandalonePool.create(topo.url, { pool: { max: 1, acquireTimeoutMillis: 30_000 } });
    try {
      const r = record();
      let release!: () => void;
      const held = new Promise<void>((res) => (release = res));
      const first = pool.use(async () => held);
      await waitFor(() => pool.stats().exclusive.borrowed === 1, 'the first lease');
      const second = pool.use((lease) => lease.call('PING'));
      await waitFor(() => pool.stats().exclusive.waiting === 1, 'the second use() to wait');
      const waitingSince = Date.now();
      // A third caller gives up at its deadline while both others hold or wait.
      const third = pool.with({ timeout: 150 }).use((lease) => lease.call('PING'));
      await expect(third).rejects.toBeInstanceOf(TimeoutError);
      const releasedAt = Date.now();
      release();
      await first;
      expect(await second).toBe('PONG');

      const acquires = r.of<AcquireDiagnostic>(DIAGNOSTICS_CHANNELS.acquire);
      expect(acquires).toHaveLength(3);
      const [a1, failed, a2] = acquires;
      expect(a1).toMatchObject({ address: topo.address, mode: 'standalone', queued: 0 });
      expect(a1!.error).toBeUndefined();
      expect(failed).toMatchObject({ queued: 1 });
      expect(failed!.error).toBeInstanceOf(TimeoutError);
      expect(failed!.waitMs).toBeGreaterThanOrEqual(100);
      expect(a2).toMatchObject({ queued: 0 });
      expect(a2!.error).toBeUndefined();
      // It waited at least from when we saw it queued until the lease came back.
      expect(a2!.waitMs).toBeGreaterThanOrEqual(releasedAt - waitingSince);
    } finally {
      await pool.close();
    }
  });
});

describe('Sentinel', () => {
  let topo: SentinelTopology;
  beforeAll(async () => {
    topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('publishes the failover, and commands after it go to the new master with mode sentinel', async () => {
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses);
    try {
      const r = record();
      const from = pool.master();
      await pool.set('diag:s', '1');
      expect(r.started()[0]).toMatchObject({ command: 'SET', mode: 'sentinel', address: from, attempt: 1 });

      const emitted: Array<{ fenced: boolean; blindMs: number | undefined; epoch: number; confirmedBy: number; heldMs: number }> = [];
      pool.on('failover', (e) => emitted.push(e));
      expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
      const events = r.of<FailoverDiagnostic>(DIAGNOSTICS_CHANNELS.failover);
      await waitFor(() => events.length >= 1, 'a redis-ha-pool:failover message', 30_000);
      const to = await topo.waitForNewMaster(from);
      expect(events[0]).toMatchObject({ masterName: topo.masterName, from, to });
      expect(['pubsub', 'poll', 'readonly', 'reconnect', 'promotion']).toContain(events[0]!.detectedBy);
      // The channel says what the event says: the pool heard the leader, so the fence came first.
      await waitFor(() => emitted.length >= 1, 'the failover event');
      expect(emitted[0]).toEqual({ ...emitted[0], fenced: true, blindMs: 0 });
      expect({ fenced: events[0]!.fenced, blindMs: events[0]!.blindMs }).toEqual({ fenced: emitted[0]!.fenced, blindMs: emitted[0]!.blindMs });
      // What committed the switch: a majority of the three sentinels named it, at the failover's epoch.
      expect(events[0]!.confirmedBy).toBeGreaterThanOrEqual(2);
      expect(events[0]!.epoch).toBe(Number((await topo.sentinels[0]!.cli('SENTINEL', 'MASTER', topo.masterName)).split('\n').find((_, i, a) => a[i - 1] === 'config-epoch')));
      expect(events[0]!.heldMs).toBeGreaterThan(0);
      expect({ epoch: events[0]!.epoch, confirmedBy: events[0]!.confirmedBy, heldMs: events[0]!.heldMs }).toEqual({ epoch: emitted[0]!.epoch, confirmedBy: emitted[0]!.confirmedBy, heldMs: emitted[0]!.heldMs });

      await pool.with({ idempotent: true }).set('diag:s', '2');
      const last = r.started().at(-1)!;
      expect(last).toMatchObject({ command: 'SET', mode: 'sentinel', address: to });
      // New connections to the new master were announced.
      expect(r.of<ConnectDiagnostic>(DIAGNOSTICS_CHANNELS.connect).some((c) => c.address.port === to.port && c.mode === 'sentinel')).toBe(true);
    } finally {
      await pool.close();
    }
  });
});

describe('Cluster', () => {
  let topo: ClusterTopology;
  let pool: ClusterPool;
  beforeAll(async () => {
    topo = await startCluster();
    pool = await ClusterPool.create(topo.seeds, { refresh: { interval: 0 } });
  });
  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  /** Hands an empty slot to another master on every master (target first), as a resharding tool finishes one. */
  async function reassign(slot: number): Promise<{ from: { host: string; port: number }; to: { host: string; port: number } }> {
    const source = await topo.nodeForSlot(slot);
    const target = (await topo.masters()).find((m) => m.port !== source.port)!;
    // IMPORTING first, so that the target bumps its config epoch when it takes the slot: a bare
    // SETSLOT NODE does not, and gossip from a master not told yet can hand the slot back to the
    // source, leaving two nodes that each answer MOVED to the other.
    await migrateSlot(topo, slot, source, target);
    return { from: source.address, to: target.address };
  }

  it("does not trace the pool's own start-up requests (COMMAND, CLUSTER SHARDS)", async () => {
    const r = record();
    const own = await ClusterPool.create(topo.seeds, { refresh: { interval: 0 } });
    try {
      expect(own.stats().liveCommandTable).toBe(true);
      expect(r.started().map((c) => c.command)).toEqual([]);
      await own.set('diag:own', 'x');
      expect(r.started().map((c) => c.command)).toEqual(['SET']);
    } finally {
      await own.close();
    }
  });

  it('traces a pipeline across nodes: every entry, batchSize per node write', async () => {
    await waitFor(async () => {
      await pool.refresh();
      return pool.nodes().filter((n) => n.role === 'master').length === 3;
    }, 'three masters in the slot map');
    const r = record();
    const keys = Array.from({ length: 12 }, (_, i) => `diag:p:${i}`);
    const p = pool.pipeline();
    for (const k of keys) p.set(k, 'x');
    const res = await p.exec();
    expect(res).toEqual(keys.map(() => 'OK'));
    const traced = r.started();
    expect(traced).toHaveLength(keys.length);
    const perNode = new Map<number, number>();
    for (const c of traced) perNode.set(c.address.port, (perNode.get(c.address.port) ?? 0) + 1);
    expect(perNode.size).toBeGreaterThan(1);
    for (const c of traced) expect(c).toMatchObject({ command: 'SET', argCount: 2, mode: 'cluster', attempt: 1, batchSize: perNode.get(c.address.port) });
  });

  it('publishes a MOVED redirect and traces both attempts of the command; a refresh publishes the topology change', async () => {
    const key = 'diag:moved:{m1}';
    const slot = keySlot(key);
    const r = record();
    // The pool's map still names the old owner (no periodic refresh): the next command gets MOVED.
    const { from, to } = await reassign(slot);
    expect(await pool.set(key, 'v')).toBe('OK');

    const redirects = r.of<RedirectDiagnostic>(DIAGNOSTICS_CHANNELS.redirect);
    expect(redirects).toEqual([{ kind: 'moved', slot, from, to }]);
    const attempts = r.started((c) => c.command === 'SET');
    expect(attempts.map((c) => [c.attempt, c.address.port])).toEqual([[1, from.port], [2, to.port]]);
    expect((attempts[0]!.error as RedisError).code).toBe('MOVED');
    expect(attempts[1]!.error).toBeUndefined();
    expect(r.phases(attempts[0]!)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);

    // Another slot moves behind the pool's back; a refresh finds it.
    const other = keySlot('diag:moved:{m2}');
    await reassign(other);
    const changes = r.of<TopologyDiagnostic>(DIAGNOSTICS_CHANNELS.topology);
    await waitFor(async () => {
      await pool.refresh();
      return changes.some((c) => c.movedSlots >= 1);
    }, 'a redis-ha-pool:topology message', 20_000);
    expect(changes.find((c) => c.movedSlots >= 1)).toMatchObject({ added: [], removed: [] });
  });
});
