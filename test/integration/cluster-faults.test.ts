/**
 * ClusterPool under faults: a node that answers MOVED to itself forever (scripted), refresh
 * rate limiting, unreachable seeds, a manual CLUSTER FAILOVER under load, and a master killed
 * with SIGKILL until the cluster promotes its replica.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, ConnectionError, MaxRedirectionsError, RedisError, UncertainWriteError, keySlot } from '../../src/index.js';
import { startFakeServer, resp, type FakeServer } from '../support/fake-server.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';

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
    const fake = await movedForever();
    const pool = await ClusterPool.create([`127.0.0.1:${fake.port}`], { maxRedirections: 5, refresh: { interval: 0 } });
    try {
      // COMMAND was denied: the built-in table routes commands.
      expect(pool.stats().liveCommandTable).toBe(false);
      const err = (await pool.get('some-key').catch((e: unknown) => e)) as MaxRedirectionsError;
      expect(err).toBeInstanceOf(MaxRedirectionsError);
      expect(err.attempts).toHaveLength(6);
      for (const a of err.attempts) {
        expect(a.kind).toBe('moved');
        expect(a.node).toEqual({ host: '127.0.0.1', port: fake.port });
        expect(a.slot).toBe(keySlot('some-key'));
        expect(a.error).toBeInstanceOf(RedisError);
        expect(a.elapsed).toBeGreaterThanOrEqual(0);
      }
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
            failures.push(err);
            failedAt.push(Date.now());
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
    await replica.cli('CLUSTER', 'FAILOVER');
    await waitFor(async () => /^master/.test(await replica.cli('ROLE')), 'the replica to become master');
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
