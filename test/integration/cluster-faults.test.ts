/**
 * ClusterPool under faults: a node that answers MOVED to itself forever (scripted), refresh
 * rate limiting, unreachable seeds, a master that stays unreachable until a (scripted) replica
 * is promoted, a manual CLUSTER FAILOVER under load, and a master killed with SIGKILL until
 * the cluster promotes its replica.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, ConnectionError, MaxRedirectionsError, RedisError, TimeoutError, UncertainWriteError, keySlot, type Reply } from '../../src/index.js';
import { startFakeServer, resp, type FakeServer } from '../support/fake-server.js';
import { failoverTo } from '../support/cluster-ops.js';
import { freePort, startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pool's topology internals, to check that polling stopped and no timer is left. */
function topologyOf(pool: ClusterPool): { polling: boolean; delayed: unknown; periodic: unknown; running: unknown } {
  return (pool as unknown as { topology: { polling: boolean; delayed: unknown; periodic: unknown; running: unknown } }).topology;
}

/**
 * A one-shard fake cluster whose master, at `deadPort`, is down (nothing listens there). This
 * node is its replica and answers CLUSTER SHARDS; after `promote()` it reports itself as the
 * master (the dead one as a failed replica) and serves GET/SET.
 */
async function replicaOfDeadMaster(deadPort: number) {
  let port = 0;
  let promoted = false;
  const data = new Map<string, string>();
  const node = (p: number, id: string, role: string, health: string) =>
    resp.array([
      resp.bulk('id'), resp.bulk(id.repeat(40)), resp.bulk('port'), resp.int(p), resp.bulk('ip'), resp.bulk('127.0.0.1'),
      resp.bulk('endpoint'), resp.bulk('127.0.0.1'), resp.bulk('role'), resp.bulk(role), resp.bulk('health'), resp.bulk(health),
    ]);
  const server = await startFakeServer((cmd) => {
    const name = cmd[0]!.toUpperCase();
    if (name === 'CLUSTER' && cmd[1]?.toUpperCase() === 'SHARDS') {
      const nodes = promoted
        ? [node(port, 'b', 'master', 'online'), node(deadPort, 'a', 'replica', 'fail')]
        : [node(deadPort, 'a', 'master', 'online'), node(port, 'b', 'replica', 'online')];
      return resp.array([resp.array([resp.bulk('slots'), resp.array([resp.int(0), resp.int(16383)]), resp.bulk('nodes'), resp.array(nodes)])]);
    }
    if (name === 'PING') return resp.simple('PONG');
    if (name === 'COMMAND') return resp.error("NOPERM this user has no permissions to run the 'command' command");
    if (!promoted) return resp.error(`MOVED ${cmd.length > 1 ? keySlot(cmd[1]!) : 0} 127.0.0.1:${deadPort}`);
    if (name === 'SET') {
      data.set(cmd[1]!, cmd[2]!);
      return resp.simple('OK');
    }
    if (name === 'GET') return resp.bulk(data.get(cmd[1]!) ?? null);
    return resp.error(`ERR unknown command '${cmd[0]}'`);
  });
  port = server.port;
  return {
    server,
    port,
    promote() {
      promoted = true;
    },
    shardsAsked: () => server.received.filter((c) => c[0]!.toUpperCase() === 'CLUSTER').length,
  };
}

/** A node that says it serves every slot, denies COMMAND, and answers anything else with MOVED to itself. */
async function movedForever(delayMs = 0): Promise<FakeServer> {
  let port = 0;
  const server = await startFakeServer(async (cmd) => {
    const name = cmd[0]!.toUpperCase();
    if (name === 'CLUSTER' && cmd[1]?.toUpperCase() === 'SHARDS') {
      const node = resp.array([
        resp.bulk('id'), resp.bulk('f'.repeat(40)), resp.bulk('port'), resp.int(port), resp.bulk('ip'), resp.bulk('127.0.0.1'),
        resp.bulk('endpoint'), resp.bulk('127.0.0.1'), resp.bulk('role'), resp.bulk('master'), resp.bulk('health'), resp.bulk('online'),
      ]);
      return resp.array([resp.array([resp.bulk('slots'), resp.array([resp.int(0), resp.int(16383)]), resp.bulk('nodes'), resp.array([node])])]);
    }
    if (name === 'COMMAND') return resp.error("NOPERM this user has no permissions to run the 'command' command");
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const slot = cmd.length > 1 ? keySlot(cmd[1]!) : 0;
    // The empty-host form: "the host you are talking to".
    return resp.error(`MOVED ${slot} :${port}`);
  });
  port = server.port;
  return server;
}

