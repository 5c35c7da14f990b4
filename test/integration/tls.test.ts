/**
 * TLS in all three modes against real TLS-only servers (`port 0`, `tls-port`, certificates
 * made by `makeTestCerts()` with the openssl CLI):
 *
 * - Standalone: commands, pipelines, MULTI and leases over TLS; `rediss://`; the host name
 *   checked against the DNS SAN and an IP against the IP SAN.
 * - Verification on by default: an untrusted CA, a wrong host name and an expired certificate
 *   each fail `create()` at once with a `ConnectionError` carrying Node's TLS error; a plain
 *   port reached with TLS and a TLS port reached without it say what is wrong.
 * - Mutual TLS (`tls-auth-clients yes`), with and without a client certificate.
 * - Option validation of TLS options.
 * - Sentinel with data nodes and sentinels on TLS (`tls` and `sentinelTls`), including a
 *   `SENTINEL FAILOVER` under write load.
 * - Cluster (3 masters, 3 replicas, `tls-cluster yes`): the slot map on the TLS ports from
 *   `CLUSTER SHARDS` and from the `CLUSTER SLOTS` fallback, cross-slot commands, a cross-node
 *   pipeline and a `CLUSTER FAILOVER` under load.
 *
 * Topologies are shared per describe block. Nothing sleeps for a fixed time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AllSentinelsDownError,
  ClusterPool,
  ConnectionError,
  SentinelPool,
  StandalonePool,
  UncertainWriteError,
  keySlot,
  type ClusterOptions,
  type SentinelOptions,
  type StandaloneOptions,
} from '../../src/index.js';
import { failoverTo } from '../support/cluster-ops.js';
import { server } from '../support/server-features.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { ReplyError, type RespValue } from '../support/resp-wire.js';
import { EventLog, isReadonly, missingOn, roleOf, startWrites } from '../support/sentinel-helpers.js';
import {
  makeTestCerts,
  startCluster,
  startSentinel,
  startStandalone,
  waitFor,
  type ClusterTopology,
  type SentinelTopology,
  type StandaloneTopology,
  type TestCerts,
} from '../support/topology.js';

let certs: TestCerts;

beforeAll(async () => {
  certs = await makeTestCerts();
});

function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** Every message and `code` along an error's cause chain, for assertion messages. */
function describeChain(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: unknown; message?: unknown; code?: unknown };
    parts.push(`${String(x.name ?? typeof e)}${x.code !== undefined ? `[${String(x.code)}]` : ''}: ${String(x.message ?? e)}`);
  }
  return parts.join(' <- ');
}

/** Runs `create`, expects it to reject, and returns the error and how long it took. */
async function rejection(create: () => Promise<{ close(): Promise<void> }>): Promise<{ error: unknown; ms: number }> {
  const t0 = Date.now();
  const r = await settle(create());
  const ms = Date.now() - t0;
  if (r.ok) {
    await r.value.close();
    throw new Error(`create() succeeded after ${ms} ms; expected it to reject`);
  }
  return { error: r.error, ms };
}

// ====================================================================== standalone

/**
 * Node's codes for a certificate no trusted CA signed. Redis sends the CA along with its
 * certificate (OpenSSL builds the chain from tls-ca-cert-file), so a client that does not
 * trust it usually sees SELF_SIGNED_CERT_IN_CHAIN; with the leaf alone it would be
 * UNABLE_TO_VERIFY_LEAF_SIGNATURE.
 */
const UNTRUSTED = ['SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'];

