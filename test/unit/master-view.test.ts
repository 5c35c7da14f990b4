/**
 * The rules that keep a SentinelPool from following a stale view (issue 18), by tables:
 * which sentinel answer is newer, the epoch followed after a switch, the blind window a
 * failover event reports, the newest of several answers, and SENTINEL MASTER parsing.
 */
import { describe, expect, it } from 'vitest';
import { newestAnswer, type MasterAnswer } from '../../src/sentinel/discovery.js';
import { blindWindow, epochAfterSwitch, judgeAnswer } from '../../src/sentinel/master-view.js';
import { parseMasterRecord } from '../../src/sentinel/sentinel-client.js';
import { isRefused } from '../../src/sentinel/watcher.js';

const A = { host: '10.0.0.1', port: 6379 };
const B = { host: '10.0.0.2', port: 6379 };
const S1 = { host: '10.0.1.1', port: 26379 };
const S2 = { host: '10.0.1.2', port: 26379 };
const S3 = { host: '10.0.1.3', port: 26379 };

describe('judgeAnswer', () => {
  it.each([
    ['same address, any epoch', { address: A, epoch: 3 }, { address: A, epoch: 1 }, 'same'],
    ['another address, newer epoch', { address: A, epoch: 3 }, { address: B, epoch: 4 }, 'newer'],
    ['another address, same epoch (a sentinel that has not caught up)', { address: B, epoch: 4 }, { address: A, epoch: 4 }, 'stale'],
    ['another address, older epoch', { address: B, epoch: 4 }, { address: A, epoch: 3 }, 'stale'],
    ['the old master after a switch the pool saw first (provisional epoch)', { address: B, epoch: 3.5 }, { address: A, epoch: 3 }, 'stale'],
    ['the announced config after a switch the pool saw first', { address: B, epoch: 3.5 }, { address: B, epoch: 4 }, 'same'],
    ['a second failover right after the first', { address: B, epoch: 3.5 }, { address: A, epoch: 5 }, 'newer'],
    ['no epoch in the answer (sentinel ACL allows only get-master-addr-by-name)', { address: B, epoch: 4 }, { address: A, epoch: undefined }, 'newer'],
    ['no epoch followed yet', { address: B, epoch: undefined }, { address: A, epoch: 2 }, 'newer'],
  ] as const)('%s', (_what, view, answer, verdict) => {
    expect(judgeAnswer(view, answer)).toBe(verdict);
  });

  it('compares host and port, not object identity', () => {
    expect(judgeAnswer({ address: { ...A }, epoch: 1 }, { address: { ...A }, epoch: 9 })).toBe('same');
    expect(judgeAnswer({ address: A, epoch: 1 }, { address: { host: A.host, port: 6380 }, epoch: 1 })).toBe('stale');
  });
});

describe('epochAfterSwitch', () => {
  it.each([
    ['announced by the sentinels', 3, 4, 4],
    ['seen first by the pool: between the old epoch and the next', 3, undefined, 3.5],
    ['seen first twice in a row stays below the next integer', 3.5, undefined, 3.5],
    ['no epochs at all', undefined, undefined, undefined],
    ['announced without a previous one', undefined, 7, 7],
  ] as const)('%s', (_what, previous, announced, expected) => {
    expect(epochAfterSwitch(previous, announced)).toBe(expected);
  });
});

describe('blindWindow', () => {
  it.each([
    ['fence engaged before the promotion was seen', 1000, 1200, 1300, { fenced: true, blindMs: 0 }],
    ['fence engaged, promotion not seen (no watch)', 1000, undefined, 1300, { fenced: true, blindMs: 0 }],
    ['fence engaged only after the promotion', 1250, 1200, 1250, { fenced: false, blindMs: 50 }],
    ['no fence: held 3 ms after the promotion was seen', undefined, 1200, 1203, { fenced: false, blindMs: 3 }],
    ['no fence, promotion not seen: unknown', undefined, undefined, 2200, { fenced: false, blindMs: undefined }],
    ['clock order never gives a negative window', undefined, 1200, 1199, { fenced: false, blindMs: 0 }],
  ] as const)('%s', (_what, fencedAt, promotedAt, stoppedAt, expected) => {
    expect(blindWindow(fencedAt, promotedAt, stoppedAt)).toEqual(expected);
  });
});

describe('newestAnswer', () => {
  const a = (address: typeof A, sentinel: typeof S1, epoch: number | undefined): MasterAnswer => ({ address, sentinel, epoch });
  it.each([
    ['the highest epoch wins, wherever it is', [a(A, S1, 3), a(B, S2, 4), a(A, S3, 3)], S2],
    ['equal epochs: the first listed', [a(B, S1, 4), a(B, S2, 4)], S1],
    ['an answer with an epoch beats one without', [a(A, S1, undefined), a(B, S2, 0)], S2],
    ['gaps (sentinels that failed) are skipped', [undefined, a(A, S2, 1), undefined], S2],
    ['none without an epoch: the first', [a(A, S1, undefined), a(B, S2, undefined)], S1],
  ] as const)('%s', (_what, answers, sentinel) => {
    expect(newestAnswer(answers)?.sentinel).toBe(sentinel);
  });
  it('nothing answered: undefined', () => {
    expect(newestAnswer([undefined, undefined])).toBeUndefined();
  });
});

describe('parseMasterRecord', () => {
  it('reads ip, port and config-epoch from RESP2 pairs and RESP3 maps', () => {
    const pairs = ['name', 'mymaster', 'ip', '10.0.0.2', 'port', '6379', 'flags', 'master', 'config-epoch', '7'];
    expect(parseMasterRecord(pairs)).toEqual({ address: B, epoch: 7 });
    expect(parseMasterRecord(new Map(Object.entries({ ip: '10.0.0.2', port: '6379', 'config-epoch': '0' })))).toEqual({ address: B, epoch: 0 });
  });
  it('a record without an epoch has none; one without a usable address is null', () => {
    expect(parseMasterRecord(['ip', '10.0.0.2', 'port', '6379'])).toEqual({ address: B, epoch: undefined });
    expect(parseMasterRecord(['ip', '10.0.0.2', 'port', 'x'])).toBeNull();
    expect(parseMasterRecord(null)).toBeNull();
  });
});

describe('isRefused', () => {
  it('finds ECONNREFUSED anywhere in the cause chain, and nothing else', () => {
    const sys = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(isRefused(sys)).toBe(true);
    expect(isRefused(new Error('wrapped', { cause: new Error('again', { cause: sys }) }))).toBe(true);
    expect(isRefused(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isRefused(new Error('timeout'))).toBe(false);
    expect(isRefused(undefined)).toBe(false);
  });
});