describe('ClusterPool: scripted faults', () => {
  it('gives MaxRedirectionsError listing every attempt, with the last error as cause', async () => {
    // Each MOVED comes DELAY ms after its command: attempt i cannot end before i + 1 such waits.
    const DELAY = 10;
    const fake = await movedForever(DELAY);
    const pool = await ClusterPool.create([`127.0.0.1:${fake.port}`], { maxRedirections: 5, refresh: { interval: 0 } });
    try {
      // COMMAND was denied: the built-in table routes commands.
      expect(pool.stats().liveCommandTable).toBe(false);
      const t0 = Date.now();
      const err = (await pool.get('some-key').catch((e: unknown) => e)) as MaxRedirectionsError;
      const total = Date.now() - t0;
      expect(err).toBeInstanceOf(MaxRedirectionsError);
      expect(err.attempts).toHaveLength(6);
      err.attempts.forEach((a, i) => {
        expect(a.kind).toBe('moved');
        expect(a.node).toEqual({ host: '127.0.0.1', port: fake.port });
        expect(a.slot).toBe(keySlot('some-key'));
        expect(a.error).toBeInstanceOf(RedisError);
        // `elapsed` is the time from the call's start to this attempt's failure (clock ticks are
        // whole ms, so a DELAY-ms wait can read as DELAY - 1).
        expect(a.elapsed, `attempt ${i + 1}`).toBeGreaterThanOrEqual((i + 1) * (DELAY - 1));
        expect(a.elapsed, `attempt ${i + 1}`).toBeLessThanOrEqual(total);
        if (i > 0) expect(a.elapsed, `attempt ${i + 1}`).toBeGreaterThanOrEqual(err.attempts[i - 1]!.elapsed);
      });
      expect(err.cause).toBe(err.attempts[5]!.error);
      expect((err.cause as RedisError).code).toBe('MOVED');
      expect(err.message).toMatch(/GET gave up after 6 attempts \(maxRedirections 5\)/);
      expect(err.message).toContain(`#6 127.0.0.1:${fake.port} moved slot ${keySlot('some-key')}`);
      // A pipeline entry gets the same error; other entries are unaffected by it.
      const res = await pool.pipeline().get('a').get('b').exec();
      expect(res![0]).toBeInstanceOf(MaxRedirectionsError);
      expect(res![1]).toBeInstanceOf(MaxRedirectionsError);
    } finally {
      await pool.close();
      await fake.close();
    }
  });

  it("every 'moved' event names the node that answered MOVED, also after the first one moved the slot in the map", async () => {
    // A says it owns every slot and answers writes with MOVED to B; B owns every slot and takes them.
    let aPort = 0;
    let bPort = 0;
    const shards = (owner: () => number) => resp.array([resp.array([
      resp.bulk('slots'), resp.array([resp.int(0), resp.int(16383)]), resp.bulk('nodes'), resp.array([resp.array([
        resp.bulk('id'), resp.bulk((owner() === aPort ? 'a' : 'b').repeat(40)), resp.bulk('port'), resp.int(owner()), resp.bulk('ip'), resp.bulk('127.0.0.1'),
        resp.bulk('endpoint'), resp.bulk('127.0.0.1'), resp.bulk('role'), resp.bulk('master'), resp.bulk('health'), resp.bulk('online'),
      ])]),
    ])]);
    const node = (owner: () => number, answer: (cmd: string[]) => string) => startFakeServer((cmd) => {
      const name = cmd[0]!.toUpperCase();
      if (name === 'CLUSTER' && cmd[1]?.toUpperCase() === 'SHARDS') return shards(owner);
      if (name === 'COMMAND') return resp.error("NOPERM this user has no permissions to run the 'command' command");
      if (name === 'PING') return resp.simple('PONG');
      return answer(cmd);
    });
    const a = await node(() => aPort, (cmd) => resp.error(`MOVED ${keySlot(cmd[1]!)} 127.0.0.1:${bPort}`));
    const b = await node(() => bPort, () => resp.simple('OK'));
    aPort = a.port;
    bPort = b.port;
    const pool = await ClusterPool.create([`127.0.0.1:${aPort}`], { refresh: { interval: 0 } });
    try {
      const events: Array<[number, number]> = [];
      pool.on('moved', (e) => events.push([e.from.port, e.to.port]));
      // Ten writes of one slot in flight on A at once: each gets its own MOVED, and all but the
      // first arrive when the map already names B for that slot.
      expect(await Promise.all(Array.from({ length: 10 }, (_, i) => pool.set(`{mv}:${i}`, 'v')))).toEqual(Array(10).fill('OK'));
      expect(events.length).toBeGreaterThan(1);
      expect(events).toEqual(events.map(() => [aPort, bPort]));
    } finally {
      await pool.close();
      await a.close();
      await b.close();
    }
  });

  it('rate-limits refreshes under a storm of MOVED replies', async () => {
    const fake = await movedForever(1);
    const minInterval = 200;
    const pool = await ClusterPool.create([`127.0.0.1:${fake.port}`], { maxRedirections: 16, refresh: { minInterval, interval: 0 } });
    try {
      const started = Date.now();
      for (let round = 0; round < 3; round++) {
        await Promise.all(Array.from({ length: 20 }, (_, i) => pool.get(`storm:${round}:${i}`).catch(() => undefined)));
      }
      const elapsed = Date.now() - started;
      const st = pool.stats();
      expect(st.redirects.moved).toBeGreaterThanOrEqual(3 * 20 * 16);
      const bound = 1 + Math.ceil(elapsed / minInterval) + 1;
      expect(st.refreshes).toBeLessThanOrEqual(bound);
      expect(st.refreshes).toBeGreaterThanOrEqual(2);
      const shardsAsked = fake.received.filter((c) => c[0]!.toUpperCase() === 'CLUSTER').length;
      expect(shardsAsked).toBeLessThanOrEqual(bound);
    } finally {
      await pool.close();
      await fake.close();
    }
  });

  it('fails create() with every seed\'s error as causes when no seed answers', async () => {
    const err = (await ClusterPool.create(['127.0.0.1:1', '127.0.0.1:2'], { connectTimeout: 500 }).catch((e: unknown) => e)) as ConnectionError;
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toMatch(/127\.0\.0\.1:1.*127\.0\.0\.1:2/);
    expect((err.cause as AggregateError).errors).toHaveLength(2);
  });
});