describe('Standalone over TLS', () => {
  let good: StandaloneTopology;
  let mutual: StandaloneTopology;
  let expired: StandaloneTopology;
  let wrongHost: StandaloneTopology;
  let plain: StandaloneTopology;
  const pools: StandalonePool[] = [];

  async function create(address: string, options: StandaloneOptions = {}): Promise<StandalonePool> {
    const p = await StandalonePool.create(address, options);
    pools.push(p);
    return p;
  }

  const hostPort = (t: StandaloneTopology, host = '127.0.0.1') => `${host}:${t.address.port}`;

  beforeAll(async () => {
    const started = await Promise.allSettled([
      startStandalone({ tls: { certs } }),
      startStandalone({ tls: { certs, authClients: true } }),
      startStandalone({ tls: { certs, serverCert: 'expired' } }),
      startStandalone({ tls: { certs, serverCert: 'wrong-host' } }),
      startStandalone(),
    ]);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
      throw failed.reason;
    }
    [good, mutual, expired, wrongHost, plain] = started.map((r) => (r as PromiseFulfilledResult<StandaloneTopology>).value) as StandaloneTopology[];
  });

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await Promise.all([good, mutual, expired, wrongHost, plain].map((t) => t?.stop()));
  });

  it("create('127.0.0.1:<tls-port>', { tls: { ca } }): commands, a pipeline, MULTI and a lease all run over TLS", async () => {
    // The server has `port 0`: it has no plain-TCP listener, so whatever works here went over TLS.
    expect(await good.server.cli('CONFIG', 'GET', 'port')).toBe('port\n0');
    const pool = await create(hostPort(good), { tls: { ca: certs.ca.cert } });
    expect(await pool.call('PING')).toBe('PONG');
    expect(await pool.set('tls:sa:k', 'v1')).toBe('OK');
    expect(await pool.get('tls:sa:k')).toBe('v1');
    // Read back by the harness's own TLS client: the write reached the server.
    expect(await sendCommand(good.address, ['GET', 'tls:sa:k'])).toBe('v1');

    const results = await pool.pipeline().set('tls:sa:n', 1).incr('tls:sa:n').get('tls:sa:n').call('LPUSH', 'tls:sa:n', 'x').exec();
    expect(results.slice(0, 3)).toEqual(['OK', 2, '2']);
    expect(results[3]).toBeInstanceOf(Error);
    expect(String(results[3])).toMatch(/WRONGTYPE/);

    expect(await pool.multi().set('tls:sa:m', 'a').call('APPEND', 'tls:sa:m', 'b').get('tls:sa:m').exec()).toEqual(['OK', 2, 'ab']);

    const leased = await pool.use(async (lease) => {
      await lease.call('WATCH', 'tls:sa:w');
      const before = await lease.get('tls:sa:w');
      const tx = await lease.multi().set('tls:sa:w', 'leased').exec();
      return { before, tx };
    });
    expect(leased).toEqual({ before: null, tx: ['OK'] });
    expect(await pool.get('tls:sa:w')).toBe('leased');

    // Bulk traffic over one TLS lane: many pipelined commands, replies in order.
    const many = Array.from({ length: 2000 }, (_, i) => pool.set(`tls:sa:bulk:${i}`, String(i)));
    expect((await Promise.all(many)).every((r) => r === 'OK')).toBe(true);
    expect(await pool.mget('tls:sa:bulk:0', 'tls:sa:bulk:1999')).toEqual(['0', '1999']);
  });

  it('a rediss:// URL turns TLS on (with tls: { ca } for the CA; without it the server certificate is not trusted)', async () => {
    expect(good.url).toBe(`rediss://127.0.0.1:${good.address.port}`);
    const pool = await create(good.url, { tls: { ca: certs.ca.cert } });
    expect(await pool.set('tls:url', 'u')).toBe('OK');
    expect(await sendCommand(good.address, ['GET', 'tls:url'])).toBe('u');

    // rediss:// alone: TLS is on (a certificate verification error, not a plain-TCP failure).
    const { error } = await rejection(() => StandalonePool.create(good.url, { connectTimeout: 10_000 }));
    expect(error, describeChain(error)).toBeInstanceOf(ConnectionError);
    expect(UNTRUSTED, describeChain(error)).toContain(((error as Error).cause as NodeJS.ErrnoException | undefined)?.code);
  });

  it('the host name is checked: localhost against the DNS SAN, 127.0.0.1 against the IP SAN, servername overrides it', async () => {
    const byName = await create(hostPort(good, 'localhost'), { tls: { ca: certs.ca.cert } });
    expect(await byName.set('tls:host:name', '1')).toBe('OK');
    expect(byName.address).toEqual({ host: 'localhost', port: good.address.port });

    const byIp = await create(hostPort(good), { tls: { ca: certs.ca.cert } });
    expect(await byIp.get('tls:host:name')).toBe('1');

    // The wrong-host certificate names only wrong.example: with servername set to it, it verifies.
    const overridden = await create(hostPort(wrongHost), { tls: { ca: certs.ca.cert, servername: 'wrong.example' } });
    expect(await overridden.call('PING')).toBe('PONG');
  });

  describe('verification is on by default', () => {
    const CONNECT_TIMEOUT = 10_000;
    const cases: Array<{ what: string; target: () => StandaloneTopology; host?: string; tls: () => StandaloneOptions['tls']; codes: string[] }> = [
      {
        what: 'no ca option (the test CA is not among the system roots)',
        target: () => good,
        tls: () => true,
        codes: UNTRUSTED,
      },
      {
        what: 'another CA than the one that signed the server certificate',
        target: () => good,
        tls: () => ({ ca: certs.otherCa.cert }),
        codes: UNTRUSTED,
      },
      {
        what: 'a certificate for another host name, reached by IP',
        target: () => wrongHost,
        tls: () => ({ ca: certs.ca.cert }),
        codes: ['ERR_TLS_CERT_ALTNAME_INVALID'],
      },
      {
        what: 'a certificate for another host name, reached as localhost',
        target: () => wrongHost,
        host: 'localhost',
        tls: () => ({ ca: certs.ca.cert }),
        codes: ['ERR_TLS_CERT_ALTNAME_INVALID'],
      },
      {
        what: 'an expired certificate',
        target: () => expired,
        tls: () => ({ ca: certs.ca.cert }),
        codes: ['CERT_HAS_EXPIRED'],
      },
    ];

    for (const c of cases) {
      it(`${c.what}: create() rejects at once with a ConnectionError whose cause is the TLS error`, async () => {
        const { error, ms } = await rejection(() =>
          StandalonePool.create(hostPort(c.target(), c.host), { tls: c.tls(), connectTimeout: CONNECT_TIMEOUT, commandTimeout: CONNECT_TIMEOUT }),
        );
        const chain = describeChain(error);
        expect(error, chain).toBeInstanceOf(ConnectionError);
        expect(error, chain).not.toBeInstanceOf(UncertainWriteError);
        // Not retried until a deadline hides it: it fails on the first handshake.
        expect(ms, chain).toBeLessThan(CONNECT_TIMEOUT / 2);
        const cause = (error as Error).cause as NodeJS.ErrnoException | undefined;
        expect(cause, chain).toBeInstanceOf(Error);
        expect(c.codes, chain).toContain(cause!.code);
        expect((error as Error).message, chain).toMatch(/TLS/);
      });
    }
  });

  it('a plain-TCP port reached with tls: rejects within about connectTimeout, saying the TLS handshake got no answer', async () => {
    const connectTimeout = 1500;
    const { error, ms } = await rejection(() =>
      StandalonePool.create(hostPort(plain), { tls: { ca: certs.ca.cert }, connectTimeout, commandTimeout: connectTimeout }),
    );
    const chain = describeChain(error);
    expect(error, chain).toBeInstanceOf(Error);
    expect(ms, chain).toBeLessThan(connectTimeout + 1500);
    expect((error as Error).message, chain).toMatch(/TLS/);
    expect((error as Error).message, chain).toMatch(/speak TLS|plain/i);
    // The plain server is fine for plain clients.
    const pool = await create(plain.url);
    expect(await pool.call('PING')).toBe('PONG');
  });

  it('a TLS port reached without tls: rejects with a ConnectionError (not an UncertainWriteError) that suggests the tls option', async () => {
    const { error, ms } = await rejection(() => StandalonePool.create(hostPort(good), { connectTimeout: 10_000, commandTimeout: 10_000 }));
    const chain = describeChain(error);
    expect(error, chain).toBeInstanceOf(ConnectionError);
    expect(error, chain).not.toBeInstanceOf(UncertainWriteError);
    expect((error as Error).message, chain).toMatch(/\btls\b/);
    expect(ms, chain).toBeLessThan(5000);
  });

  describe('mutual TLS (tls-auth-clients yes)', () => {
    it('works with the client certificate and key', async () => {
      const pool = await create(hostPort(mutual), { tls: { ca: certs.ca.cert, cert: certs.client.cert, key: certs.client.key } });
      expect(await pool.set('tls:mtls', 'ok')).toBe('OK');
      expect(await pool.get('tls:mtls')).toBe('ok');
      expect(await pool.pipeline().incr('tls:mtls:n').incr('tls:mtls:n').exec()).toEqual([1, 2]);
      expect(await sendCommand(mutual.address, ['GET', 'tls:mtls'])).toBe('ok');
    });

    it('without a client certificate: a ConnectionError naming the handshake and the certificate, never an UncertainWriteError', async () => {
      const connectTimeout = 10_000;
      const { error, ms } = await rejection(() =>
        StandalonePool.create(hostPort(mutual), { tls: { ca: certs.ca.cert }, connectTimeout, commandTimeout: connectTimeout }),
      );
      const chain = describeChain(error);
      expect(error, chain).toBeInstanceOf(ConnectionError);
      expect(error, chain).not.toBeInstanceOf(UncertainWriteError);
      expect((error as Error).message, chain).toMatch(/handshake/i);
      expect((error as Error).message, chain).toMatch(/certificate/i);
      expect(ms, chain).toBeLessThan(connectTimeout / 2);
    });
  });
});

