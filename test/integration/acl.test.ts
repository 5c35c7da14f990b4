/**
 * ACL users in every mode, against real redis-server / redis-sentinel 7.0 processes (issue 7,
 * part 3): the least-privilege `ACL SETUSER` rules each mode needs (the ones the README's
 * Security section lists; the constants below are those rules, applied verbatim), each proved
 * to work and the optional grants proved necessary for their option; a command the user may
 * not run rejects with `RedisError` code `NOPERM` and nothing else breaks (no reconnect, no
 * failover, no refresh); a wrong password or user name is an `AuthenticationError` from every
 * mode's `create()`, and the password never shows in the error, its cause or `util.inspect`.
 *
 * Every check of "nothing was denied" reads the server's own `ACL LOG` (through the harness's
 * client, as the admin), so a rule set that only works because the library swallows a NOPERM
 * is caught. One topology per mode (describe), shared by its tests; the default users have a
 * password, so every command the library sends runs as the ACL user under test.
 */
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AllSentinelsDownError,
  AuthenticationError,
  ClusterPool,
  ConnectionError,
  MaxRedirectionsError,
  RedisError,
  SentinelPool,
  StandalonePool,
  keySlot,
  type ClusterOptions,
  type SentinelOptions,
  type StandaloneOptions,
} from '../../src/index.js';
import { SENTINEL_CHANNELS } from '../../src/sentinel/messages.js';
import type { NodeAddress } from '../../src/types.js';
import { pairsToMap, parseInfo, sendCommand, sendCommands } from '../support/mini-client.js';
import type { RespValue } from '../support/resp-wire.js';
import {
  startCluster,
  startSentinel,
  startStandalone,
  waitFor,
  type ClusterTopology,
  type SentinelTopology,
  type ServerHandle,
  type StandaloneTopology,
} from '../support/topology.js';
import { server } from '../support/server-features.js';

// ------------------------------------------------------------------ the documented rules

/** Password of every node's default user (the admin the harness and these checks use). */
const ADMIN_PW = `admin-${randomBytes(4).toString('hex')}`;
/** The application user's password: a canary that must never appear in an error. */
const APP_PW = `AppSecret-${randomBytes(6).toString('hex')}`;
/** The sentinel user's password, also a canary. */
const SENTINEL_PW = `SentinelSecret-${randomBytes(6).toString('hex')}`;
/** A wrong password, a canary too (it is what the user typed). */
const WRONG_PW = `WrongSecret-${randomBytes(6).toString('hex')}`;
const SECRETS = [APP_PW, SENTINEL_PW, WRONG_PW];

/** `+client|setinfo`, on every server that takes the rule (all but Redis 7.0). */
const SETINFO_RULE = server.flavor === 'redis' && server.major === 7 && server.minor === 0 ? [] : ['+client|setinfo'];

/**
 * What an application user on a data node gets in every mode (README: "application commands").
 * Rules apply in order: the grants after `-@dangerous` stay granted.
 */
const APP_COMMANDS = [
  'resetkeys', '~app:*', // its keys only
  'resetchannels', // no pub/sub channel unless granted below
  '-@all',
  '+@read', '+@write', '-@dangerous', // data commands, but not FLUSHALL/FLUSHDB/KEYS/SORT/MIGRATE/RESTORE/…
  '+@transaction', // MULTI/EXEC/DISCARD/WATCH/UNWATCH: multi(), and use() with WATCH (UNWATCH on release)
  '+ping', // the handshake's PING (a refusal is tolerated but logged) and pool.testOnBorrow
  // The handshake's CLIENT SETINFO (Redis 7.2+, Valkey; a refusal is tolerated but logged).
  // Redis 7.0 has no such subcommand and refuses the rule; 6.2 takes it as a first-argument rule.
  ...SETINFO_RULE,
];

/** Standalone: the application user, with the grants of the options it uses. */
const STANDALONE_RULES = [
  ...APP_COMMANDS,
  '+client|setname', // only with clientName under protocol 2 (HELLO 3 SETNAME needs no grant)
  '+select', // only with db other than 0
  '&app:*', '+subscribe', '+publish', // only for pub/sub (lease.subscribe / publish)
];

/**
 * The channels a Sentinel subscriber loop subscribes to, as the README lists them. The test
 * checks the library subscribes to no other channel (SENTINEL_CHANNELS).
 */
const DOCUMENTED_SENTINEL_CHANNELS = [
  '+switch-master', '+try-failover', '+elected-leader', '+failover-state-select-slave', '+selected-slave',
  '+failover-state-send-slaveof-noone', '+failover-state-wait-promotion', '+promoted-slave',
  '+failover-state-reconf-slaves', '+failover-end', '+failover-end-for-timeout', '-failover-abort-not-elected',
  '-failover-abort-no-good-slave', '-failover-abort-slave-timeout', '+sdown', '-sdown', '+odown', '-odown',
  '+convert-to-slave', '+reset-master', '+slave', '+sentinel', '+role-change',
];

/** Sentinel side, pub/sub: what a `role: 'master'` pool needs on each sentinel. */
const SENTINEL_SUBSCRIBE_RULES = [
  'resetchannels', ...DOCUMENTED_SENTINEL_CHANNELS.map((c) => `&${c}`), // or &* (there is nothing else on a sentinel)
  '-@all',
  '+subscribe', // the failover messages (without it: polling, below)
  '+sentinel|get-master-addr-by-name', // discovery and every re-check
  '+sentinel|sentinels', // learns the sentinels it was not given
  '+sentinel|myid', // each sentinel's run id, asked once: one listed under two addresses is one voice in a majority
];

/** Sentinel side, everything: pub/sub, the polling fallback's queries, and replica reads. */
const SENTINEL_RULES = [
  ...SENTINEL_SUBSCRIBE_RULES,
  '+sentinel|master', // polling: failover_in_progress (the write fence without pub/sub)
  '+sentinel|replicas', // polling: the replica being promoted; role: 'replica': the replicas to read from
];

/** Sentinel side, a user that may not SUBSCRIBE: the pool polls each sentinel instead. */
const SENTINEL_POLL_RULES = [
  '-@all',
  '+sentinel|get-master-addr-by-name', '+sentinel|sentinels', '+sentinel|master', '+sentinel|replicas', '+sentinel|myid',
];