describe('ClusterPool: a master that stays unreachable until its replica is promoted (scripted)', () => {
  it('polls the map while commands fail, retries them as soon as it names the new master, then stops polling', async () => {
    const deadPort = await freePort();
    const fake = await replicaOfDeadMaster(deadPort);
    const minInterval = 100;
    const pool = await ClusterPool.create([`127.0.0.1:${fake.port}`], {
      commandTimeout: 30_000,
      loadCommandTable: false,
      refresh: { minInterval, interval: 0 },
      // Long backoffs: without the wake-up on a map change, no command would try again for 5 s or more.
      retryBackoff: { initialDelay: 20_000, maxDelay: 20_000 },
      pool: { reconnect: { initialDelay: 20_000, maxDelay: 20_000 } },
    });
    try {
      const view = pool.with({ idempotent: true });
      const started = Date.now();
      const writes = Array.from({ length: 20 }, (_, i) => view.set(`w:${i}`, String(i)).then(() => Date.now()));
      const reads = Array.from({ length: 5 }, (_, i) => pool.get(`w:${i}`).then(() => Date.now()));
      await waitFor(() => pool.stats().redirects.connection >= 20, 'every write to fail once on the dead master');
      // While they fail, the map is polled every minInterval (rate limit kept: no storm).
      const askedBefore = fake.shardsAsked();
      const windowStart = Date.now();
      await sleep(1000);
      const asked = fake.shardsAsked() - askedBefore;
      const window = Date.now() - windowStart;
      expect(topologyOf(pool).polling).toBe(true);
      expect(asked).toBeGreaterThanOrEqual(4);
      expect(asked).toBeLessThanOrEqual(Math.ceil(window / minInterval) + 2);

      fake.promote();
      const promotedAt = Date.now();
      const done = await Promise.all([...writes, ...reads]);
      const last = Math.max(...done);
      console.log(
        `[scripted failover] ${asked} refreshes in ${window} ms while failing; all 25 commands done ${last - promotedAt} ms after the promotion ` +
          `(${promotedAt - started} ms after they started); refreshes ${pool.stats().refreshes}`,
      );
      // A backoff or reconnect wait would have lasted 5 s at least: the map change woke them.
      expect(last - promotedAt).toBeLessThan(4000);
      expect(await pool.get('w:7')).toBe('7');

      // Nothing fails any more: polling stops, and no refresh runs (the periodic one is off).
      // (A refresh already running or scheduled when polling stopped may still finish.)
      await waitFor(() => {
        const t = topologyOf(pool);
        return !t.polling && t.running === undefined && t.delayed === undefined;
      }, 'polling to stop, and no refresh running or scheduled');
      const settled = fake.shardsAsked();
      await sleep(5 * minInterval);
      expect(fake.shardsAsked()).toBe(settled);
    } finally {
      await pool.close();
      await fake.server.close();
    }
    const t = topologyOf(pool);
    expect([t.polling, t.delayed, t.periodic]).toEqual([false, undefined, undefined]);
  });

  it('a command out of time rejects with a TimeoutError whose cause is the last error and address the node', async () => {
    const deadPort = await freePort();
    const fake = await replicaOfDeadMaster(deadPort);
    const pool = await ClusterPool.create([`127.0.0.1:${fake.port}`], { loadCommandTable: false, refresh: { minInterval: 100, interval: 0 } });
    try {
      for (const view of [pool.with({ timeout: 800 }), pool.with({ timeout: 800, idempotent: true })]) {
        const err = (await view.set('k', 'v').catch((e: unknown) => e)) as TimeoutError;
        expect(err).toBeInstanceOf(TimeoutError);
        // Several attempts (refused), or a single wait for the node's reconnect backoff.
        expect(err.message).toMatch(/^SET (did not complete within its deadline \(800 ms\) after \d+ attempts: |could not reach 127\.0\.0\.1:\d+ within its deadline)/);
        expect(err.cause).toBeInstanceOf(ConnectionError);
        expect(err.address).toEqual({ host: '127.0.0.1', port: deadPort });
        expect(err.sent).toBe(false);
      }
      // A pipeline entry gets the same kind of error.
      const [entry] = (await pool.with({ timeout: 800 }).pipeline().set('k', 'v').exec())!;
      expect(entry).toBeInstanceOf(TimeoutError);
      expect((entry as TimeoutError).cause).toBeInstanceOf(ConnectionError);
      expect((entry as TimeoutError).address).toEqual({ host: '127.0.0.1', port: deadPort });
    } finally {
      await pool.close();
      await fake.server.close();
    }
  });
});