// ====================================================================== option validation

describe('TLS options of the wrong type', () => {
  // Nothing listens on port 1: a TypeError must come before any connection attempt.
  it('fail create() at once with a TypeError naming the option, in every mode', async () => {
    const cases: Array<{ run: () => Promise<unknown>; name: RegExp }> = [
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: 'yes' as never }), name: /\btls\b/ },
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: 1 as never }), name: /\btls\b/ },
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: { ca: 5 as never } }), name: /\btls\.ca\b/ },
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: { cert: certs.client.cert, key: 7 as never } }), name: /\btls\.key\b/ },
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: { servername: 5 as never } }), name: /\btls\.servername\b/ },
      { run: () => StandalonePool.create('127.0.0.1:1', { tls: { rejectUnauthorized: 'no' as never } }), name: /\btls\.rejectUnauthorized\b/ },
      { run: () => SentinelPool.create('m', ['127.0.0.1:1'], { tls: { ca: 5 as never } }), name: /\btls\.ca\b/ },
      { run: () => SentinelPool.create('m', ['127.0.0.1:1'], { sentinelTls: 'yes' as never }), name: /\bsentinelTls\b/ },
      { run: () => SentinelPool.create('m', ['127.0.0.1:1'], { sentinelTls: { ca: 5 as never } }), name: /\bsentinelTls\.ca\b/ },
      { run: () => ClusterPool.create(['127.0.0.1:1'], { tls: { ca: 5 as never } }), name: /\btls\.ca\b/ },
    ];
    for (const c of cases) {
      const t0 = Date.now();
      const r = await settle(c.run());
      const error = r.ok ? undefined : r.error;
      expect(error, `${c.name}: ${describeChain(error)}`).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(c.name);
      expect(Date.now() - t0).toBeLessThan(500);
    }
  });
});