/** Sentinel data nodes: the application user plus ROLE. */
const SENTINEL_DATA_RULES = [
  ...APP_COMMANDS,
  '+role', // the ROLE check of every master (and replica) the sentinels name; after -@dangerous (ROLE is @dangerous)
  '+client|setname', // only with clientName under protocol 2
];

/** Cluster nodes: the application user plus what routing needs. */
const CLUSTER_RULES = [
  ...APP_COMMANDS,
  '+cluster|shards', // the slot map (Redis 7+)
  '+cluster|slots', // the slot map's fallback (Redis 6, or a user denied cluster|shards)
  '+command', // the live COMMAND table (optional: the built-in 7.0 table is used without it)
  '+readonly', // only with readFrom 'replica' / 'prefer-replica' (every connection sends READONLY)
  '+asking', // follows ASK during a slot migration
  '+client|setname', // only with clientName under protocol 2
];

const user = (name: string, password: string, rules: readonly string[]) => `user ${name} on >${password} ${rules.join(' ')}`;
const without = (rules: readonly string[], ...drop: string[]) => rules.filter((r) => !drop.includes(r));

// ------------------------------------------------------------------ helpers

/** Applies `ACL SETUSER name reset on >password rules…` on every node (runtime, as the admin). */
async function setUser(nodes: readonly ServerHandle[], adminPassword: string | undefined, name: string, password: string, rules: readonly string[]): Promise<void> {
  await Promise.all(nodes.map((n) => sendCommand(n.address, ['ACL', 'SETUSER', name, 'reset', 'on', `>${password}`, ...rules], { password: adminPassword })));
}

async function resetAclLog(nodes: readonly ServerHandle[], adminPassword: string | undefined): Promise<void> {
  await Promise.all(nodes.map((n) => sendCommand(n.address, ['ACL', 'LOG', 'RESET'], { password: adminPassword })));
}

/** What the servers' ACL LOG says `username` was denied, as `reason:object` (e.g. `command:ping`), sorted, deduplicated. */
async function denials(nodes: readonly ServerHandle[], adminPassword: string | undefined, username: string): Promise<string[]> {
  const out = new Set<string>();
  for (const n of nodes) {
    const log = (await sendCommand(n.address, ['ACL', 'LOG'], { password: adminPassword })) as RespValue[];
    for (const entry of log) {
      const e = pairsToMap(entry);
      if (e.get('username') === username) out.add(`${e.get('reason')}:${e.get('object')}`);
    }
  }
  return [...out].sort();
}

/** ACL LOG denials of `username` on each node: `reason:object` -> how many times (the log folds repeats into one entry's count). */
async function denialCounts(nodes: readonly ServerHandle[], adminPassword: string | undefined, username: string): Promise<Array<Map<string, number>>> {
  const out: Array<Map<string, number>> = [];
  for (const n of nodes) {
    const counts = new Map<string, number>();
    const log = (await sendCommand(n.address, ['ACL', 'LOG'], { password: adminPassword })) as RespValue[];
    for (const entry of log) {
      const e = pairsToMap(entry);
      if (e.get('username') !== username) continue;
      const k = `${e.get('reason')}:${e.get('object')}`;
      counts.set(k, (counts.get(k) ?? 0) + Number(e.get('count') ?? 1));
    }
    out.push(counts);
  }
  return out;
}

/** Every `user=` of the connections named `clientName` on a node. */
async function usersOfClients(node: NodeAddress, adminPassword: string | undefined, clientName: string): Promise<string[]> {
  const text = String(await sendCommand(node, ['CLIENT', 'LIST'], { password: adminPassword }));
  return text
    .split('\n')
    .map((l) => new Map(l.trim().split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string])))
    .filter((c) => c.get('name') === clientName)
    .map((c) => c.get('user')!);
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    async (v) => {
      if (v && typeof (v as { close?: unknown }).close === 'function') await (v as { close(): Promise<void> }).close();
      throw new Error(`expected a rejection, got ${inspect(v, { depth: 0 })}`);
    },
    (e: unknown) => e as Error,
  );
}

/** The error, its `cause` chain and any AggregateError's `errors`, depth first. */
function errorTree(err: unknown, depth = 0): unknown[] {
  if (depth > 10 || err === undefined || err === null) return [];
  const out: unknown[] = [err];
  if (err instanceof Error) {
    out.push(...errorTree(err.cause, depth + 1));
    if (err instanceof AggregateError) for (const e of err.errors) out.push(...errorTree(e, depth + 1));
  }
  return out;
}

/** No secret in the message, String(cause), util.inspect, or any message of the cause tree. */
function expectNoSecret(err: Error): void {
  const texts = [
    err.message,
    String(err.cause),
    inspect(err, { depth: 10 }),
    ...errorTree(err).map((e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e))),
  ];
  for (const secret of SECRETS) for (const t of texts) expect(t).not.toContain(secret);
}

/** True when the tree holds a server reply with this code (WRONGPASS, NOPERM, …). */
const hasCode = (err: unknown, code: string) => errorTree(err).some((e) => e instanceof RedisError && e.code === code);

/** A field of a RESP2 flat key/value array (CLUSTER SHARDS), unstringified. */
function field(reply: RespValue, name: string): RespValue | undefined {
  if (!Array.isArray(reply)) return undefined;
  for (let i = 0; i + 1 < reply.length; i += 2) if (reply[i] === name) return reply[i + 1];
  return undefined;
}

/** Counts `connect` / `close` events of a pool. */
function connections(pool: { on(event: 'connect' | 'close', fn: (...a: unknown[]) => void): unknown }) {
  const c = { connects: 0, closes: 0 };
  pool.on('connect', () => c.connects++);
  pool.on('close', () => c.closes++);
  return c;
}

const FAST = { connectTimeout: 2000, commandTimeout: 5000 } as const;

// ================================================================== standalone

