/**
 * What the sentinels' answers commit a pool to (src/sentinel/commitment.ts): by tables, no sockets.
 */
import { describe, expect, it } from 'vitest';
import { decided, judgeCommitment, majorityMaster, majorityOf, type SentinelVote } from '../../src/sentinel/commitment.js';
import { distinctSentinels, knownSentinels, onePerSentinel, type MasterAnswer } from '../../src/sentinel/discovery.js';

const A = { host: '10.0.0.1', port: 6379 };
const B = { host: '10.0.0.2', port: 6379 };
const C = { host: '10.0.0.3', port: 6379 };
const v = (address: typeof A, epoch: number | undefined): SentinelVote => ({ address, epoch });

describe('majorityOf', () => {
  it.each([
    [1, 1], [2, 2], [3, 2], [4, 3], [5, 3], [6, 4], [7, 4],
    [0, 1], // no sentinel known yet: one answer is needed all the same
  ])('%i known sentinels need %i', (known, need) => {
    expect(majorityOf(known)).toBe(need);
  });
});

describe('judgeCommitment (the pool follows A at epoch 3)', () => {
  const view = { address: A, epoch: 3 };
  it.each<[string, SentinelVote[], number, ReturnType<typeof judgeCommitment>]>([
    ['all three name A', [v(A, 3), v(A, 3), v(A, 3)], 3, { kind: 'current', epoch: 3, confirmedBy: 3 }],
    ['two name A, the leader is silent', [v(A, 3), v(A, 3)], 3, { kind: 'current', epoch: 3, confirmedBy: 2 }],
    ['only the leader names B (epoch 4): one voice', [v(B, 4), v(A, 3), v(A, 3)], 3, { kind: 'current', epoch: 3, confirmedBy: 2 }],
    ['the leader alone answers, naming B', [v(B, 4)], 3, { kind: 'none', confirmedBy: 1 }],
    ['two of three adopted B at epoch 4: committed', [v(B, 4), v(B, 4), v(A, 3)], 3, { kind: 'moved', address: B, epoch: 4, confirmedBy: 2 }],
    ['two of five name B, three silent: not a majority', [v(B, 4), v(B, 4)], 5, { kind: 'none', confirmedBy: 2 }],
    ['three of five name B', [v(B, 4), v(B, 4), v(B, 4)], 5, { kind: 'moved', address: B, epoch: 4, confirmedBy: 3 }],
    ['split 2|3: the three name A', [v(B, 4), v(B, 4), v(A, 3), v(A, 3), v(A, 3)], 5, { kind: 'current', epoch: 3, confirmedBy: 3 }],
    ['the others ran their own failover to C (epoch 5)', [v(C, 5), v(C, 5), v(B, 4)], 3, { kind: 'moved', address: C, epoch: 5, confirmedBy: 2 }],
    ['a majority names B, but from an older configuration (sentinels reset)', [v(B, 1), v(B, 1), v(B, 1)], 3, { kind: 'older', address: B, epoch: 1, confirmedBy: 3 }],
    ['a majority names B, one of them at the old epoch: only the newer ones count for a move', [v(B, 4), v(B, 3), v(A, 3)], 3, { kind: 'older', address: B, epoch: 4, confirmedBy: 2 }],
    ['no epochs reported (a user without SENTINEL MASTER): votes decide', [v(B, undefined), v(B, undefined), v(A, undefined)], 3, { kind: 'moved', address: B, epoch: undefined, confirmedBy: 2 }],
    ['nobody answered', [], 3, { kind: 'none', confirmedBy: 0 }],
  ])('%s', (_name, votes, known, expected) => {
    expect(judgeCommitment(view, votes, known)).toEqual(expected);
  });

  it('without a followed epoch, any majority naming another master moves the pool', () => {
    expect(judgeCommitment({ address: A, epoch: undefined }, [v(B, 2), v(B, 2)], 3)).toEqual({ kind: 'moved', address: B, epoch: 2, confirmedBy: 2 });
  });
});

describe('decided (a poll may stop waiting for the rest)', () => {
  it.each<[string, SentinelVote[], number, boolean]>([
    ['two of three name A', [v(A, 3), v(A, 3)], 3, true],
    ['one each for A and B', [v(A, 3), v(B, 4)], 3, false],
    ['two of five', [v(B, 4), v(B, 4)], 5, false],
    ['three of five', [v(B, 4), v(A, 3), v(B, 4), v(B, 4)], 5, true],
  ])('%s', (_name, votes, known, expected) => {
    expect(decided(votes, known)).toBe(expected);
  });
});

describe('who counts: one voice per sentinel, against every sentinel there is', () => {
  const S = (port: number) => ({ host: '10.0.1.1', port });
  const ans = (port: number, extra: Partial<MasterAnswer>): MasterAnswer => ({ address: A, sentinel: S(port), epoch: 3, ...extra });

  it('a sentinel reached under two addresses (host name and announced IP: same run id) votes once', () => {
    const got = onePerSentinel([ans(1, { id: 'x' }), ans(2, { id: 'y' }), ans(3, { id: 'x' }), ans(4, {}), ans(5, {})]);
    expect(got.map((a) => a.sentinel.port)).toEqual([1, 2, 4, 5]);
  });

  it.each<[string, MasterAnswer[], number, number]>([
    ['a sentinel reports a larger group (num-other-sentinels 4) than the pool has discovered (3)', [ans(1, { group: 5 }), ans(2, { group: 3 })], 3, 5],
    ['a sentinel that was reset reports itself alone: the pool\'s count stands', [ans(1, { group: 1 }), ans(2, { group: 3 })], 3, 3],
    ['no group reported (no SENTINEL MASTER): the pool\'s own count', [ans(1, {}), ans(2, {})], 3, 3],
    ['never fewer than the sentinels that answered', [ans(1, {}), ans(2, {}), ans(3, {})], 2, 3],
  ])('%s', (_name, answers, listed, expected) => {
    expect(knownSentinels(answers, listed)).toBe(expected);
  });

  it('the sentinels the pool knows are counted by run id where it knows one, else by address', () => {
    const ctx = {
      masterName: 'm', sentinelConn: {} as never, dataConn: {} as never, natMap: (a: typeof A) => a,
      sentinels: [S(1), S(2), { host: 'sentinel-a.example', port: 1 }, { host: 'sentinel-b.example', port: 2 }, S(9)],
      sentinelIds: new Map<string, string | null>([['10.0.1.1:1', 'a'], ['10.0.1.1:2', 'b'], ['sentinel-a.example:1', 'a'], ['sentinel-b.example:2', 'b']]),
    };
    // a and b under two addresses each, and one address never identified (silent: it counts).
    expect(distinctSentinels(ctx)).toBe(3);
  });
});

describe('majorityMaster (where a pool starts)', () => {
  it.each<[string, SentinelVote[], number, ReturnType<typeof majorityMaster>]>([
    ['two of three name A', [v(B, 4), v(A, 3), v(A, 3)], 3, { address: A, epoch: 3, confirmedBy: 2 }],
    ['one names B with a newer epoch, the others are silent', [v(B, 4)], 3, undefined],
    ['three of five name B', [v(B, 4), v(B, 4), v(A, 3), v(B, 4)], 5, { address: B, epoch: 4, confirmedBy: 3 }],
  ])('%s', (_name, votes, known, expected) => {
    expect(majorityMaster(votes, known)).toEqual(expected);
  });
});