// ====================================================================== sentinel

describe('Sentinel over TLS', () => {
  let topo: SentinelTopology;
  const pools: SentinelPool[] = [];
  let tlsOptions: SentinelOptions;

  async function create(options: SentinelOptions = tlsOptions, sentinels: Array<string | { host: string; port: number }> = topo.sentinelAddresses): Promise<SentinelPool> {
    const p = await SentinelPool.create(topo.masterName, sentinels, options);
    pools.push(p);
    return p;
  }

  beforeAll(async () => {
    topo = await startSentinel({ tls: { certs }, downAfterMs: 1000, failoverTimeoutMs: 5000 });
    tlsOptions = { tls: { ca: certs.ca.cert }, sentinelTls: { ca: certs.ca.cert } };
  });

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  afterAll(async () => {
    await topo?.stop();
  });

  it('discovers the master through TLS-only sentinels, follows them on every sentinel, and writes to it over TLS', async () => {
    // Every node and sentinel listens on TLS only: plain TCP gets no PONG from any of them.
    for (const n of [...topo.dataNodes, ...topo.sentinels]) {
      const plainPing = await settle(sendCommand(n.address, ['PING'], { tls: false, timeoutMs: 2000 }));
      expect(plainPing.ok, `${n.kind} ${n.port} answered plain TCP`).toBe(false);
      expect(await sendCommand(n.address, ['PING'])).toBe('PONG');
    }
    const pool = await create();
    const current = await topo.currentMaster();
    expect(pool.master()).toEqual(current);
    expect(await roleOf(pool.master())).toBe('master');
    expect(await pool.set('tls:sen:k', 'v')).toBe('OK');
    expect(await pool.get('tls:sen:k')).toBe('v');
    expect(await sendCommand(current, ['GET', 'tls:sen:k'])).toBe('v');
    expect(await pool.pipeline().set('tls:sen:a', '1').get('tls:sen:a').exec()).toEqual(['OK', '1']);
    expect(await pool.multi().incr('tls:sen:n').incr('tls:sen:n').exec()).toEqual([1, 2]);
    // A subscriber loop over TLS on every sentinel.
    await waitFor(() => {
      const s = pool.stats().sentinels;
      return s.length >= 3 && s.every((x) => x.connected);
    }, 'a connected subscriber loop on each of the 3 sentinels');
  });

  it('rediss:// sentinel URLs turn sentinelTls on (and a plain redis:// URL leaves it off)', async () => {
    const urls = (scheme: string) => topo.sentinelAddresses.map((a) => `${scheme}://${a.host}:${a.port}`);
    // rediss:// with no sentinelTls: TLS is used, so the sentinels' certificate must verify, and without the CA it does not.
    const { error } = await rejection(() => create({ tls: { ca: certs.ca.cert }, discoveryTimeout: 5000 }, urls('rediss')));
    expect(describeChain(error)).toMatch(/certificate|TLS/i);
    expect(describeChain(error)).not.toMatch(/it may have executed/);
    // With the CA for the sentinels as well, the same URLs work.
    const pool = await create({ tls: { ca: certs.ca.cert }, sentinelTls: { ca: certs.ca.cert } }, urls('rediss'));
    expect(await pool.set('tls:sen:url', 'v')).toBe('OK');
  });

  it('data nodes on TLS reached without tls: create() says to set tls, never "it may have executed"', async () => {
    const { error } = await rejection(() => create({ sentinelTls: { ca: certs.ca.cert }, discoveryTimeout: 1500 }));
    const chain = describeChain(error);
    expect(chain).toMatch(/set the tls option/);
    expect(chain).not.toMatch(/it may have executed/);
  });

  it('sentinelTls is separate from tls: with tls for the data nodes only, no sentinel can be reached', async () => {
    const { error } = await rejection(() => create({ tls: { ca: certs.ca.cert }, discoveryTimeout: 5000 }));
    expect(error, describeChain(error)).toBeInstanceOf(AllSentinelsDownError);
  });

  it('SENTINEL FAILOVER under 20 writers over TLS: no failed write, one failover event, every acknowledged write on the new master', async () => {
    const from = await topo.currentMaster();
    const pool = await create({ ...tlsOptions, clientName: 'tls-fo' });
    const log = new EventLog(pool);
    await waitFor(() => pool.stats().sentinels.filter((s) => s.connected).length >= 3, 'all subscriber loops connected');

    const view = pool.with({ idempotent: true });
    const load = startWrites((k, v) => view.set(k, v), 20, 'tls-fo');
    await load.waitForAcks(1000, 'writes before the failover');

    const t0 = Date.now();
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    await waitFor(() => log.failover.length >= 1, 'the failover event', 30_000);
    const to = await topo.waitForNewMaster(from);
    await load.waitForAcks(1000, 'writes after the failover event');
    await load.stop();
    // (Not waiting for the old master to be reported as a linked replica: Sentinel's 10 s INFO
    // rounds make that take 10-20 s, and it says nothing about the client.)
    const lost = await missingOn(to, load.acks);
    const ev = log.failover[0]!;
    console.log(
      `TLS SENTINEL FAILOVER under load: ${load.acks.length} acknowledged writes, ${load.failures.length} failed, ` +
        `${lost.length} acknowledged but missing on the new master; failover event at +${ev.at - t0} ms (${log.describeFailovers()})`,
    );
    expect(load.failures.map((f) => describeChain(f.error)).slice(0, 5)).toEqual([]);
    expect(load.failures.filter((f) => isReadonly(f.error))).toEqual([]);
    expect(log.failover).toHaveLength(1);
    expect(ev.info.from).toEqual(from);
    expect(ev.info.to).toEqual(to);
    expect(pool.master()).toEqual(to);
    expect(lost.map((a) => a.key).slice(0, 10)).toEqual([]);
    // The pool keeps working on the new master, over TLS.
    expect(await pool.set('tls:sen:after', '1')).toBe('OK');
    expect(await sendCommand(to, ['GET', 'tls:sen:after'])).toBe('1');
  });
});