describe('standalone: an application user limited to app:* keys', () => {
  let topo: StandaloneTopology;
  let nodes: ServerHandle[];
  const pools: StandalonePool[] = [];
  const create = async (options: StandaloneOptions) => {
    const p = await StandalonePool.create(topo.address, { ...FAST, ...options });
    pools.push(p);
    return p;
  };

  beforeAll(async () => {
    topo = await startStandalone({
      password: ADMIN_PW,
      acl: [
        user('app', APP_PW, STANDALONE_RULES),
        // Nothing but GET and SET: proves the handshake itself needs no grant.
        user('bare', APP_PW, ['resetkeys', '~app:*', 'resetchannels', '-@all', '+get', '+set']),
        `user disabled off >${APP_PW} ~* &* +@all`,
      ],
    });
    nodes = [topo.server];
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it.each([2, 3] as const)('the handshake needs no grant (AUTH, HELLO are always allowed; a refused PING is tolerated): a user with only GET and SET works (protocol %i)', async (protocol) => {
    await resetAclLog(nodes, ADMIN_PW);
    const pool = await create({ protocol, username: 'bare', password: APP_PW });
    await pool.set('app:bare', 'v');
    expect(await pool.get('app:bare')).toBe('v');
    // The only things refused are the handshake's PING and, where the server checks it (all but
    // Redis 7.0, where the subcommand does not exist; 6.2 logs it as "client"), its CLIENT SETINFO: +ping and
    // +client|setinfo keep ACL LOG clean.
    expect(await denials(nodes, ADMIN_PW, 'bare')).toEqual(SETINFO_RULE.length ? [server.has('client-setinfo') ? 'command:client|setinfo' : 'command:client', 'command:ping'] : ['command:ping']);
  });

  it('testOnBorrow with a user denied PING: the refusal proves the connection alive, so leases work without replacing connections', async () => {
    const pool = await create({ username: 'bare', password: APP_PW, pool: { testOnBorrow: true } });
    let connects = 0;
    pool.on('connect', () => connects++);
    for (let i = 0; i < 20; i++) await pool.use(async (l) => l.set('app:borrow', String(i)));
    expect(await pool.get('app:borrow')).toBe('19');
    // One exclusive connection, reused: no storm of new connections.
    expect(connects).toBe(1);
  });

  it.each([2, 3] as const)('the documented user runs everything the pool does, with nothing denied (protocol %i)', async (protocol) => {
    await resetAclLog(nodes, ADMIN_PW);
    const name = `acl-sa-${protocol}`;
    const pool = await create({ protocol, username: 'app', password: APP_PW, clientName: name, db: 1, pool: { testOnBorrow: true, min: 1 } });
    await pool.set('app:k', 'v', { EX: 60 });
    expect(await pool.get('app:k')).toBe('v');
    expect(await pool.incr('app:n')).toBeGreaterThan(0);
    await pool.mset({ 'app:a': '1', 'app:b': '2' });
    expect(await pool.mget('app:a', 'app:b', 'app:none')).toEqual(['1', '2', null]);
    expect(await pool.pipeline().set('app:p', 1).incr('app:p').get('app:p').exec()).toEqual(['OK', 2, '2']);
    expect(await pool.multi().set('app:m', 1).incr('app:m').exec()).toEqual(['OK', 2]);
    // WATCH + MULTI on a lease; the lease's release sends UNWATCH when no EXEC ended it.
    expect(await pool.use(async (l) => {
      await l.call('WATCH', 'app:m');
      return l.multi().incr('app:m').exec();
    })).toEqual([3]);
    await pool.use(async (l) => {
      await l.call('WATCH', 'app:m');
    });
    expect(await pool.blpop('app:list', 0.05)).toBeNull();
    const seen: string[] = [];
    for await (const k of pool.scanIterator({ match: 'app:*', count: 100 })) seen.push(k);
    expect(seen).toContain('app:k');
    // Pub/sub on its channels.
    const got = new Promise<string>((resolve, reject) => {
      void pool.use(async (l) => {
        const message = new Promise<string>((r) => void l.subscribe('app:news', (m) => r(m)));
        await waitFor(async () => Number(await pool.publish('app:news', 'hello')) > 0, 'a subscriber on app:news', 5000);
        resolve(await message);
      }).catch(reject);
    });
    expect(await got).toBe('hello');

    // It ran as the user, in db 1, and the server refused nothing.
    expect(new Set(await usersOfClients(topo.address, ADMIN_PW, name))).toEqual(new Set(['app']));
    const [, inDb1] = await sendCommands(topo.address, [['SELECT', 1], ['GET', 'app:k']], { password: ADMIN_PW });
    expect(inDb1).toBe('v');
    expect(await denials(nodes, ADMIN_PW, 'app')).toEqual([]);
  });

  it('each optional grant is needed by its option: clientName needs client|setname, db needs select (create() fails at once, naming the step)', async () => {
    await sendCommand(topo.address, ['ACL', 'SETUSER', 'nosetname', 'reset', 'on', `>${APP_PW}`, ...without(STANDALONE_RULES, '+client|setname')], { password: ADMIN_PW });
    await sendCommand(topo.address, ['ACL', 'SETUSER', 'noselect', 'reset', 'on', `>${APP_PW}`, ...without(STANDALONE_RULES, '+select')], { password: ADMIN_PW });
    const cases: Array<[string, StandaloneOptions, RegExp]> = [
      ['nosetname', { clientName: 'x' }, /CLIENT SETNAME/],
      ['noselect', { db: 1 }, /SELECT 1/],
    ];
    for (const [username, extra, step] of cases) {
      const t0 = Date.now();
      const err = await rejection(create({ username, password: APP_PW, ...extra }));
      expect(err, username).toBeInstanceOf(ConnectionError);
      expect(err).not.toBeInstanceOf(AuthenticationError);
      expect(err.message).toMatch(step);
      expect(err.message).toMatch(/NOPERM/);
      expect(hasCode(err, 'NOPERM')).toBe(true);
      expect(Date.now() - t0).toBeLessThan(1500);
      expectNoSecret(err);
    }
    // The same options with the documented grants: fine (and HELLO 3 SETNAME needs none).
    const ok = await create({ username: 'nosetname', password: APP_PW, clientName: 'acl-hello-setname', protocol: 3 });
    expect(await ok.set('app:grants', 'ok')).toBe('OK');
    expect(await ok.get('app:grants')).toBe('ok');
    // The name was set, by HELLO's SETNAME (the user has no client|setname).
    expect(new Set(await usersOfClients(topo.address, ADMIN_PW, 'acl-hello-setname'))).toEqual(new Set(['nosetname']));
  });

  it('a command the user may not run rejects with RedisError NOPERM; the pool keeps its connections and keeps working', async () => {
    const pool = await create({ username: 'app', password: APP_PW });
    await pool.set('app:keep', 'kept');
    await pool.use((l) => l.get('app:keep')); // the exclusive connection exists before counting
    const conns = connections(pool as never);
    const errors: Error[] = [];
    pool.on('error', (e) => errors.push(e));
    const before = pool.stats();

    const denied: Array<[string, () => Promise<unknown>]> = [
      ['FLUSHALL', () => pool.call('FLUSHALL')],
      ['a key outside app:*', () => pool.set('other:k', 'x')],
      ['a read outside app:*', () => pool.get('other:k')],
      ['CONFIG GET (not granted)', () => pool.call('CONFIG', 'GET', 'maxmemory')],
      ['KEYS (@dangerous)', () => pool.call('KEYS', '*')],
      ['FLUSHALL on a lease', () => pool.use((l) => l.call('FLUSHALL'))],
    ];
    for (const [what, run] of denied) {
      const err = await rejection(run());
      expect(err, what).toBeInstanceOf(RedisError);
      expect((err as RedisError).code, what).toBe('NOPERM');
    }
    // In a pipeline only the denied entry fails.
    const results = await pool.pipeline().set('app:p1', 'a').set('other:p1', 'b').get('app:p1').exec();
    expect(results[0]).toBe('OK');
    expect(results[1]).toBeInstanceOf(RedisError);
    expect((results[1] as RedisError).code).toBe('NOPERM');
    expect(results[2]).toBe('a');
    // In a MULTI the server refuses the queued command and aborts EXEC: EXECABORT, the NOPERM as cause, nothing ran.
    const tx = await rejection(pool.multi().set('app:tx', '1').set('other:tx', '1').exec());
    expect(tx).toBeInstanceOf(RedisError);
    expect((tx as RedisError).code).toBe('EXECABORT');
    expect(hasCode(tx, 'NOPERM')).toBe(true);
    // A lease keeps working after a refusal.
    expect(await pool.use(async (l) => {
      await l.call('FLUSHALL').catch(() => {});
      return l.get('app:keep');
    })).toBe('kept');

    // Nothing was executed, nothing reconnected, and the pool goes on.
    expect(await pool.get('app:keep')).toBe('kept');
    expect(await pool.get('app:tx')).toBeNull();
    expect(await sendCommand(topo.address, ['EXISTS', 'other:k', 'other:p1', 'other:tx'], { password: ADMIN_PW })).toBe(0);
    expect(conns).toEqual({ connects: 0, closes: 0 });
    expect(errors).toEqual([]);
    const after = pool.stats();
    expect(after.generation).toBe(before.generation);
    expect(after.lanes.connected).toBe(before.lanes.connected);
    expect(after.exclusive.size).toBe(before.exclusive.size);
  });

  it.each([2, 3] as const)('a wrong password, a wrong user name or a disabled user is an AuthenticationError from create(), without the password (protocol %i)', async (protocol) => {
    const host = `${topo.address.host}:${topo.address.port}`;
    const cases: Array<[string, () => Promise<unknown>, string]> = [
      ['wrong password', () => create({ protocol, username: 'app', password: WRONG_PW }), 'app'],
      ['wrong user name', () => create({ protocol, username: 'nobody', password: WRONG_PW }), 'nobody'],
      ['right password, wrong user', () => create({ protocol, username: 'nobody', password: APP_PW }), 'nobody'],
      ['disabled user', () => create({ protocol, username: 'disabled', password: APP_PW }), 'disabled'],
      ['wrong password in the URL', () => StandalonePool.create(`redis://app:${WRONG_PW}@${host}`, { ...FAST, protocol }), 'app'],
    ];
    for (const [what, run, username] of cases) {
      const t0 = Date.now();
      const err = await rejection(run());
      expect(err, what).toBeInstanceOf(AuthenticationError);
      expect(err.message, what).toContain(`"${username}"`);
      expect(hasCode(err, 'WRONGPASS'), what).toBe(true);
      expect(Date.now() - t0, what).toBeLessThan(1500);
      expectNoSecret(err);
    }
  });
});

// ================================================================== sentinel

describe('sentinel: a sentinel user and a data-node user', () => {
  let topo: SentinelTopology;
  const pools: SentinelPool[] = [];
  const create = async (options: SentinelOptions) => {
    const p = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { ...FAST, ...options });
    pools.push(p);
    return p;
  };
  /** The documented pair of users. */
  const USERS = { username: 'app', password: APP_PW, sentinelUsername: 'sentinel-app', sentinelPassword: SENTINEL_PW } as const;

  /**
   * Waits until `sentinel` could run a SENTINEL FAILOVER now: no failover of the master in
   * progress, and at least one replica it sees as a plain, linked slave. (The demoted master of
   * an earlier failover takes Sentinel 8+ s to reconvert; one good replica is enough.)
   */
  async function readyForFailover(sentinel: ServerHandle): Promise<NodeAddress> {
    return waitFor(async () => {
      const [master, reps] = await sendCommands(sentinel.address, [['SENTINEL', 'MASTER', topo.masterName], ['SENTINEL', 'REPLICAS', topo.masterName]]);
      const m = pairsToMap(master!);
      if (m.get('flags') !== 'master') return undefined;
      const ok = (reps as RespValue[]).map(pairsToMap).filter((r) => r.get('flags') === 'slave' && r.get('master-link-status') === 'ok');
      return ok.length > 0 ? { host: m.get('ip')!, port: Number(m.get('port')) } : undefined;
    }, `sentinel ${sentinel.port} to be ready for a failover`, 30_000, 100);
  }

  /** SENTINEL FAILOVER through `sentinel`, once it can; returns the master it moves away from. */
  async function failover(sentinel: ServerHandle): Promise<NodeAddress> {
    const from = await readyForFailover(sentinel);
    expect(await sentinel.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    return from;
  }

  beforeAll(async () => {
    topo = await startSentinel({
      // The data nodes' default user has a password: every data command of the pool runs as 'app'.
      masterPassword: ADMIN_PW,
      replicas: 2,
      // Only SENTINEL FAILOVER moves the master here: a slow CI machine must not cause one.
      downAfterMs: 5000,
      sentinelAcl: [
        user('sentinel-app', SENTINEL_PW, SENTINEL_RULES),
        user('sentinel-sub', SENTINEL_PW, SENTINEL_SUBSCRIBE_RULES),
        user('sentinel-poll', SENTINEL_PW, SENTINEL_POLL_RULES),
      ],
    });
    await setUser(topo.dataNodes, ADMIN_PW, 'app', APP_PW, SENTINEL_DATA_RULES);
    await setUser(topo.dataNodes, ADMIN_PW, 'app-norole', APP_PW, without(SENTINEL_DATA_RULES, '+role'));
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('the documented channel list is every channel the library subscribes to', () => {
    expect([...SENTINEL_CHANNELS].sort()).toEqual([...DOCUMENTED_SENTINEL_CHANNELS].sort());
  });

  it.each([2, 3] as const)('the documented users: discovery, ROLE check, every sentinel subscribed (not polled), commands as the app user, nothing denied (protocol %i)', async (protocol) => {
    await resetAclLog([...topo.sentinels], undefined);
    await resetAclLog(topo.dataNodes, ADMIN_PW);
    const name = `acl-sen-${protocol}`;
    const pool = await create({ ...USERS, protocol, clientName: name, pool: { testOnBorrow: true } });
    const polling: unknown[] = [];
    const errors: Error[] = [];
    pool.on('sentinel-polling', (e) => polling.push(e));
    pool.on('error', (e) => errors.push(e));
    expect(pool.master()).toEqual(await topo.currentMaster());
    await waitFor(() => {
      const s = pool.stats().sentinels;
      return s.length === topo.sentinels.length && s.every((x) => x.connected && !x.polling);
    }, 'every sentinel subscribed (SENTINEL sentinels adds the ones not listed)');
    await pool.set('app:s', 'v');
    expect(await pool.get('app:s')).toBe('v');
    expect(await pool.pipeline().incr('app:sn').incr('app:sn').exec()).toEqual([1, 2]);
    expect(await pool.multi().set('app:sm', 'x').get('app:sm').exec()).toEqual(['OK', 'x']);
    expect(await pool.use((l) => l.get('app:s'))).toBe('v');
    await pool.call('DEL', 'app:sn');

    expect(new Set(await usersOfClients(pool.master(), ADMIN_PW, name))).toEqual(new Set(['app']));
    expect(polling).toEqual([]);
    expect(errors).toEqual([]);
    expect(await denials(topo.sentinels, undefined, USERS.sentinelUsername)).toEqual([]);
    expect(await denials(topo.dataNodes, ADMIN_PW, 'app')).toEqual([]);
  });

  it("role: 'replica' needs sentinel|replicas on the sentinels (without it create() rejects with NOPERM) and ROLE on the replicas", async () => {
    const master = await topo.currentMaster();
    await resetAclLog([...topo.sentinels], undefined);
    await resetAclLog(topo.dataNodes, ADMIN_PW);
    // One connection: WAIT waits for this SET to reach both replicas.
    expect(await sendCommands(master, [['SET', 'app:r', 'from-master'], ['WAIT', 2, 5000]], { password: ADMIN_PW, timeoutMs: 6000 })).toEqual(['OK', 2]);
    const pool = await create({ ...USERS, role: 'replica' });
    expect(pool.stats().replicas).toHaveLength(2);
    expect(await pool.get('app:r')).toBe('from-master');
    const ro = await rejection(pool.set('app:r', 'x'));
    expect(ro).toBeInstanceOf(RedisError);
    expect((ro as RedisError).code).toBe('READONLY');
    expect(await denials(topo.sentinels, undefined, USERS.sentinelUsername)).toEqual([]);
    expect(await denials(topo.dataNodes, ADMIN_PW, 'app')).toEqual([]);

    const err = await rejection(create({ ...USERS, sentinelUsername: 'sentinel-sub', role: 'replica' }));
    expect(err).toBeInstanceOf(RedisError);
    expect((err as RedisError).code).toBe('NOPERM');
    expect(err.message).toMatch(/sentinel\|replicas/);
  });

  it('the data-node user needs ROLE: without it create() rejects at once with the NOPERM as cause (not after discoveryTimeout)', async () => {
    const t0 = Date.now();
    const err = await rejection(create({ ...USERS, username: 'app-norole', discoveryTimeout: 10_000 }));
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toMatch(/grant \+role/);
    expect(err.message).toMatch(/NOPERM/);
    expect(err.message).toMatch(/'role'/);
    expect(hasCode(err, 'NOPERM')).toBe(true);
    expectNoSecret(err);
  });

  it('a command the user may not run rejects with RedisError NOPERM; no reconnect, no re-discovery, no switch', async () => {
    const pool = await create({ ...USERS, pollInterval: 0 });
    await pool.set('app:keep', 'kept');
    await pool.use((l) => l.get('app:keep'));
    const conns = connections(pool as never);
    const events: string[] = [];
    for (const e of ['error', 'failover', 'failover-start', 'sentinel-down'] as const) pool.on(e, () => events.push(e));
    const before = pool.stats();

    for (const [what, run] of [
      ['FLUSHALL', () => pool.call('FLUSHALL')],
      ['a key outside app:*', () => pool.set('other:k', 'x')],
      ['CONFIG GET (not granted)', () => pool.call('CONFIG', 'GET', 'maxmemory')],
      ['FLUSHALL on a lease', () => pool.use((l) => l.call('FLUSHALL'))],
    ] as Array<[string, () => Promise<unknown>]>) {
      const err = await rejection(run());
      expect(err, what).toBeInstanceOf(RedisError);
      expect((err as RedisError).code, what).toBe('NOPERM');
    }
    const results = await pool.pipeline().set('app:p', 'a').set('other:p', 'b').exec();
    expect(results[0]).toBe('OK');
    expect((results[1] as RedisError).code).toBe('NOPERM');

    expect(await pool.get('app:keep')).toBe('kept');
    expect(await sendCommand(pool.master(), ['EXISTS', 'other:k', 'other:p'], { password: ADMIN_PW })).toBe(0);
    expect(conns).toEqual({ connects: 0, closes: 0 });
    expect(events).toEqual([]);
    const after = pool.stats();
    expect(after).toMatchObject({ gate: 'open', fenced: false, switches: before.switches, refreshes: before.refreshes, generation: before.generation });
    expect(after.master).toEqual(before.master);
  });

  it.each([2, 3] as const)('wrong data-node credentials: AuthenticationError at once; wrong sentinel credentials: AuthenticationError caused by AllSentinelsDownError of AuthenticationErrors; never the password (protocol %i)', async (protocol) => {
    for (const [what, opts, username] of [
      ['wrong data-node password', { ...USERS, password: WRONG_PW }, 'app'],
      ['wrong data-node user', { ...USERS, username: 'nobody' }, 'nobody'],
    ] as Array<[string, SentinelOptions, string]>) {
      const t0 = Date.now();
      const err = await rejection(create({ ...opts, protocol, discoveryTimeout: 10_000 }));
      expect(err, what).toBeInstanceOf(AuthenticationError);
      expect(err.message, what).toContain(`"${username}"`);
      expect(hasCode(err, 'WRONGPASS'), what).toBe(true);
      expect(Date.now() - t0, what).toBeLessThan(2000); // not retried until discoveryTimeout
      expectNoSecret(err);
    }
    for (const [what, opts, username] of [
      ['wrong sentinel password', { ...USERS, sentinelPassword: WRONG_PW }, 'sentinel-app'],
      ['wrong sentinel user', { ...USERS, sentinelUsername: 'nobody' }, 'nobody'],
    ] as Array<[string, SentinelOptions, string]>) {
      const err = await rejection(create({ ...opts, protocol }));
      // Refused sentinel credentials are an AuthenticationError too; its cause is the AllSentinelsDownError with each sentinel's refusal.
      expect(err, what).toBeInstanceOf(AuthenticationError);
      expect((err as Error).cause, what).toBeInstanceOf(AllSentinelsDownError);
      const agg = (err as Error).cause as AllSentinelsDownError;
      expect(agg.tried.map((a) => a.port).sort()).toEqual(topo.sentinels.map((s) => s.port).sort());
      expect(agg.errors).toHaveLength(topo.sentinels.length);
      for (const e of agg.errors) {
        expect(e, what).toBeInstanceOf(AuthenticationError);
        expect((e as Error).message).toContain(`"${username}"`);
      }
      expect(agg.message).toMatch(/sentinelUsername \/ sentinelPassword/);
      expectNoSecret(err);
    }
  });

  it('the minimal sentinel user (SUBSCRIBE on the channels, get-master-addr-by-name, sentinels) follows a SENTINEL FAILOVER by pub/sub, write fence included; without SENTINEL MASTER/REPLICAS it is refused each once, says so, and stops asking', async () => {
    await resetAclLog([...topo.sentinels], undefined);
    await resetAclLog(topo.dataNodes, ADMIN_PW);
    const pool = await create({ ...USERS, sentinelUsername: 'sentinel-sub' });
    const errors: Error[] = [];
    pool.on('error', (e) => errors.push(e));
    const starts: unknown[] = [];
    const failovers: Array<{ to: NodeAddress; detectedBy: string }> = [];
    pool.on('failover-start', (e) => starts.push(e));
    pool.on('failover', (e) => failovers.push(e));
    await waitFor(() => pool.stats().sentinels.every((s) => s.connected && !s.polling) && pool.stats().sentinels.length === 3, 'every sentinel subscribed');
    await pool.set('app:fo:before', '1');

    const from = await failover(topo.sentinels[0]!);
    expect(from).toEqual(pool.master());
    const to = await topo.waitForNewMaster(from);
    await waitFor(() => failovers.length >= 1, 'the pool to follow the failover', 20_000);
    expect(failovers[0]!.detectedBy).toBe('pubsub');
    expect(failovers[0]!.to).toEqual(to);
    expect(starts.length).toBeGreaterThanOrEqual(1); // +try-failover & co. arrived: the fence engaged
    await pool.set('app:fo:after', '2');
    expect(await sendCommand(to, ['GET', 'app:fo:after'], { password: ADMIN_PW })).toBe('2');
    // What the minimal user lacks costs one denial per sentinel (the config epoch, SENTINEL MASTER)
    // and one in all (the replicas to watch, SENTINEL REPLICAS), not one per re-check.
    const counts = await denialCounts(topo.sentinels, undefined, 'sentinel-sub');
    for (const c of counts) {
      expect([...c.keys()].every((k) => k === 'command:sentinel|master' || k === 'command:sentinel|replicas')).toBe(true);
      expect(c.get('command:sentinel|master') ?? 0).toBeLessThanOrEqual(1);
    }
    expect(counts.reduce((n, c) => n + (c.get('command:sentinel|replicas') ?? 0), 0)).toBe(1);
    const said = errors.filter((e) => /may not run SENTINEL REPLICAS/.test(e.message));
    expect(said).toHaveLength(1);
    expect(said[0]!.message).toMatch(/\+sentinel\|replicas/);
    expect(pool.stats().watchedReplicas).toEqual([]);
    expect(await denials(topo.dataNodes, ADMIN_PW, 'app')).toEqual([]);
  });

  it("a sentinel user without SUBSCRIBE is polled (sentinel-polling once per sentinel, NOPERM), its queries are all allowed, and a SENTINEL FAILOVER is fenced and followed", async () => {
    await resetAclLog([...topo.sentinels], undefined);
    const pool = await create({ ...USERS, sentinelUsername: 'sentinel-poll' });
    const polling: Array<{ address: NodeAddress; error: Error }> = [];
    const starts: Array<{ event: string }> = [];
    const failovers: Array<{ to: NodeAddress; detectedBy: string }> = [];
    pool.on('sentinel-polling', (e) => polling.push(e));
    pool.on('failover-start', (e) => starts.push(e));
    pool.on('failover', (e) => failovers.push(e));
    await waitFor(() => polling.length >= 3 && pool.stats().sentinels.every((s) => s.connected && s.polling), 'every sentinel polled');
    for (const s of topo.sentinels) {
      const mine = polling.filter((p) => p.address.port === s.port);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.error).toBeInstanceOf(RedisError);
      expect((mine[0]!.error as RedisError).code).toBe('NOPERM');
    }
    await pool.set('app:poll', '1');
    expect(await pool.get('app:poll')).toBe('1');

    const from = await failover(topo.sentinels[1]!);
    expect(from).toEqual(pool.master());
    const to = await topo.waitForNewMaster(from);
    await waitFor(() => failovers.length >= 1, 'the pool to follow the failover', 20_000);
    expect(failovers[0]!.to).toEqual(to);
    expect(['poll', 'reconnect', 'readonly', 'promotion']).toContain(failovers[0]!.detectedBy);
    // SENTINEL master showed failover_in_progress: the write fence engaged without pub/sub.
    expect(starts.map((s) => s.event)).toContain('poll:failover_in_progress');
    await pool.set('app:poll:after', '2');
    expect(await sendCommand(to, ['GET', 'app:poll:after'], { password: ADMIN_PW })).toBe('2');
    expect(polling).toHaveLength(3);
    // Only SUBSCRIBE was refused: get-master-addr-by-name, sentinels, master and replicas all ran.
    expect(await denials(topo.sentinels, undefined, 'sentinel-poll')).toEqual(['command:subscribe']);
  });
});

// ================================================================== cluster

describe('cluster: a data-node user on every node', () => {
  let topo: ClusterTopology;
  const pools: ClusterPool[] = [];
  const create = async (username: string, options: ClusterOptions = {}) => {
    const p = await ClusterPool.create(topo.seeds, { ...FAST, username, password: APP_PW, refresh: { interval: 0 }, ...options });
    pools.push(p);
    return p;
  };
  /** Keys spread over every master. */
  const keys = Array.from({ length: 12 }, (_, i) => `app:c:${i}`);

  /** set/get, MSET/MGET across slots, a cross-node pipeline and a one-slot MULTI. */
  async function exercise(pool: ClusterPool): Promise<void> {
    await pool.set('app:c:one', 'v');
    expect(await pool.get('app:c:one')).toBe('v');
    await pool.mset(Object.fromEntries(keys.map((k, i) => [k, String(i)])));
    expect(await pool.mget(...keys)).toEqual(keys.map((_, i) => String(i)));
    const res = await pool.pipeline().set(keys[0]!, 'p0').set(keys[1]!, 'p1').get(keys[0]!).get(keys[1]!).call('MGET', ...keys.slice(0, 4)).exec();
    expect(res).toEqual(['OK', 'OK', 'p0', 'p1', ['p0', 'p1', '2', '3']]);
    expect(await pool.multi().set('app:{t}.a', '1').incr('app:{t}.a').exec()).toEqual(['OK', 2]);
    expect(await pool.del(...keys)).toBe(keys.length);
  }

  beforeAll(async () => {
    topo = await startCluster({ config: { requirepass: ADMIN_PW } });
    await setUser(topo.nodes, ADMIN_PW, 'app', APP_PW, CLUSTER_RULES);
    await setUser(topo.nodes, ADMIN_PW, 'app-noshards', APP_PW, without(CLUSTER_RULES, '+cluster|shards'));
    await setUser(topo.nodes, ADMIN_PW, 'app-nocommand', APP_PW, without(CLUSTER_RULES, '+command'));
    await setUser(topo.nodes, ADMIN_PW, 'app-noasking', APP_PW, without(CLUSTER_RULES, '+asking'));
    await setUser(topo.nodes, ADMIN_PW, 'app-nosetname', APP_PW, without(CLUSTER_RULES, '+client|setname'));
    const owners = new Set(await Promise.all(keys.map(async (k) => (await topo.nodeForSlot(keySlot(k))).port)));
    expect(owners.size).toBe(3);
    // Right after the cluster forms, nodes still list the replicas as empty masters: wait until
    // every node's CLUSTER SHARDS knows the three replicas (replica reads need them).
    await waitFor(async () => {
      for (const n of topo.nodes) {
        const shards = (await sendCommand(n.address, ['CLUSTER', 'SHARDS'], { password: ADMIN_PW })) as RespValue[];
        const roles = shards.flatMap((s) => (field(s, 'nodes') as RespValue[]).map((node) => field(node, 'role')));
        if (roles.filter((r) => r === 'replica').length !== 3) return false;
      }
      return true;
    }, 'every node to list the three replicas', 20_000);
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it.each([2, 3] as const)('the documented user: slot map, live COMMAND table, commands across slots and nodes, nothing denied (protocol %i)', async (protocol) => {
    await resetAclLog(topo.nodes, ADMIN_PW);
    const name = `acl-cl-${protocol}`;
    const pool = await create('app', { protocol, clientName: name });
    const said: string[] = [];
    pool.on('error', (e) => said.push(e.message));
    await new Promise((r) => setImmediate(r));
    expect(said).toEqual([]);
    expect(pool.stats()).toMatchObject({ coveredSlots: 16384, masters: 3, nodes: 6, liveCommandTable: true });
    await exercise(pool);
    const masters = await topo.masters();
    const users = (await Promise.all(masters.map((m) => usersOfClients(m.address, ADMIN_PW, name)))).flat();
    expect(users.length).toBeGreaterThanOrEqual(3);
    expect(new Set(users)).toEqual(new Set(['app']));
    expect(await denials(topo.nodes, ADMIN_PW, 'app')).toEqual([]);
  });

  it("readFrom: 'replica' sends READONLY (granted) and reads are served by the replicas", async () => {
    await resetAclLog(topo.nodes, ADMIN_PW);
    const pool = await create('app', { readFrom: 'replica' });
    await pool.mset(Object.fromEntries(keys.map((k) => [k, 'r'])));
    // A replica that has gossiped no replication offset yet is 'loading' in CLUSTER SHARDS and skipped.
    await waitFor(async () => {
      await pool.refresh();
      const replicas = pool.nodes().filter((n) => n.role === 'replica');
      return replicas.length === 3 && replicas.every((n) => n.health === 'online');
    }, 'every replica to be reported online');
    const replicas = await topo.replicas();
    const replicaGets = async () => {
      let n = 0;
      for (const r of replicas) {
        const line = parseInfo(String(await sendCommand(r.address, ['INFO', 'commandstats'], { password: ADMIN_PW }))).get('cmdstat_mget');
        n += Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
      }
      return n;
    };
    const before = await replicaGets();
    await waitFor(async () => (await pool.mget(...keys)).every((v) => v === 'r'), 'the replicas to have the writes', 10_000);
    expect(await replicaGets()).toBeGreaterThan(before);
    await pool.del(...keys);
    expect(await denials(topo.nodes, ADMIN_PW, 'app')).toEqual([]);
  });

  it('ASK during a slot migration: the documented user follows it (ASKING); without +asking the command bounces until MaxRedirectionsError', async () => {
    const key = 'app:ask';
    const slot = keySlot(key);
    const src = await topo.nodeForSlot(slot);
    const dst = (await topo.masters()).find((m) => m.port !== src.port)!;
    const admin = { password: ADMIN_PW };
    const srcId = String(await sendCommand(src.address, ['CLUSTER', 'MYID'], admin));
    const dstId = String(await sendCommand(dst.address, ['CLUSTER', 'MYID'], admin));
    const ok = await create('app');
    const noasking = await create('app-noasking', { maxRedirections: 6 });
    await resetAclLog(topo.nodes, ADMIN_PW);
    await sendCommand(dst.address, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', srcId], admin);
    await sendCommand(src.address, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', dstId], admin);
    try {
      const asks: unknown[] = [];
      ok.on('ask', (e) => asks.push(e));
      // The key is not on the source any more: ASK to the importing node, then ASKING + GET there.
      expect(await ok.get(key)).toBeNull();
      expect(asks).toHaveLength(1);
      expect(await denials(topo.nodes, ADMIN_PW, 'app')).toEqual([]);

      const err = await rejection(noasking.get(key));
      expect(err).toBeInstanceOf(MaxRedirectionsError);
      expect((err as MaxRedirectionsError).attempts.map((a) => a.kind)).toContain('ask');
      expect(await denials(topo.nodes, ADMIN_PW, 'app-noasking')).toEqual(['command:asking']);
    } finally {
      await sendCommand(src.address, ['CLUSTER', 'SETSLOT', slot, 'STABLE'], admin);
      await sendCommand(dst.address, ['CLUSTER', 'SETSLOT', slot, 'STABLE'], admin);
    }
  });

  it('(ii) a user denied cluster|shards gets the slot map from CLUSTER SLOTS', async () => {
    await resetAclLog(topo.nodes, ADMIN_PW);
    const pool = await create('app-noshards');
    // (Redis 7.0's CLUSTER SLOTS omits the replicas for ~10 s after the cluster formed: masters only.)
    expect(pool.stats()).toMatchObject({ coveredSlots: 16384, masters: 3 });
    await exercise(pool);
    await pool.refresh();
    expect(pool.stats().coveredSlots).toBe(16384);
    // Asked once, then CLUSTER SLOTS only.
    expect(await denials(topo.nodes, ADMIN_PW, 'app-noshards')).toEqual(['command:cluster|shards']);
  });

  it('a data-connection handshake the user may not run (CLIENT SETNAME under RESP2) fails create() at once, naming the step', async () => {
    const t0 = Date.now();
    const err = await rejection(create('app-nosetname', { clientName: 'acl-nosetname', protocol: 2 }));
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toMatch(/CLIENT SETNAME/);
    expect(hasCode(err, 'NOPERM')).toBe(true);
  });

  it('(iii) a user denied COMMAND works with the built-in command table: an error event says so, stats().liveCommandTable is false', async () => {
    await resetAclLog(topo.nodes, ADMIN_PW);
    // The error event comes right after create() resolves, so a listener attached then hears it.
    const pool = await create('app-nocommand');
    const said: Error[] = [];
    pool.on('error', (e) => said.push(e));
    await waitFor(() => said.length > 0, 'the built-in table error event');
    expect(said).toHaveLength(1);
    expect(said[0]!.message).toMatch(/built-in command table/);
    expect(hasCode(said[0], 'NOPERM')).toBe(true);
    expect(pool.stats().liveCommandTable).toBe(false);
    await exercise(pool); // key positions (MSET/MGET split, pipeline routing) from the built-in table
    expect(await denials(topo.nodes, ADMIN_PW, 'app-nocommand')).toEqual(['command:command']);

    // loadCommandTable: false does not ask at all.
    await resetAclLog(topo.nodes, ADMIN_PW);
    const quiet = await create('app-nocommand', { loadCommandTable: false });
    expect(quiet.stats().liveCommandTable).toBe(false);
    expect(await quiet.mget(...keys)).toEqual(keys.map(() => null));
    expect(await denials(topo.nodes, ADMIN_PW, 'app-nocommand')).toEqual([]);
  });

  it('a command the user may not run rejects with RedisError NOPERM; no reconnect, no redirect, no refresh', async () => {
    const pool = await create('app');
    await pool.mset(Object.fromEntries(keys.map((k) => [k, 'kept'])));
    expect(await pool.mget(...keys)).toEqual(keys.map(() => 'kept'));
    await pool.use((l) => l.get(keys[0]!), { key: keys[0] }); // the exclusive connection exists before counting
    const conns = connections(pool as never);
    const events: string[] = [];
    for (const e of ['error', 'node-error', 'topology', 'moved', 'ask'] as const) pool.on(e, () => events.push(e));
    const before = pool.stats();

    for (const [what, run] of [
      ['FLUSHALL (sent to every master)', () => pool.call('FLUSHALL')],
      ['a key outside app:*', () => pool.set('other:k', 'x')],
      ['a read outside app:*', () => pool.get('other:k')],
      ['CONFIG GET (not granted)', () => pool.call('CONFIG', 'GET', 'maxmemory')],
      ['FLUSHALL on a lease', () => pool.use((l) => l.call('FLUSHALL'), { key: keys[0] })],
    ] as Array<[string, () => Promise<unknown>]>) {
      const err = await rejection(run());
      expect(err, what).toBeInstanceOf(RedisError);
      expect((err as RedisError).code, what).toBe('NOPERM');
    }
    const results = await pool.pipeline().set(keys[0]!, 'a').set('other:p', 'b').get(keys[0]!).exec();
    expect(results[0]).toBe('OK');
    expect((results[1] as RedisError).code).toBe('NOPERM');
    expect(results[2]).toBe('a');

    expect(await pool.mget(...keys.slice(1))).toEqual(keys.slice(1).map(() => 'kept'));
    expect(conns).toEqual({ connects: 0, closes: 0 });
    expect(events).toEqual([]);
    const after = pool.stats();
    expect(after.redirects).toEqual(before.redirects);
    expect(after.refreshes).toBe(before.refreshes);
    await pool.del(...keys);
  });

  it.each([2, 3] as const)('a wrong password or user name is an AuthenticationError from create(), cause kept, never the password (protocol %i)', async (protocol) => {
    for (const [what, opts, username] of [
      ['wrong password', { username: 'app', password: WRONG_PW }, 'app'],
      ['wrong user name', { username: 'nobody', password: APP_PW }, 'nobody'],
      ['wrong password in the seed URL', {}, 'app'],
    ] as Array<[string, ClusterOptions, string]>) {
      const seeds = what.includes('URL') ? [`redis://app:${WRONG_PW}@${topo.seeds[0]!.host}:${topo.seeds[0]!.port}`] : topo.seeds;
      const t0 = Date.now();
      const err = await rejection(ClusterPool.create(seeds, { ...FAST, protocol, ...opts }));
      expect(err, what).toBeInstanceOf(AuthenticationError);
      expect(err.message, what).toContain(`"${username}"`);
      expect(err.cause, what).toBeDefined();
      expect(hasCode(err, 'WRONGPASS'), what).toBe(true);
      expect(Date.now() - t0, what).toBeLessThan(2000);
      expectNoSecret(err);
    }
  });
});
