/**
 * The node pool and its units (src/pool/lanes.ts, exclusive-pool.ts, reauth.ts, node-pool.ts)
 * under fake timers, with scripted connections (test/support/fake-connection.ts): the
 * sequences the integration tests reach only by luck of timing (a swap while a lane connects,
 * a swap during a re-authentication, a connection opened in the middle of one, a wait that
 * runs out of the call's deadline, close() with work still out).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Connection } from '../../src/connection/connection.js';
import type { Credentials } from '../../src/connection/credentials.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { AuthenticationError, ConnectionError, isNotExecuted, PoolClosedError, TimeoutError, UncertainWriteError } from '../../src/errors.js';
import { NodePool } from '../../src/pool/node-pool.js';
import { resolvePoolOptions } from '../../src/pool/options.js';
import type { PoolOptions } from '../../src/pool/options.js';
import type { NodeAddress } from '../../src/types.js';
import { deferred, type Deferred } from '../support/deferred.js';
import { FakeNet, type FakeConnection } from '../support/fake-connection.js';

const A = { host: '10.0.0.1', port: 6379 };
const B = { host: '10.0.0.2', port: 6379 };
const key = (a: NodeAddress) => `${a.host}:${a.port}`;
const fake = (c: Connection) => c as unknown as FakeConnection;

interface Harness {
  pool: NodePool;
  net: FakeNet;
  /** Every call of the credentials provider: the address asked for, answered by `answer`. */
  asked: Array<{ address: string; answer: Deferred<Credentials | null> }>;
  /** When true the provider answers at once with password `pw-<n>`. */
  autoAnswer: boolean;
}

function harness(pool: PoolOptions = {}, withProvider = false): Harness {
  const net = new FakeNet();
  const h = { net, asked: [], autoAnswer: true } as unknown as Harness;
  let n = 0;
  const credentials = withProvider
    ? (ctx: { address: NodeAddress }) => {
        const answer = deferred<Credentials | null>();
        h.asked.push({ address: key(ctx.address), answer });
        if (h.autoAnswer) answer.resolve({ username: 'app', password: `pw-${++n}` });
        return answer.promise;
      }
    : undefined;
  const conn = resolveConnectionOptions({ connectTimeout: 2000, commandTimeout: 1000, ...(credentials ? { credentials } : {}) });
  h.pool = new NodePool(A, conn, resolvePoolOptions({ acquireTimeoutMillis: 1000, evictionRunIntervalMillis: 0, ...pool }), {}, net.connect);
  return h;
}

/** close() with fake time moving, so its closeTimeout and drains can end. */
async function shut(pool: NodePool): Promise<void> {
  const closing = pool.close(0);
  await vi.advanceTimersByTimeAsync(10);
  await closing;
}

/** Lets promise callbacks run (fake timers do not move). */
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('lanes', () => {
  it('a call that finds no ready lane opens every lane at once and takes the first to connect; later calls go round robin', async () => {
    const { pool, net } = harness({ lanes: 3 });
    net.mode = 'manual';
    const first = pool.lane();
    expect(net.waiting).toHaveLength(3);
    net.waiting[1]!.complete();
    const got = fake(await first);
    expect(got).toBe(net.opened[0]);
    net.waiting[0]!.complete();
    net.waiting[2]!.complete();
    await flush();
    const ids = new Set<number>();
    for (let i = 0; i < 6; i++) ids.add((await pool.lane()).id);
    expect(ids.size).toBe(3);
    expect(net.attempts).toHaveLength(3);
    await shut(pool);
  });

  it('a call waiting for a lane while the pool swaps gets one at the new target; the connection completed to the old one is closed unused', async () => {
    const { pool, net } = harness();
    net.mode = 'manual';
    const call = pool.lane();
    expect(pool.swap(B)).toBe(true);
    const late = net.waiting[0]!.complete();
    await flush();
    expect(key(late.address)).toBe(key(A));
    expect(late.isOpen).toBe(false);
    expect(late.sent).toEqual([]);
    expect(net.waiting.map((w) => key(w.target))).toEqual([key(A), key(B)]);
    net.waiting[1]!.complete();
    const lane = fake(await call);
    expect(key(lane.address)).toBe(key(B));
    expect(lane.generation).toBe(2);
    expect((await pool.lane()).id).toBe(lane.id);
    await shut(pool);
  });

  it('a call that finds every lane failing gets the connection error (not sent)', async () => {
    const { pool, net } = harness({ lanes: 2 });
    net.mode = 'manual';
    pool.on('error', () => {});
    const call = pool.lane().then(() => undefined, (e: unknown) => e);
    net.waiting[1]!.fail();
    await flush();
    net.waiting[0]!.fail();
    const err = await call;
    expect(err).toBeInstanceOf(ConnectionError);
    expect(isNotExecuted(err)).toBe(true);
    await shut(pool);
  });

  it('a swap cuts a lane with a write in flight (UncertainWriteError naming the move) and the next write goes to the new master', async () => {
    const { pool, net } = harness();
    const lane = fake(await pool.lane());
    const write = lane.send(['SET', 'k', 'v']).then(() => 'acknowledged', (e: unknown) => e);
    pool.swap(B);
    const err = await write;
    // An acknowledgement from the demoted master after the switch would be a lost write.
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
    expect(((err as Error).cause as Error).message).toContain(`moved from ${key(A)} to ${key(B)}`);
    const next = fake(await pool.lane());
    expect(key(next.address)).toBe(key(B));
    expect(net.opened.filter((c) => c.isOpen).map((c) => key(c.address))).toEqual([key(B)]);
    await shut(pool);
  });

  it('a lane that fails with nobody waiting leaves no unhandled rejection, and the error is reported as lastError', async () => {
    const { pool, net } = harness();
    net.mode = 'refuse';
    const errors: Error[] = [];
    pool.on('error', (e) => errors.push(e));
    await expect(pool.lane()).rejects.toBeInstanceOf(ConnectionError);
    expect(errors).toHaveLength(1);
    expect(pool.lastError?.message).toMatch(/ECONNREFUSED/);
    net.mode = 'auto';
    // The next attempt waits for the backoff (a timer), then succeeds and clears lastError.
    const next = pool.lane();
    await vi.advanceTimersByTimeAsync(5000);
    expect(key(fake(await next).address)).toBe(key(A));
    expect(pool.lastError).toBeUndefined();
    await shut(pool);
  });
});