// ====================================================================== cluster

describe('Cluster over TLS (3 masters, 3 replicas, tls-cluster yes)', () => {
  const APP = { username: 'app', password: 'app-secret' };
  let topo: ClusterTopology;
  let pool: ClusterPool;
  let tlsPorts: Set<number>;
  const seeds = () => topo.seeds.map((s) => `${s.host}:${s.port}`);
  const base = (): ClusterOptions => ({ tls: { ca: certs.ca.cert }, commandTimeout: 20_000, refresh: { interval: 1000 } });

  beforeAll(async () => {
    topo = await startCluster({
      tls: { certs },
      nodeTimeoutMs: 1000,
      // A user that may not run CLUSTER SHARDS: the client must fall back to CLUSTER SLOTS.
      // Redis 6.2 has no CLUSTER SHARDS (the ACL rule would stop it from starting): the fallback is then forced anyway.
      acl: [`user ${APP.username} on >${APP.password} ~* &* +@all${server.has('cluster-shards') ? ' -cluster|shards' : ''}`],
    });
    tlsPorts = new Set(topo.nodes.map((n) => n.port));
    pool = await ClusterPool.create(seeds(), base());
  });

  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  /** The pool's view: every node's port, and the masters' ports. */
  const view = (p: ClusterPool) => ({
    all: p.nodes().map((n) => n.port).sort(),
    masters: p.nodes().filter((n) => n.role === 'master').map((n) => n.port).sort(),
  });

  it('TLS nodes reached without tls: create() says to set tls, never "it may have executed"', async () => {
    const { error } = await rejection(() => ClusterPool.create(seeds(), { refreshTimeout: 2000 }));
    const chain = describeChain(error);
    expect(error, chain).toBeInstanceOf(ConnectionError);
    expect(chain).toMatch(/set the tls option/);
    expect(chain).not.toMatch(/it may have executed/);
  });

  it.skipIf(!server.has('cluster-shards'))(`the slot map uses the TLS ports that CLUSTER SHARDS reports (tls-port; the nodes have no plain port) ${server.needs('cluster-shards')}`, async () => {
    const shards = (await sendCommand(topo.nodes[0]!.address, ['CLUSTER', 'SHARDS'])) as RespValue[];
    const reported: Array<Map<string, RespValue>> = [];
    for (const shard of shards) {
      const f = shard as RespValue[];
      const nodes = f[f.indexOf('nodes') + 1] as RespValue[][];
      for (const n of nodes) reported.push(new Map(Array.from({ length: n.length / 2 }, (_, i) => [String(n[2 * i]), n[2 * i + 1]!])));
    }
    expect(reported).toHaveLength(6);
    for (const n of reported) {
      expect(tlsPorts.has(Number(n.get('tls-port')))).toBe(true);
      expect(n.has('port')).toBe(false);
    }

    const s = pool.stats();
    expect(s.coveredSlots).toBe(16384);
    await waitFor(async () => {
      await pool.refresh();
      return view(pool).masters.length === 3 && view(pool).all.length === 6;
    }, 'three masters and three replicas in the slot map');
    expect(view(pool).all).toEqual([...tlsPorts].sort());
    const masters = (await topo.masters()).map((m) => m.port).sort();
    expect(view(pool).masters).toEqual(masters);
    // The pools the client opened are on TLS ports only.
    expect(pool.stats().pools.every((p) => tlsPorts.has(p.address.port))).toBe(true);
  });

  it('cross-slot MSET/MGET/DEL are split over the masters and land on the owners of the keys', async () => {
    const keys = Array.from({ length: 60 }, (_, i) => `tls:cl:${i}`);
    expect(await pool.mset(Object.fromEntries(keys.map((k) => [k, `v-${k}`])))).toBe('OK');
    expect(await pool.mget(...keys)).toEqual(keys.map((k) => `v-${k}`));
    // Spread over all three masters, each key on the node that owns its slot (read by the harness over TLS).
    const owners = new Set<number>();
    for (const k of keys.slice(0, 12)) {
      const owner = await topo.nodeForSlot(keySlot(k));
      owners.add(owner.port);
      expect(await sendCommand(owner.address, ['GET', k])).toBe(`v-${k}`);
    }
    expect(owners.size).toBe(3);
    expect(await pool.del(...keys.slice(0, 30))).toBe(30);
    expect(await pool.exists(...keys)).toBe(30);
  });

  it('runs a cross-node pipeline of 3,000 commands over TLS: results in order, every write applied', async () => {
    const n = 1000;
    const p = pool.pipeline();
    for (let i = 0; i < n; i++) p.set(`tls:pipe:${i}`, String(i)).incr(`tls:pipe:c:${i}`).get(`tls:pipe:${i}`);
    const results = await p.exec();
    expect(results).toHaveLength(3 * n);
    for (let i = 0; i < n; i++) {
      expect(results.slice(3 * i, 3 * i + 3)).toEqual(['OK', 1, String(i)]);
    }
    const sample = ['tls:pipe:0', 'tls:pipe:499', 'tls:pipe:999'];
    for (const k of sample) expect(await sendCommand((await topo.nodeForSlot(keySlot(k))).address, ['GET', k])).toBe(k.split(':')[2]);
  });

  it(`falls back to CLUSTER SLOTS when CLUSTER SHARDS is ${server.has('cluster-shards') ? 'denied (NOPERM)' : `unknown (${server.label})`} and builds its map on the TLS ports`, async () => {
    // The ACL user really cannot run CLUSTER SHARDS (6.2 has none at all), but may run CLUSTER SLOTS.
    const [shards, slots] = await sendCommands(topo.seeds[0]!, [['CLUSTER', 'SHARDS'], ['CLUSTER', 'SLOTS']], APP);
    expect(shards).toBeInstanceOf(ReplyError);
    expect(String((shards as ReplyError).message)).toMatch(server.has('cluster-shards') ? /^NOPERM/ : /^ERR unknown subcommand/i);
    expect(Array.isArray(slots)).toBe(true);

    const p = await ClusterPool.create(seeds(), { ...base(), ...APP });
    try {
      // CLUSTER SLOTS carries no health: every node of a map built from it is 'unknown'.
      expect(p.nodes().every((n) => n.health === 'unknown')).toBe(true);
      expect(p.stats().coveredSlots).toBe(16384);
      for (const node of p.nodes()) expect(tlsPorts.has(node.port), `${node.host}:${node.port}`).toBe(true);
      expect(view(p).masters).toEqual((await topo.masters()).map((m) => m.port).sort());
      const keys = Array.from({ length: 30 }, (_, i) => `tls:slots:${i}`);
      expect(await p.mset(Object.fromEntries(keys.map((k) => [k, 'x'])))).toBe('OK');
      expect((await p.mget(...keys)).every((v) => v === 'x')).toBe(true);
      expect(p.stats().pools.every((s) => tlsPorts.has(s.address.port))).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('CLUSTER FAILOVER on a replica under load over TLS: zero failed commands, the promoted replica is a master in the map', async () => {
    const replica = (await topo.replicas())[0]!;
    let stop = false;
    let ok = 0;
    const failures: unknown[] = [];
    const idem = pool.with({ idempotent: true });
    const workers = Array.from({ length: 20 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const k = `tls:fo:${w}:${i % 50}`;
        try {
          await idem.set(k, String(i));
          const v = await idem.get(k);
          if (v !== String(i)) failures.push(new Error(`${k}: read ${v}, wrote ${i}`));
          ok++;
        } catch (err) {
          if (failures.length < 1000) failures.push(err);
          // A command failing at once must not spin this loop (starving the event loop, filling the heap).
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    });
    try {
      await waitFor(() => ok > 300, 'load to start');
      await failoverTo(topo, replica);
      expect(await roleOf(replica.address)).toBe('master');
      await topo.waitForClusterOk(30_000);
      const at = ok;
      await waitFor(() => ok > at + 300, 'load to continue after the failover', 30_000);
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    console.log(`TLS CLUSTER FAILOVER under load: ${ok} set+get rounds, ${failures.length} failures, redirects ${JSON.stringify(pool.stats().redirects)}`);
    expect(failures.map(describeChain).slice(0, 5)).toEqual([]);
    // The load really crossed the failover: the old master's MOVED (or a dropped connection) was followed.
    const r = pool.stats().redirects;
    expect(r.moved + r.clusterdown + r.connection).toBeGreaterThan(0);
    await waitFor(async () => {
      await pool.refresh();
      return view(pool).masters.includes(replica.port);
    }, 'the promoted replica to be a master in the slot map');
    expect(view(pool).all.every((port) => tlsPorts.has(port))).toBe(true);
  });
});
