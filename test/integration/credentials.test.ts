/**
 * The credentials provider and reauthenticate() against real servers in every mode: the
 * provider is asked for every new connection (with address and role), its failures are
 * AuthenticationErrors, and a rotation (a new password, or a new ACL user) reaches every live
 * connection in place, including a lease in the middle of a MULTI, with zero failed commands.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError, ClusterPool, PoolClosedError, SentinelPool, StandalonePool,
  type CredentialContext, type Credentials,
} from '../../src/index.js';
import {
  startCluster, startSentinel, startStandalone, waitFor,
  type ClusterTopology, type SentinelTopology, type ServerHandle, type StandaloneTopology,
} from '../support/topology.js';

/** Creates (or replaces) an ACL user with every permission on one node. */
async function addUser(node: ServerHandle, user: string, password: string): Promise<void> {
  await node.cli('ACL', 'SETUSER', user, 'reset', 'on', `>${password}`, '~*', '&*', '+@all');
}

interface Client { id: string; user: string; name: string; flags: string }

/** Our clients on a node (by client name), from CLIENT LIST. */
async function clients(node: ServerHandle, name: string): Promise<Client[]> {
  const text = await node.cli('CLIENT', 'LIST');
  return text.split('\n').filter(Boolean).map((line) => {
    const f = new Map(line.trim().split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const));
    return { id: f.get('id') ?? '', user: f.get('user') ?? '', name: f.get('name') ?? '', flags: f.get('flags') ?? '' };
  }).filter((c) => c.name === name);
}

/** A rotating provider: what it returns can be changed; every call is recorded. */
function rotating(initial: Credentials) {
  let current = initial;
  const calls: CredentialContext[] = [];
  return {
    calls,
    set(next: Credentials) {
      current = next;
    },
    provider: async (ctx: CredentialContext) => {
      calls.push(ctx);
      return current;
    },
  };
}