describe('exclusive connections', () => {
  it("a wait that runs out of the call's deadline names the deadline, and the connection freed later goes back to the pool", async () => {
    const { pool } = harness({ max: 1, acquireTimeoutMillis: 10_000 });
    const held = await pool.acquire();
    const waiting = pool.acquire(Date.now() + 200).then(() => undefined, (e: unknown) => e);
    await vi.advanceTimersByTimeAsync(250);
    const err = await waiting;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/within the call's deadline; raise pool.max or release leases sooner/);
    pool.release(held);
    await flush();
    expect(pool.stats().exclusive).toMatchObject({ borrowed: 0, available: 1, waiting: 0 });
    // The same connection is lent again: nothing leaked to the caller that gave up.
    expect((await pool.acquire()).id).toBe(held.id);
    await shut(pool);
  });

  it('while connects fail, acquireTimeoutMillis names the last connection error and keeps it as cause', async () => {
    const { pool, net } = harness({ acquireTimeoutMillis: 500 });
    net.mode = 'refuse';
    pool.on('error', () => {});
    const waiting = pool.acquire().then(() => undefined, (e: unknown) => e);
    await vi.advanceTimersByTimeAsync(600);
    const err = await waiting;
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/acquireTimeoutMillis \(500 ms\); the last connection attempt failed: connect ECONNREFUSED/);
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
    // Backoff keeps the attempts bounded: not a tight loop in 600 ms.
    expect(net.attempts.length).toBeLessThan(30);
    await shut(pool);
  });

  it('a connection returned dirty or with a command in flight is destroyed; a clean one is lent again', async () => {
    const { pool } = harness({ max: 3 });
    const dirty = await pool.acquire();
    const busy = await pool.acquire();
    const clean = await pool.acquire();
    dirty.dirty = true;
    void fake(busy).send(['BLPOP', 'q', '0']).catch(() => {});
    pool.release(dirty);
    pool.release(busy);
    pool.release(clean);
    await flush();
    expect(fake(dirty).isOpen).toBe(false);
    expect(fake(busy).isOpen).toBe(false);
    expect((await pool.acquire()).id).toBe(clean.id);
    await shut(pool);
  });

  it('a lease held over a swap takes no new command (not sent), and is closed when released; the next one is at the new target', async () => {
    const { pool } = harness();
    const lease = fake(await pool.acquire());
    pool.swap(B);
    const err = await lease.send(['SET', 'k', 'v']).then(() => undefined, (e: unknown) => e);
    expect(isNotExecuted(err)).toBe(true);
    expect(lease.sent).toEqual([]);
    pool.release(lease as unknown as Connection);
    await flush();
    expect(lease.isOpen).toBe(false);
    expect(key((await pool.acquire()).address)).toBe(key(B));
    await shut(pool);
  });

  it('a dedicated connection leaves pool.max, and a swap closes it', async () => {
    const { pool } = harness({ max: 1 });
    const d = await pool.acquire();
    pool.detach(d);
    expect(pool.stats().dedicated).toBe(1);
    // pool.max is free again for leases.
    const lease = await pool.acquire();
    expect(lease.id).not.toBe(d.id);
    pool.swap(B);
    expect(fake(d).isOpen).toBe(false);
    expect(fake(d).closeReason?.message).toContain(`moved from ${key(A)}`);
    expect(pool.stats().dedicated).toBe(0);
    pool.release(lease);
    await shut(pool);
  });
});

