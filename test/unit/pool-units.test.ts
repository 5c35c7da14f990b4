/**
 * The node pool's three units on their own, each with a host written by hand: the rules a
 * node pool does not reach on every path (test/unit/node-pool.test.ts drives them together).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Credentials } from '../../src/connection/credentials.js';
import { ConnectionError, PoolClosedError } from '../../src/errors.js';
import { ExclusivePool, type ExclusiveHost } from '../../src/pool/exclusive-pool.js';
import { Lanes, type LaneHost } from '../../src/pool/lanes.js';
import { Reauthenticator, type AuthHost } from '../../src/pool/reauth.js';
import { FakeConnection } from '../support/fake-connection.js';

const A = { host: '10.0.0.1', port: 6379 };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Lanes', () => {
  function lanes(count: number) {
    const retired: Array<{ conn: FakeConnection; reason: Error | undefined }> = [];
    const host: LaneHost<FakeConnection> & { generation: number; closed: boolean; opened: FakeConnection[] } = {
      generation: 1,
      closed: false,
      opened: [] as FakeConnection[],
      open: async () => {
        const c = new FakeConnection(A);
        c.generation = host.generation;
        host.opened.push(c);
        return c;
      },
      retire: (conn: FakeConnection, reason?: Error) => void retired.push({ conn, reason }),
    };
    return { l: new Lanes<FakeConnection>(count, host), host, retired };
  }

  it('spreads calls evenly over its lanes once they are connected', async () => {
    const { l } = lanes(4);
    await l.get();
    await vi.advanceTimersByTimeAsync(0);
    const counts = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const c = l.sync();
      expect(c).toBeDefined();
      counts.set(c!.id, (counts.get(c!.id) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([100, 100, 100, 100]);
  });

  it('a lane of an older generation is not handed out; retireAll hands each lane to the host with the reason', async () => {
    const { l, host, retired } = lanes(2);
    await l.get();
    await vi.advanceTimersByTimeAsync(0);
    l.generation = 2;
    expect(l.sync()).toBeUndefined();
    const why = new ConnectionError('moved');
    l.retireAll(why);
    expect(retired.map((r) => r.reason)).toEqual([why, why]);
    expect(l.has(host.opened[0]!)).toBe(false);
  });

  it('a lane that closed is replaced by the next call (the old one handed to the host to retire); a closed pool refuses', async () => {
    const { l, host, retired } = lanes(1);
    const first = await l.get();
    first.destroy();
    expect(l.sync()).toBeUndefined();
    const second = await l.get();
    expect(second).not.toBe(first);
    expect(host.opened).toHaveLength(2);
    expect(retired.map((r) => r.conn)).toEqual([first]);
    expect(l.sync()).toBe(second);
    host.closed = true;
    await expect(l.get()).rejects.toBeInstanceOf(PoolClosedError);
  });
});

describe('Reauthenticator', () => {
  function auth(dynamic = true) {
    const conns = [new FakeConnection(A), new FakeConnection(A)];
    const asked: string[] = [];
    const host: AuthHost<FakeConnection> = {
      dynamic,
      closed: false,
      target: A,
      timeoutMs: 1000,
      resolve: async (address) => {
        asked.push(`${address.host}:${address.port}`);
        return { username: 'app', password: `pw-${asked.length}` } satisfies Credentials;
      },
      connections: () => conns,
      held: () => false,
    };
    return { r: new Reauthenticator(host), conns, asked };
  }

  it('without a credentials provider a round does nothing and asks nobody', async () => {
    const { r, conns, asked } = auth(false);
    await r.all();
    expect(asked).toEqual([]);
    expect(conns.every((c) => c.auths.length === 0)).toBe(true);
    expect(r.current).toBe(0);
  });

  it('a connection that closes during its AUTH does not fail the round; the others are marked current', async () => {
    const { r, conns } = auth();
    conns[0]!.destroy();
    await r.all();
    expect(conns[0]!.auths).toEqual([]);
    expect(conns[1]!.auths).toEqual([{ username: 'app', password: 'pw-1' }]);
    expect(r.stale(conns[1]!)).toBe(false);
    expect(r.stale(new FakeConnection(A))).toBe(true);
  });

  it('a second round sends again only to connections it has not logged in yet', async () => {
    const { r, conns, asked } = auth();
    await r.all();
    await r.all();
    expect(asked).toHaveLength(2);
    expect(conns[0]!.auths.map((c) => c?.password)).toEqual(['pw-1', 'pw-2']);
  });
});

describe('ExclusivePool', () => {
  function exclusive(alive = true) {
    const opened: FakeConnection[] = [];
    const host: ExclusiveHost<FakeConnection> = {
      closed: false,
      target: A,
      lastError: undefined,
      // A connect takes a little time, as a real one does (an instant one would let generic-pool
      // replace a failing connection in a loop of microtasks that never yields to the timers).
      open: async () => {
        await new Promise((r) => setTimeout(r, 10));
        const c = new FakeConnection(A);
        opened.push(c);
        return c;
      },
      usable: (c) => c.ready && !c.dirty,
      alive: async () => alive,
      stale: () => false,
      refresh: async () => {},
    };
    const pool = new ExclusivePool(host, { min: 0, max: 2, acquireTimeoutMillis: 1000, idleTimeoutMillis: 30_000, evictionRunIntervalMillis: 0, testOnBorrow: true });
    return { pool, opened, host };
  }

  it('an idle connection that fails testOnBorrow is replaced, not lent', async () => {
    const { pool, opened } = exclusive(false);
    const waiting = pool.acquire().then(() => undefined, (e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1100);
    // Every connection failed its check: the wait ends at acquireTimeoutMillis, no dead one was lent.
    expect(String(await waiting)).toMatch(/acquireTimeoutMillis \(1000 ms\)/);
    // Each one that failed its check was closed (the last may still be waiting for its check).
    expect(opened.length).toBeGreaterThan(5);
    expect(opened.slice(0, -1).filter((c) => c.isOpen)).toEqual([]);
    expect(pool.stats().borrowed).toBe(0);
    await pool.drain();
    await pool.clear();
  });

  it('detach() refuses a connection it did not lend; a detached one leaves the counts', async () => {
    const { pool } = exclusive();
    expect(() => pool.detach(new FakeConnection(A))).toThrow(/borrowed from this pool/);
    const acquiring = pool.acquire();
    await vi.advanceTimersByTimeAsync(10);
    const c = await acquiring;
    pool.detach(c);
    expect(c.dirty).toBe(true);
    expect(pool.isDetached(c)).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(pool.stats()).toMatchObject({ size: 0, borrowed: 0 });
    c.destroy();
    expect(pool.isDetached(c)).toBe(false);
    await pool.drain();
    await pool.clear();
  });

  it('a closed host refuses acquire() with PoolClosedError', async () => {
    const { pool, host } = exclusive();
    (host as { closed: boolean }).closed = true;
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolClosedError);
  });
});