describe('ClusterPool: failover and node loss on a real cluster', () => {
  let topo: ClusterTopology;
  let pool: ClusterPool;

  beforeAll(async () => {
    topo = await startCluster({ nodeTimeoutMs: 1000 });
    pool = await ClusterPool.create(topo.seeds, { commandTimeout: 20_000, refresh: { interval: 1000 } });
  });

  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  /** Writes in a loop on keys of every slot range; returns a stopper giving the failures. */
  function load(opts: { idempotent: boolean }, workers = 20) {
    let stop = false;
    let ok = 0;
    const failures: unknown[] = [];
    const failedAt: number[] = [];
    const view = pool.with({ idempotent: opts.idempotent });
    const done = Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        for (let i = 0; !stop; i++) {
          const k = `load:${w}:${i % 50}`;
          try {
            await view.set(k, String(i));
            const v = await view.get(k);
            if (v !== String(i)) failures.push(new Error(`${k}: read ${v}, wrote ${i}`));
            ok++;
          } catch (err) {
            if (failures.length < 1000) failures.push(err);
            failedAt.push(Date.now());
            // A command failing at once must not spin this loop (starving the event loop, filling the heap).
            await new Promise((r) => setTimeout(r, 5));
          }
        }
      }),
    );
    return {
      get ok() {
        return ok;
      },
      failures,
      failedAt,
      async stop() {
        stop = true;
        await done;
      },
    };
  }

  it('survives CLUSTER FAILOVER on a replica under load with zero failures (idempotent writes)', async () => {
    const replica = (await topo.replicas())[0]!;
    const l = load({ idempotent: true });
    await waitFor(() => l.ok > 300, 'load to start');
    await failoverTo(topo, replica);
    await topo.waitForClusterOk();
    const at = l.ok;
    await waitFor(() => l.ok > at + 300, 'load to continue after the failover');
    await l.stop();
    expect(l.failures).toEqual([]);
    const r = pool.stats().redirects;
    expect(r.moved + r.clusterdown + r.connection).toBeGreaterThan(0);
    // The pool's map names the promoted replica as a master now.
    await pool.refresh();
    const mine = pool.nodes().filter((n) => n.role === 'master').map((n) => n.port);
    expect(mine).toContain(replica.port);
  });

  it('recovers after a master is killed and its replica promoted; only in-flight writes fail', async () => {
    const masters = await topo.masters();
    const victim: ServerHandle = masters[masters.length - 1]!;
    const topologyEvents: unknown[] = [];
    const nodeErrors: unknown[] = [];
    pool.on('topology', (c) => topologyEvents.push(c));
    pool.on('node-error', (e) => nodeErrors.push(e));
    const workers = 20;
    const l = load({ idempotent: false }, workers);
    await waitFor(() => l.ok > 300, 'load to start');
    await victim.kill('SIGKILL');
    const exitedAt = Date.now();
    await topo.waitForClusterOk(30_000);
    const at = l.ok;
    await waitFor(() => l.ok > at + 500, 'writes to succeed again', 30_000);
    await l.stop();
    // Only writes in flight on the dying master's connections may fail, as "may have executed".
    // (While SIGKILL tears the process down, the kernel may still accept a connection on its
    // listening socket and reset it a moment later: a worker can lose a second write then.)
    // Nothing fails once the process is gone: later writes wait for the promoted replica.
    for (const f of l.failures) expect(f, String(f)).toBeInstanceOf(UncertainWriteError);
    expect(l.failures.length).toBeLessThanOrEqual(2 * workers);
    for (const t of l.failedAt) expect(t).toBeLessThanOrEqual(exitedAt + 250);
    expect(nodeErrors.length).toBeGreaterThan(0);
    expect(topologyEvents.length).toBeGreaterThan(0);
    // Every slot of the victim is writable again.
    const keys = Array.from({ length: 200 }, (_, i) => `after-kill:${i}`);
    expect(await pool.mset(Object.fromEntries(keys.map((k) => [k, 'x'])))).toBe('OK');
    expect((await pool.mget(...keys)).every((v) => v === 'x')).toBe(true);
    expect(pool.nodes().some((n) => n.port === victim.port && n.role === 'master' && n.health !== 'failed')).toBe(false);
  });
});