describe('re-authentication', () => {
  it('logs in idle lanes and connections at once; a borrowed one logs in when it comes back, before the next borrower gets it', async () => {
    const h = harness({ max: 2 }, true);
    const { pool } = h;
    const lane = fake(await pool.lane());
    const idle = await pool.acquire();
    const borrowed = fake(await pool.acquire());
    pool.release(idle);
    await flush();
    await pool.reauthenticate();
    expect(h.asked.map((a) => a.address)).toEqual([key(A)]);
    expect(lane.auths).toEqual([{ username: 'app', password: 'pw-1' }]);
    expect(fake(idle).auths).toEqual([{ username: 'app', password: 'pw-1' }]);
    // Not in the middle of its holder's commands (perhaps a MULTI).
    expect(borrowed.auths).toEqual([]);
    borrowed.authGate = deferred();
    pool.release(borrowed as unknown as Connection);
    await flush();
    expect(borrowed.auths).toEqual([{ username: 'app', password: 'pw-2' }]);
    // Lent again only once logged in: a borrower asking now gets the other one first.
    let next: Connection | undefined;
    void pool.acquire().then((c) => (next = c));
    await flush();
    expect(next?.id).toBe(idle.id);
    let third: Connection | undefined;
    void pool.acquire().then((c) => (third = c));
    await flush();
    expect(third).toBeUndefined();
    borrowed.authGate.resolve();
    await vi.advanceTimersByTimeAsync(10);
    expect(third?.id).toBe(borrowed.id);
    await shut(pool);
  });

  it('a connection opened with credentials fetched before a round logs in again before any command', async () => {
    const h = harness({}, true);
    const { pool, net } = h;
    net.mode = 'manual';
    const call = pool.lane();
    await pool.reauthenticate();
    net.waiting[0]!.complete();
    const lane = fake(await call);
    void lane.send(['GET', 'k']).catch(() => {});
    expect(lane.sent[0]).toEqual(['AUTH']);
    expect(lane.sent[1]).toEqual(['GET', 'k']);
    await shut(pool);
  });

  it('a swap during a round: the credentials fetched for the old master go nowhere, and the round ends', async () => {
    const h = harness({}, true);
    const { pool } = h;
    h.autoAnswer = false;
    const oldLane = fake(await pool.lane());
    const lease = fake(await pool.acquire());
    const round = pool.reauthenticate();
    await flush();
    expect(h.asked.map((a) => a.address)).toEqual([key(A)]);
    pool.swap(B);
    const newLane = fake(await pool.lane());
    h.asked[0]!.answer.resolve({ username: 'app', password: 'for-A' });
    await round;
    for (const c of [oldLane, lease, newLane]) expect(c.auths).toEqual([]);
    // The lease from before the swap is closed on release, not logged in and lent again.
    pool.release(lease as unknown as Connection);
    await flush();
    expect(lease.isOpen).toBe(false);
    expect(lease.auths).toEqual([]);
    expect(h.asked).toHaveLength(1);
    await shut(pool);
  });

  it('a refusal rejects the round with AuthenticationError; a RESP2 subscriber is replaced instead of sent AUTH', async () => {
    const h = harness({}, true);
    const { pool } = h;
    const lane = fake(await pool.lane());
    const sub = fake(await pool.subscriber());
    sub.subscribedResp2 = true;
    lane.authGate = deferred();
    const round = pool.reauthenticate().then(() => undefined, (e: unknown) => e);
    await flush();
    lane.authGate.reject(new AuthenticationError('WRONGPASS invalid username-password pair', { address: A }));
    expect(await round).toBeInstanceOf(AuthenticationError);
    expect(sub.auths).toEqual([]);
    expect(sub.isOpen).toBe(false);
    expect(sub.closeReason?.message).toMatch(/replaced to log in with new credentials/);
    await shut(pool);
  });
});

describe('close', () => {
  it('waits closeTimeout for replies due, then fails them with PoolClosedError as cause, refuses new work, and leaves no timer', async () => {
    const { pool } = harness();
    const lane = fake(await pool.lane());
    const lease = await pool.acquire();
    const write = lane.send(['SET', 'k', 'v']).then(() => 'acknowledged', (e: unknown) => e);
    const closing = pool.close(300);
    await expect(pool.lane()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolClosedError);
    await vi.advanceTimersByTimeAsync(300);
    await closing;
    const err = await write;
    expect(err).toBeInstanceOf(UncertainWriteError);
    expect(fake(lease).isOpen).toBe(false);
    expect(fake(lease).closeReason).toBeInstanceOf(PoolClosedError);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a reply that arrives within closeTimeout is delivered', async () => {
    const { pool } = harness();
    const lane = fake(await pool.lane());
    const read = lane.send(['GET', 'k']);
    const closing = pool.close(1000);
    await flush();
    lane.answer('v');
    await closing;
    expect(await read).toBe('v');
    expect(vi.getTimerCount()).toBe(0);
  });
});
