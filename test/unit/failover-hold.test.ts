/**
 * The failover hold (src/sentinel/failover-hold.ts) alone, under fake timers: the write fence's
 * life (engage, expiry, lift, leader) and uncommitted promotions (settled by ROLE answers).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FailoverHold } from '../../src/sentinel/failover-hold.js';
import type { NodeAddress } from '../../src/types.js';

const A = { host: '10.0.0.1', port: 6379 };
const B = { host: '10.0.0.2', port: 6379 };
const C = { host: '10.0.0.3', port: 6379 };
const S1 = { host: '10.0.1.1', port: 26379 };

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('the write fence', () => {
  it('engages once, expires after the timeout with the master it held writes for, and leaves no timer', async () => {
    const expired: NodeAddress[] = [];
    const h = new FailoverHold(1000, (from) => expired.push(from));
    expect(h.engage(A, S1)).toBe(true);
    expect(h.engage(A, S1)).toBe(false);
    expect(h.active && h.announced).toBe(true);
    expect(h.fencedAt).toBe(1_000_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual([A]);
    expect(h.active).toBe(false);
    // The hold that began with the fence still remembers when it engaged, until writes flow again.
    expect(h.fencedAt).toBe(1_000_000);
    h.released();
    expect(h.fencedAt).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is lifted by its leader going down, and only by its leader', () => {
    const h = new FailoverHold(1000, () => {});
    h.engage(A, S1);
    expect(h.ledBy({ host: '10.0.1.2', port: 26379 })).toBe(false);
    expect(h.ledBy(S1)).toBe(true);
    expect(h.lift()).toEqual(A);
    expect(h.lift()).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
    // A fence engaged from a poll has no leader.
    h.engage(A, undefined);
    expect(h.ledBy(S1)).toBe(false);
    h.close();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('uncommitted promotions', () => {
  it('hold writes until every one is undone (ROLE says replica, or nothing answers), and say which', async () => {
    const h = new FailoverHold(1000, () => {});
    h.promoted(B, 'promotion');
    h.promoted(C, 'pubsub');
    expect(h.active).toBe(true);
    expect(h.announced).toBe(false);
    expect(h.pending).toBe(2);
    expect(h.seenBy).toBe('promotion');
    const roles = new Map([['10.0.0.2:6379', 'master'], ['10.0.0.3:6379', 'slave']]);
    const verify = async (a: NodeAddress) => {
      if (roles.get(`${a.host}:${a.port}`) !== 'master') throw new Error('not master');
    };
    const undone: string[] = [];
    await expect(h.settle(verify, (k) => undone.push(k))).resolves.toBe(false); // B still says master
    expect(h.pending).toBe(2);
    roles.set('10.0.0.2:6379', 'down');
    await expect(h.settle(verify, (k) => undone.push(k))).resolves.toBe(true);
    expect(undone).toEqual(['10.0.0.2:6379', '10.0.0.3:6379']);
    expect(h.active).toBe(false);
    expect(h.seenBy).toBeUndefined();
  });

  it('a switch ends the fence and every uncommitted promotion', () => {
    const h = new FailoverHold(1000, () => {});
    h.engage(A, S1);
    h.promoted(B, 'poll');
    expect(h.isUncommitted(B)).toBe(true);
    h.switched();
    expect(h.active).toBe(false);
    expect(h.isUncommitted(B)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
