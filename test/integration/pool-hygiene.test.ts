/**
 * What a pool must guarantee beyond "commands work": it proves it talks to a Redis before it
 * resolves, it opens every lane it was given, no state leaks from one lease to the next,
 * subscribers only hear their own channels, close() does not wait on a blocking command, and
 * a command that could not reach a dead server says why.
 */
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ProtocolError,
  SentinelPool,
  StandalonePool,
  TimeoutError,
  UncertainWriteError,
  PoolClosedError,
  type StandaloneOptions,
} from '../../src/index.js';
import { startSentinel, startStandalone, waitFor, type SentinelTopology, type StandaloneTopology } from '../support/topology.js';

let shared: StandaloneTopology;
const pools: Array<{ close(): Promise<void> }> = [];
const cleanups: Array<() => Promise<void> | void> = [];

async function pool(address: string, options: StandaloneOptions = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(address, options);
  pools.push(p);
  return p;
}

/** Clients on the server with this name, from CLIENT LIST. */
async function clients(topo: StandaloneTopology, name: string): Promise<string[]> {
  const list = await topo.server.cli('CLIENT', 'LIST');
  return list.split('\n').filter((l) => l.includes(` name=${name} `));
}

beforeAll(async () => {
  shared = await startStandalone();
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(async () => {
  await shared?.stop();
});

describe('create() proves it reached a Redis', () => {
  it('a server that needs a password we did not give: AuthenticationError at create(), naming the option to set', async () => {
    const t = await startStandalone({ password: 'pw-for-hygiene' });
    cleanups.push(() => t.stop());
    const err = await StandalonePool.create(t.url.replace(/\/\/[^@]*@/, '//'), { connectTimeout: 2000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as Error).message).toMatch(/requires authentication/);
    expect((err as Error).message).toMatch(/password option/);
  });

  it('something that is not Redis (an HTTP-like server): ProtocolError, not a hang', async () => {
    const server = net.createServer((s) => {
      s.on('data', () => s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n'));
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const port = (server.address() as net.AddressInfo).port;
    const err = await StandalonePool.create(`127.0.0.1:${port}`, { connectTimeout: 3000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProtocolError);
  });

  it('a port that accepts but never answers: TimeoutError after connectTimeout', async () => {
    const sockets: net.Socket[] = [];
    const server = net.createServer((s) => {
      sockets.push(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }));
    const port = (server.address() as net.AddressInfo).port;
    const err = await StandalonePool.create(`127.0.0.1:${port}`, { connectTimeout: 300 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/connectTimeout/);
  });
});

describe('lanes', () => {
  it('pool.lanes: 3 opens three multiplexed connections under load and spreads commands over them', async () => {
    const p = await pool(shared.url, { clientName: 'lanes3', pool: { lanes: 3 } });
    await Promise.all(Array.from({ length: 300 }, (_, i) => p.set(`lane:${i}`, String(i))));
    await waitFor(() => p.stats().lanes.connected === 3, 'all three lanes connected');
    await Promise.all(Array.from({ length: 300 }, (_, i) => p.get(`lane:${i}`)));
    const lines = await clients(shared, 'lanes3');
    expect(lines.length).toBe(3);
    // Every lane carried commands (cmd= shows the last command each ran).
    expect(lines.every((l) => / cmd=(get|set|client\|setname|ping) /.test(l))).toBe(true);
  });
});

describe('leases leave nothing behind', () => {
  it('a WATCH left by one use() does not abort the next transaction', async () => {
    const p = await pool(shared.url, { pool: { max: 1 } });
    const first = await p.use(async (lease) => {
      await lease.call('WATCH', 'hyg:bal');
      return lease.call('CLIENT', 'ID');
    });
    await p.set('hyg:bal', '1'); // would abort a transaction on a connection still watching it
    const res = await p.multi().incr('hyg:other').exec();
    expect(res).not.toBeNull();
    expect(p.stats().exclusive.size).toBe(1);
    // The same connection, unwatched, not closed and replaced by a new one.
    expect(await p.use((lease) => lease.call('CLIENT', 'ID'))).toBe(first);
  });

  it('a SELECT inside use() does not change the database of the next borrower', async () => {
    const p = await pool(shared.url, { pool: { max: 1 } });
    await p.set('hyg:db0', 'zero');
    await p.use(async (lease) => {
      await lease.call('SELECT', '5');
    });
    const seen = await p.use((lease) => lease.get('hyg:db0'));
    expect(seen).toBe('zero');
  });

  it('a MULTI left open by a throwing function does not queue the next borrower\'s commands', async () => {
    const p = await pool(shared.url, { pool: { max: 1 } });
    await expect(
      p.use(async (lease) => {
        await lease.call('MULTI');
        throw new Error('gave up halfway');
      }),
    ).rejects.toThrow('gave up halfway');
    expect(await p.use((lease) => lease.set('hyg:after-multi', 'x'))).toBe('OK');
  });

  it('a wait for a busy connection that runs out of the call\'s deadline names the deadline, not acquireTimeoutMillis', async () => {
    const p = await pool(shared.url, { pool: { max: 1, acquireTimeoutMillis: 30_000 } });
    let release!: () => void;
    const held = p.use(() => new Promise<void>((r) => { release = r; }));
    await waitFor(() => release !== undefined, 'the lease to be held');
    const started = Date.now();
    const err = await p.with({ timeout: 300 }).multi().set('hyg:busy', '1').exec().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/became free within the call's deadline; raise pool\.max or release leases sooner/);
    expect((err as Error).message).not.toMatch(/acquireTimeoutMillis/);
    expect(Date.now() - started).toBeLessThan(30_000);
    release();
    await held;
  });
});

describe('subscribers', () => {
  it('each subscribe() listener hears only its own channels or patterns', async () => {
    const p = await pool(shared.url);
    const plain: string[] = [];
    const pattern: string[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((r) => (stop = r));
    const subscribed = p.use(async (lease) => {
      await lease.subscribe(['hyg:a', 'hyg:b'], (m, ch) => plain.push(`${ch}=${m}`));
      await lease.subscribe('hyg:p*', (m, ch, pat) => pattern.push(`${pat}:${ch}=${m}`), { pattern: true });
      await stopped;
    });
    await waitFor(async () => Number(await shared.server.cli('PUBSUB', 'NUMPAT')) === 1, 'pattern subscription registered');
    await p.publish('hyg:a', '1');
    await p.publish('hyg:px', '2');
    await p.publish('hyg:b', '3');
    await waitFor(() => plain.length === 2 && pattern.length === 1, 'three messages delivered');
    stop();
    await subscribed;
    expect(plain).toEqual(['hyg:a=1', 'hyg:b=3']);
    expect(pattern).toEqual(['hyg:p*:hyg:px=2']);
  });
});

describe('close() and dead servers', () => {
  it('close() does not wait closeTimeout for a blocking command: it is cut off at once', async () => {
    const p = await pool(shared.url, { closeTimeout: 20_000 });
    const blocked = p.blpop('hyg:never', 0).then(
      () => undefined,
      (e: unknown) => e,
    );
    await waitFor(() => p.stats().exclusive.borrowed === 1, 'BLPOP holding its connection');
    await waitFor(async () => (await shared.server.cli('CLIENT', 'LIST')).includes('cmd=blpop'), 'BLPOP reached the server');
    const started = Date.now();
    await p.close();
    const err = await blocked;
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect((err as Error).cause).toBeInstanceOf(PoolClosedError);
    // Generous bound: the point is not waiting the 20 s closeTimeout.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('close() while a use() waits for a connection to a server that does not answer: both finish, nothing spins', async () => {
    const t = await startStandalone();
    cleanups.push(() => t.stop());
    const p = await pool(t.url, { closeTimeout: 500, connectTimeout: 60_000, pool: { max: 1 } });
    t.server.pause();
    cleanups.push(() => t.server.resume());
    const waiting = p.use((lease) => lease.get('x')).then(
      () => undefined,
      (e: unknown) => e,
    );
    await waitFor(() => p.stats().exclusive.waiting === 1, 'use() waiting for its connection');
    // A closed pool used to answer generic-pool's create retries at once, forever, starving the
    // event loop; and an in-flight connect used to hold close() for the whole connectTimeout.
    await p.close();
    expect(await waiting).toBeInstanceOf(PoolClosedError);
    t.server.resume();
    // The event loop is alive: timers still fire.
    await new Promise((r) => setTimeout(r, 1));
  });

  it('a command that cannot reach a dead server times out with the connection error as cause and the address', async () => {
    const t = await startStandalone();
    cleanups.push(() => t.stop());
    const p = await pool(t.url, { commandTimeout: 800 });
    await t.server.kill();
    const err = await p.get('k').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).sent).toBe(false);
    expect((err as TimeoutError).address).toEqual(t.address);
    expect((err as Error).cause).toBeInstanceOf(Error);
    expect(String((err as Error & { cause: Error }).cause.message)).toMatch(/ECONNREFUSED|closed/);
  });
});

describe('SentinelPool credentials', () => {
  let topo: SentinelTopology;
  beforeAll(async () => {
    topo = await startSentinel({ masterPassword: 'sentinel-data-pw' });
  });
  afterAll(async () => {
    await topo?.stop();
  });

  it('a wrong data-node password rejects create() at once with AuthenticationError, never leaking the password', async () => {
    const started = Date.now();
    const err = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { password: 'WRONG-secret-xyz', discoveryTimeout: 20_000 }).then(
      (p) => {
        pools.push(p);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(JSON.stringify({ m: (err as Error).message, c: String((err as Error).cause) })).not.toContain('WRONG-secret-xyz');
    // Not after the 20 s discoveryTimeout: credentials do not get better by waiting.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