/** Runs `workers` loops of SET/GET/INCR (plus a MULTI now and then) until stopped; counts failures. */
function load(pool: StandalonePool | SentinelPool | ClusterPool, workers: number, prefix: string) {
  let stop = false;
  let ok = 0;
  const failures: unknown[] = [];
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; !stop; i++) {
      const key = `${prefix}:${w}:${i % 50}`;
      try {
        await pool.set(key, String(i));
        if ((await pool.get(key)) !== String(i)) failures.push(new Error(`read back a wrong value for ${key}`));
        await pool.incr(`${prefix}:n:${w}`);
        if (i % 25 === 0) await pool.use(async (l) => l.multi().set(key, 'm').get(key).exec(), { key });
        ok++;
      } catch (e) {
        failures.push(e);
        // A broken pool fails at once: stop rather than spin.
        if (failures.length >= 20) stop = true;
      }
    }
  });
  return {
    get ok() {
      return ok;
    },
    failures,
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

describe('Standalone: credentials provider', () => {
  let topo: StandaloneTopology;
  beforeAll(async () => {
    topo = await startStandalone({ password: randomBytes(8).toString('hex') });
    await addUser(topo.server, 'app1', 'pw-one');
    await addUser(topo.server, 'app2', 'pw-two');
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('is asked for every new connection, with the node address and role "master"', async () => {
    const r = rotating({ username: 'app1', password: 'pw-one' });
    const name = `prov-${randomBytes(3).toString('hex')}`;
    const pool = await StandalonePool.create(topo.address, { credentials: r.provider, clientName: name, pool: { lanes: 2, min: 2 } });
    try {
      await Promise.all(Array.from({ length: 20 }, (_, i) => pool.set(`p:${i}`, 'v')));
      await waitFor(async () => (await clients(topo.server, name)).length === 4, 'two lanes and two idle exclusive connections');
      const seen = await clients(topo.server, name);
      expect(seen.map((c) => c.user)).toEqual(['app1', 'app1', 'app1', 'app1']);
      expect(r.calls).toHaveLength(4);
      for (const c of r.calls) expect(c).toEqual({ address: topo.address, role: 'master' });
    } finally {
      await pool.close();
    }
  });

  it('a provider that throws, hangs or returns a wrong password fails create() with AuthenticationError and leaves no connection', async () => {
    const name = `bad-${randomBytes(3).toString('hex')}`;
    const vault = new Error('vault unreachable');
    const thrown = await StandalonePool.create(topo.address, { clientName: name, credentials: async () => { throw vault; } }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(AuthenticationError);
    expect((thrown as Error).cause).toBe(vault);
    expect((thrown as Error).message).toMatch(/credentials provider failed for 127\.0\.0\.1:\d+ \(role master\): vault unreachable/);

    const started = Date.now();
    const hung = await StandalonePool.create(topo.address, { clientName: name, credentials: () => new Promise(() => {}), credentialsTimeout: 300 }).catch((e: unknown) => e);
    expect(hung).toBeInstanceOf(AuthenticationError);
    expect((hung as Error).message).toMatch(/did not answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(3000);

    const wrong = await StandalonePool.create(topo.address, { clientName: name, credentials: async () => ({ username: 'app1', password: 'nope' }) }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect((wrong as AuthenticationError).message).toMatch(/user "app1"/);
    expect(((wrong as Error).cause as { code?: string }).code).toBe('WRONGPASS');
    await waitFor(async () => (await clients(topo.server, name)).length === 0, 'no connection left behind');
  });

  it('reauthenticate() logs every live connection in as the new user without dropping one; a lease in a MULTI follows when it comes back', async () => {
    const r = rotating({ username: 'app1', password: 'pw-one' });
    const name = `rot-${randomBytes(3).toString('hex')}`;
    const pool = await StandalonePool.create(topo.address, { credentials: r.provider, clientName: name, pool: { lanes: 2, min: 2 } });
    try {
      await Promise.all(Array.from({ length: 10 }, (_, i) => pool.set(`r:${i}`, 'v')));
      await waitFor(async () => (await clients(topo.server, name)).length === 4, 'four connections');
      let inMulti!: () => void;
      const entered = new Promise<void>((res) => (inMulti = res));
      let proceed!: () => void;
      const gate = new Promise<void>((res) => (proceed = res));
      // A user's MULTI on a lease, interrupted by the rotation: no AUTH may land inside it.
      const lease = pool.use(async (l) => {
        expect(await l.call('MULTI')).toBe('OK');
        inMulti();
        await gate;
        expect(await l.call('SET', 'r:multi', 'x')).toBe('QUEUED');
        return l.call('EXEC');
      });
      await entered;
      const before = await clients(topo.server, name);
      const leased = before.find((c) => c.flags.includes('x'))!; // flag x: inside MULTI
      expect(leased).toBeDefined();

      r.set({ username: 'app2', password: 'pw-two' });
      await pool.reauthenticate();
      const mid = await clients(topo.server, name);
      expect(mid.map((c) => c.id).sort()).toEqual(before.map((c) => c.id).sort());
      for (const c of mid) expect(c.user).toBe(c.id === leased.id ? 'app1' : 'app2');

      proceed();
      expect(await lease).toEqual(['OK']);
      await waitFor(async () => (await clients(topo.server, name)).every((c) => c.user === 'app2'), 'the returned lease logs in as app2');
      const after = await clients(topo.server, name);
      expect(after.map((c) => c.id).sort()).toEqual(before.map((c) => c.id).sort());
      expect(await pool.get('r:multi')).toBe('x');
    } finally {
      await pool.close();
    }
  });

  it("rotating an ACL user's password (ACL SETUSER resetpass) under load: zero failed commands, new connections use the new one", async () => {
    await addUser(topo.server, 'rot', 'first');
    const r = rotating({ username: 'rot', password: 'first' });
    const pool = await StandalonePool.create(topo.address, { credentials: r.provider, pool: { lanes: 2, max: 60 } });
    try {
      const work = load(pool, 20, 'load');
      await waitFor(() => work.ok > 500, 'load running');
      await topo.server.cli('ACL', 'SETUSER', 'rot', 'resetpass', '>second');
      r.set({ username: 'rot', password: 'second' });
      await pool.reauthenticate();
      const at = work.ok;
      await waitFor(() => work.ok > at + 500, 'load continues after the rotation');
      // Forty leases at once need new exclusive connections: they log in with the new password.
      const callsBefore = r.calls.length;
      await Promise.all(Array.from({ length: 40 }, (_, i) => pool.use(async (l) => {
        await l.set(`lease:${i}`, 'v');
        await new Promise((res) => setImmediate(res));
      })));
      expect(r.calls.length).toBeGreaterThan(callsBefore);
      await work.stop();
      expect(work.failures).toEqual([]);
      expect(work.ok).toBeGreaterThan(1000);
      await expect(topo.server.cli('AUTH', 'rot', 'first')).rejects.toThrow(/WRONGPASS|invalid/);
    } finally {
      await pool.close();
    }
  });

  it.each([3, 2] as const)('subscriptions follow a rotation over RESP%i (RESP3: AUTH in place; RESP2: a new subscriber connection, reported by resubscribed)', async (protocol) => {
    await addUser(topo.server, 'subrot', 'old-pw');
    const r = rotating({ username: 'subrot', password: 'old-pw' });
    const name = `subrot-${protocol}`;
    const pool = await StandalonePool.create(topo.address, { credentials: r.provider, clientName: name, protocol });
    try {
      const heard: string[] = [];
      const sub = await pool.subscribe(`rot-ch-${protocol}`, (m) => heard.push(String(m)));
      const events: Array<{ reason: string }> = [];
      sub.on('resubscribed', (e) => events.push(e));
      await topo.server.cli('ACL', 'SETUSER', 'subrot', 'resetpass', '>new-pw');
      r.set({ username: 'subrot', password: 'new-pw' });
      await pool.reauthenticate();
      if (protocol === 2) await waitFor(() => events.length === 1, 'the RESP2 subscriber to be replaced');
      await pool.publish(`rot-ch-${protocol}`, 'after');
      await waitFor(() => heard.includes('after'), 'a message after the rotation');
      expect(events).toHaveLength(protocol === 2 ? 1 : 0);
      // A subscriber reconnecting now (connection cut) logs in with the new password.
      await topo.server.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await waitFor(() => events.length === (protocol === 2 ? 2 : 1), 'resubscribed after the cut');
      await pool.publish(`rot-ch-${protocol}`, 'after-cut');
      await waitFor(() => heard.includes('after-cut'), 'a message after the cut');
    } finally {
      await pool.close();
    }
  });

  it('with static credentials reauthenticate() has nothing new to send and resolves', async () => {
    const pool = await StandalonePool.create(topo.address, { username: 'app1', password: 'pw-one' });
    try {
      await pool.reauthenticate();
      expect(await pool.call('ACL', 'WHOAMI')).toBe('app1');
    } finally {
      await pool.close();
    }
  });

  it('a user name without a password logs in as that user (an ACL user with nopass), never silently as default', async () => {
    await topo.server.cli('ACL', 'SETUSER', 'nopw', 'on', 'nopass', '~*', '+@all');
    for (const create of [
      () => StandalonePool.create(topo.address, { username: 'nopw' }),
      () => StandalonePool.create(`redis://nopw@127.0.0.1:${topo.address.port}`),
      () => StandalonePool.create(topo.address, { username: 'nopw', protocol: 3 }),
    ]) {
      const pool = await create();
      try {
        expect(await pool.call('ACL', 'WHOAMI')).toBe('nopw');
      } finally {
        await pool.close();
      }
    }
    // A user that has a password: refused, not logged in as default.
    const err = await StandalonePool.create(topo.address, { username: 'app1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as Error).message).toMatch(/user "app1"/);
  });

  it('a refused rotation rejects with AuthenticationError and the connections keep their login', async () => {
    const r = rotating({ username: 'app1', password: 'pw-one' });
    const pool = await StandalonePool.create(topo.address, { credentials: r.provider });
    try {
      r.set({ username: 'app1', password: 'not-the-password' });
      const err = await pool.reauthenticate().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect((err as Error).message).toMatch(/Re-authentication of user "app1"/);
      expect((err as Error).message).not.toContain('not-the-password');
      expect(await pool.call('ACL', 'WHOAMI')).toBe('app1');
    } finally {
      await pool.close();
    }
  });
});

describe('Sentinel: credentials provider for data nodes and sentinels', () => {
  let topo: SentinelTopology;
  beforeAll(async () => {
    topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
    for (const n of topo.dataNodes) {
      await addUser(n, 'data1', 'd-one');
      await addUser(n, 'data2', 'd-two');
    }
    for (const s of topo.sentinels) {
      await s.cli('ACL', 'SETUSER', 'sent1', 'reset', 'on', '>s-one', '&*', '+@all');
      await s.cli('ACL', 'SETUSER', 'sent2', 'reset', 'on', '>s-two', '&*', '+@all');
    }
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('asks with role "sentinel", "master" and "replica"; reauthenticate() moves the master connections in place and replaces the sentinel subscribers, which still see the next failover', async () => {
    let gen = 1;
    const calls: CredentialContext[] = [];
    const provider = async (ctx: CredentialContext) => {
      calls.push(ctx);
      return ctx.role === 'sentinel' ? { username: `sent${gen}`, password: gen === 1 ? 's-one' : 's-two' } : { username: `data${gen}`, password: gen === 1 ? 'd-one' : 'd-two' };
    };
    const name = `sp-${randomBytes(3).toString('hex')}`;
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { credentials: provider, clientName: name });
    const replicas = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { credentials: provider, role: 'replica' });
    try {
      await pool.set('s:k', 'v');
      expect(await replicas.call('ACL', 'WHOAMI')).toBe('data1');
      const roles = new Set(calls.map((c) => c.role));
      expect([...roles].sort()).toEqual(['master', 'replica', 'sentinel']);
      // The subscriber loops come up after create(): wait until each sentinel has one from us.
      const subscribers = async () => (await Promise.all(topo.sentinels.map((s) => s.cli('CLIENT', 'LIST'))))
        .flatMap((t) => t.split('\n')).filter((l) => / flags=P /.test(l) && /user=sent\d/.test(l));
      await waitFor(async () => (await subscribers()).filter((l) => l.includes('user=sent1')).length >= 6, 'two pools subscribed on three sentinels');
      const master = topo.handleFor(pool.master())!;
      const before = await clients(master, name);
      expect(before.length).toBeGreaterThan(0);

      gen = 2;
      await pool.reauthenticate();
      await replicas.reauthenticate();
      const after = await clients(master, name);
      expect(after.map((c) => c.id).sort()).toEqual(before.map((c) => c.id).sort());
      expect(after.every((c) => c.user === 'data2')).toBe(true);
      expect(await replicas.call('ACL', 'WHOAMI')).toBe('data2');
      await waitFor(async () => {
        const subs = await subscribers();
        return subs.filter((l) => l.includes('user=sent2')).length >= 6 && !subs.some((l) => l.includes('user=sent1'));
      }, 'every sentinel subscriber logged in as sent2');

      // The replaced subscribers are the ones listening: a failover is still followed.
      const from = pool.master();
      const switched = new Promise((res) => pool.once('failover', res));
      await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName);
      await switched;
      expect(pool.master()).not.toEqual(from);
      await pool.set('s:k2', 'after');
      expect(await pool.call('ACL', 'WHOAMI')).toBe('data2');
    } finally {
      await pool.close();
      await replicas.close();
    }
    // After close() it rejects (a .catch() sees it) rather than throwing.
    const late = pool.reauthenticate();
    await expect(late).rejects.toBeInstanceOf(PoolClosedError);
  });
});

describe('Cluster: credentials provider on every node', () => {
  let topo: ClusterTopology;
  beforeAll(async () => {
    topo = await startCluster();
    for (const n of topo.nodes) {
      await addUser(n, 'node1', 'n-one');
      await addUser(n, 'node2', 'n-two');
    }
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('asks with role "node" for every node; reauthenticate() under load moves every connection in place with zero failures', async () => {
    const r = rotating({ username: 'node1', password: 'n-one' });
    const name = `cp-${randomBytes(3).toString('hex')}`;
    const pool = await ClusterPool.create(topo.seeds, { credentials: r.provider, clientName: name, refresh: { interval: 0 } });
    try {
      const work = load(pool, 20, '{c}x');
      const spread = load(pool, 10, 'spread');
      await waitFor(() => work.ok + spread.ok > 500, 'load running');
      expect(new Set(r.calls.map((c) => c.role))).toEqual(new Set(['node']));
      const masters = await topo.masters();
      const before = (await Promise.all(masters.map((m) => clients(m, name)))).flat();
      expect(before.length).toBeGreaterThanOrEqual(3);
      expect(before.every((c) => c.user === 'node1')).toBe(true);

      r.set({ username: 'node2', password: 'n-two' });
      await pool.reauthenticate();
      await waitFor(async () => (await Promise.all(masters.map((m) => clients(m, name)))).flat().every((c) => c.user === 'node2'), 'every connection on node2');
      const after = (await Promise.all(masters.map((m) => clients(m, name)))).flat();
      for (const c of before) expect(after.map((a) => a.id)).toContain(c.id);
      const at = work.ok;
      await waitFor(() => work.ok > at + 200, 'load continues');
      await work.stop();
      await spread.stop();
      expect(work.failures).toEqual([]);
      expect(spread.failures).toEqual([]);
    } finally {
      await pool.close();
    }
    const late = pool.reauthenticate();
    await expect(late).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('a wrong password is an AuthenticationError from create(), with every seed tried', async () => {
    const err = await ClusterPool.create(topo.seeds, { username: 'node1', password: 'wrong' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as Error).message).toMatch(/Could not load the cluster slot map/);
    expect((err as Error).cause).toBeInstanceOf(AggregateError);
    expect(((err as Error).cause as AggregateError).errors.every((e) => e instanceof AuthenticationError)).toBe(true);
  });
});