describe('ClusterPool: a master killed under idempotent write load', () => {
  let topo: ClusterTopology;
  let pool: ClusterPool;

  beforeAll(async () => {
    topo = await startCluster({ nodeTimeoutMs: 2000 });
    // The failover takes the node timeout plus the replica election (about 3-4 s here): the
    // command timeout is comfortably above it, and refreshes keep their defaults.
    pool = await ClusterPool.create(topo.seeds, { commandTimeout: 10_000 });
    await waitFor(async () => {
      await pool.refresh();
      return pool.nodes().filter((n) => n.role === 'master').length === 3;
    }, 'three masters in the slot map');
  });

  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it('loses no idempotent write; writes resume about one refresh interval after the promotion', async () => {
    // The victim's slot ranges (CLUSTER SLOTS) and its replica (ROLE, once its link is up).
    const slots = (await pool.call('CLUSTER', 'SLOTS')) as Reply[][];
    const victimPort = Number((slots[0]![2] as Reply[])[1]);
    const ranges = slots.filter((e) => Number((e[2] as Reply[])[1]) === victimPort).map((e) => [Number(e[0]), Number(e[1])] as const);
    const onVictim = (k: string) => ranges.some(([a, b]) => keySlot(k) >= a && keySlot(k) <= b);
    const victim = topo.handleFor({ host: '127.0.0.1', port: victimPort })!;
    expect(victim).toBeDefined();
    const replica = await waitFor(async () => {
      for (const r of await topo.replicas()) {
        const role = (await r.cli('ROLE')).split('\n');
        if (role[2] === String(victimPort) && role[3] === 'connected') return r;
      }
      return undefined;
    }, 'the victim\'s replica to be linked');

    let killedAt = Infinity;
    let topologyAt = Infinity;
    pool.on('topology', (c) => {
      if (Date.now() > killedAt && c.movedSlots > 0 && topologyAt === Infinity) topologyAt = Date.now();
    });
    let stop = false;
    let ok = 0;
    let resumedAt = Infinity;
    let slowest = 0;
    const failures: unknown[] = [];
    const view = pool.with({ idempotent: true });
    const workers = Array.from({ length: 20 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const k = `kill:${w}:${i % 50}`;
        const t0 = Date.now();
        try {
          await view.set(k, String(i));
          const t1 = Date.now();
          slowest = Math.max(slowest, t1 - t0);
          if (t0 > killedAt && onVictim(k)) resumedAt = Math.min(resumedAt, t1);
          ok++;
        } catch (err) {
          if (failures.length < 1000) failures.push(err);
          // A command failing at once must not spin this loop (starving the event loop, filling the heap).
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    });
    await waitFor(() => ok > 300, 'load to start');
    const before = pool.stats();
    await victim.kill('SIGKILL');
    killedAt = Date.now();
    const promotedAt = await waitFor(async () => (/^master/.test(await replica.cli('ROLE')) ? Date.now() : 0), 'the replica to be promoted', 30_000, 20);
    await topo.waitForClusterOk(30_000);
    const clusterOkAt = Date.now();
    await waitFor(() => resumedAt < Infinity, 'writes to the victim\'s slots to resume', 30_000);
    const at = ok;
    await waitFor(() => ok > at + 500, 'writes to continue', 30_000);
    stop = true;
    await Promise.all(workers);
    const after = pool.stats();
    console.log(
      `[SIGKILL failover] promoted ${promotedAt - killedAt} ms after the kill (cluster ok seen at +${clusterOkAt - killedAt} ms); ` +
        `topology event ${topologyAt - promotedAt} ms and writes resumed ${resumedAt - promotedAt} ms after the promotion; ` +
        `slowest write ${slowest} ms; ${ok} writes, ${failures.length} failed; ` +
        `${after.refreshes - before.refreshes} refreshes, retries ${JSON.stringify(after.redirects)}`,
    );
    expect(failures.map(String).slice(0, 5)).toEqual([]);
    // Every slot is writable again.
    const keys = Array.from({ length: 200 }, (_, i) => `after-kill:${i}`);
    expect(await pool.mset(Object.fromEntries(keys.map((k) => [k, 'x'])))).toBe('OK');
    expect((await pool.mget(...keys)).every((v) => v === 'x')).toBe(true);
  });
});
