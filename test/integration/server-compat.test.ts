/**
 * What differs between the servers users run (Redis 6.2 to 8.0, Valkey 7.2 and 8.0), against
 * whichever one REDIS_BIN_DIR selects (`npm run test:servers` runs this file on each):
 *
 * - the pool names itself with CLIENT SETINFO where the server has it (Redis >= 7.2, Valkey):
 *   `CLIENT LIST` shows `lib-name=redis-ha-pool` and `lib-ver=<package version>`, with
 *   `clientInfoTag` as `redis-ha-pool(<tag>)`, nothing with `disableClientInfo`; on 6.2 and
 *   7.0 the refusal is ignored and CLIENT SETNAME still names the connections;
 * - HELLO 3 with AUTH (default user and an ACL user) works on every server, 6.x included;
 * - a cluster builds its map with CLUSTER SHARDS, or CLUSTER SLOTS where there is none (6.2),
 *   and fans FLUSHALL/DBSIZE/SCRIPT LOAD out to every master on both (6.2's COMMAND has no tips).
 *
 * Tests that need a feature the server lacks are skipped by name with the reason.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, StandalonePool, keySlot } from '../../src/index.js';
import { PACKAGE_VERSION } from '../../src/version.js';
import { server } from '../support/server-features.js';
import { startCluster, startStandalone, type ClusterTopology, type StandaloneTopology } from '../support/topology.js';

const PASSWORD = randomBytes(12).toString('hex');
const APP = { username: 'app', password: randomBytes(12).toString('hex') };

/** The `CLIENT LIST` fields of the connections named `name`. */
async function clientsNamed(topo: StandaloneTopology, name: string): Promise<Array<Map<string, string>>> {
  const out = await topo.server.cli('CLIENT', 'LIST');
  return out
    .split('\n')
    .map((line) => new Map(line.trim().split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string])))
    .filter((f) => f.get('name') === name);
}

describe(`standalone on ${server.label}`, () => {
  let topo: StandaloneTopology;
  const pools: StandalonePool[] = [];
  const open = async (o: Parameters<typeof StandalonePool.create>[1]) => {
    const p = await StandalonePool.create(topo.address, { password: PASSWORD, ...o });
    pools.push(p);
    return p;
  };

  beforeAll(async () => {
    topo = await startStandalone({ password: PASSWORD, acl: [`user ${APP.username} on >${APP.password} ~* &* +@all`] });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await topo?.stop();
  });

  it.skipIf(!server.has('client-setinfo'))(`CLIENT LIST shows lib-name=redis-ha-pool and lib-ver on every connection, under RESP2 and RESP3 ${server.needs('client-setinfo')}`, async () => {
    for (const protocol of [2, 3] as const) {
      const name = `compat-ident-${protocol}`;
      const p = await open({ clientName: name, protocol });
      expect(await p.call('PING')).toBe('PONG');
      const clients = await clientsNamed(topo, name);
      expect(clients.length).toBeGreaterThan(0);
      for (const c of clients) {
        expect(c.get('lib-name')).toBe('redis-ha-pool');
        expect(c.get('lib-ver')).toBe(PACKAGE_VERSION);
      }
    }
  });

  it.skipIf(!server.has('client-setinfo'))(`clientInfoTag shows as redis-ha-pool(<tag>); disableClientInfo sends nothing ${server.needs('client-setinfo')}`, async () => {
    const tagged = await open({ clientName: 'compat-tagged', clientInfoTag: 'billing-api' });
    const silent = await open({ clientName: 'compat-silent', disableClientInfo: true });
    await Promise.all([tagged.call('PING'), silent.call('PING')]);
    const t = await clientsNamed(topo, 'compat-tagged');
    expect(t.length).toBeGreaterThan(0);
    for (const c of t) expect(c.get('lib-name')).toBe('redis-ha-pool(billing-api)');
    const s = await clientsNamed(topo, 'compat-silent');
    expect(s.length).toBeGreaterThan(0);
    for (const c of s) {
      expect(c.get('lib-name')).toBe('');
      expect(c.get('lib-ver')).toBe('');
    }
  });

  it(`${server.has('client-setinfo') ? 'CLIENT SETINFO accepted' : `CLIENT SETINFO refused by ${server.label} (it has none)`}: the pool connects, CLIENT SETNAME names it, commands run, and nothing was logged as denied`, async () => {
    const errors: unknown[] = [];
    const p = await open({ clientName: 'compat-any' });
    p.on('error', (e) => errors.push(e));
    expect(await p.set('compat:k', 'v')).toBe('OK');
    expect(await p.get('compat:k')).toBe('v');
    expect((await clientsNamed(topo, 'compat-any')).length).toBeGreaterThan(0);
    // The library's identification is never an application-visible fault.
    expect(errors).toEqual([]);
    const unknown = await topo.server.cli('CLIENT', 'SETINFO', 'LIB-NAME', 'probe').then(() => false, (e: Error) => /unknown subcommand|Unknown subcommand/i.test(e.message));
    expect(unknown).toBe(!server.has('client-setinfo'));
  });

  it.each([
    ['the default user', {}],
    ['an ACL user', APP],
  ])(`HELLO 3 with AUTH as %s connects on ${server.label} (RESP3 maps come back as Map)`, async (_who, creds) => {
    const p = await open({ protocol: 3, ...creds });
    await p.hset('compat:h', { a: '1' });
    const raw = await p.call('HGETALL', 'compat:h');
    expect(raw).toBeInstanceOf(Map);
    expect(await p.call('ACL', 'WHOAMI')).toBe('username' in creds ? APP.username : 'default');
  });
});

describe(`cluster on ${server.label}`, () => {
  let topo: ClusterTopology;
  let pool: ClusterPool;

  beforeAll(async () => {
    // An ACL user that may not run COMMAND: its pool routes with the built-in command table.
    topo = await startCluster({ masters: 3, replicasPerMaster: 0, acl: [`user ${APP.username} on >${APP.password} ~* &* +@all -command`] });
    pool = await ClusterPool.create(topo.seeds);
  }, 120_000);

  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it(`builds its slot map from ${server.has('cluster-shards') ? 'CLUSTER SHARDS' : 'CLUSTER SLOTS (no CLUSTER SHARDS here)'}; FLUSHALL and DBSIZE reach every master`, async () => {
    expect(pool.stats().coveredSlots).toBe(16384);
    // CLUSTER SLOTS carries no health; CLUSTER SHARDS does.
    const health = new Set(pool.nodes().map((n) => n.health));
    expect(health).toEqual(new Set([server.has('cluster-shards') ? 'online' : 'unknown']));
    await pool.mset(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`compat:${i}`, 'x'])));
    expect(await pool.call('DBSIZE')).toBe(30);
    await pool.call('FLUSHALL');
    for (const m of await topo.masters()) expect(await m.cli('DBSIZE')).toBe('0');
    expect(await pool.call('DBSIZE')).toBe(0);
  });

  it('RANDOMKEY answers one key of any master (response_policy:special from 7.2 on, none before), or null when there is none', async () => {
    await pool.call('FLUSHALL');
    expect(await pool.call('RANDOMKEY')).toBe(null);
    await pool.set('compat:only', '1');
    // Whatever master answers first: the one key, never an array of per-node replies.
    for (let i = 0; i < 5; i++) expect(await pool.call('RANDOMKEY')).toBe('compat:only');
    await pool.call('FLUSHALL');
  });

  it.skipIf(!server.has('hash-field-expiry'))(`hash-field expiry (HEXPIRE, HTTL, HPEXPIRETIME, HPERSIST) routes by key with the built-in command table, COMMAND denied: no MOVED ${server.needs('hash-field-expiry')}`, async () => {
    const p = await ClusterPool.create(topo.seeds, APP);
    const errors: Error[] = [];
    p.on('error', (e) => errors.push(e));
    try {
      expect(p.stats().liveCommandTable).toBe(false);
      // Keys on every master: a command routed to "any master" would be redirected for most of them.
      const keys = Array.from({ length: 30 }, (_, i) => `hfe:${i}`);
      const owners = new Set<number>();
      for (const k of keys) owners.add((await topo.nodeForSlot(keySlot(k))).port);
      expect(owners.size).toBe(3);
      for (const k of keys) await p.call('HSET', k, 'f', '1', 'g', '2');
      const before = p.stats().redirects.moved;
      for (const k of keys) {
        expect(await p.call('HEXPIRE', k, 100, 'FIELDS', 1, 'f')).toEqual([1]);
        const [ttl] = (await p.call('HTTL', k, 'FIELDS', 1, 'f')) as number[];
        expect(ttl).toBeGreaterThan(0);
        const [at] = (await p.call('HPEXPIRETIME', k, 'FIELDS', 1, 'f')) as number[];
        expect(at).toBeGreaterThan(Date.now());
        expect(await p.call('HPERSIST', k, 'FIELDS', 1, 'f')).toEqual([1]);
      }
      expect(p.stats().redirects.moved - before).toBe(0);
      expect(errors.map((e) => e.message).join('\n')).toMatch(/COMMAND failed .*built-in command table/);
    } finally {
      await p.close();
    }
  });
});
