/**
 * The Sentinel master tracker as a unit (src/sentinel/master-tracker.ts), under fake timers,
 * with scripted sentinels (ask) and ROLE checks (verify) and a recording gate and node: the
 * sequences the integration tests reach only by luck of timing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConnectionError } from '../../src/errors.js';
import { RoleMismatchError, type MasterAnswer } from '../../src/sentinel/discovery.js';
import { MasterTracker, type MasterTrackerDeps, type SwitchInfo, type TrackerEvents } from '../../src/sentinel/master-tracker.js';
import type { NodeAddress } from '../../src/types.js';
import { deferred, type Deferred } from '../support/deferred.js';

const A = { host: '10.0.0.1', port: 6379 };
const B = { host: '10.0.0.2', port: 6379 };
const C = { host: '10.0.0.3', port: 6379 };
const S1 = { host: '10.0.1.1', port: 26379 };
const k = (a: NodeAddress) => `${a.host}:${a.port}`;


/**
 * A tracker on master A (epoch 3) with scripted I/O. `commit` defaults to 'promotion' (the
 * switch on the promotion itself, which the first suites pin down); `known` is how many
 * sentinels the pool knows, and `setVotes` scripts each one's answer (else the one `answer`).
 */
function harness(opts: { fenceTimeout?: number; epoch?: number; commit?: 'majority' | 'promotion'; known?: number } = {}) {
  const roles = new Map<string, 'master' | 'slave' | 'down'>([[k(A), 'master'], [k(B), 'slave'], [k(C), 'slave']]);
  let answer: MasterAnswer = { address: A, sentinel: S1, epoch: opts.epoch ?? 3 };
  let pendingAsk: Deferred<MasterAnswer> | undefined;
  let votes: MasterAnswer[] | undefined;
  const poll = (a: MasterAnswer) => ({ answers: votes ? votes.map((v) => ({ ...v })) : [a], known: opts.known ?? 1 });
  const heldVerify = new Map<string, Deferred<void>>();
  const calls = { ask: 0, verify: [] as string[] };
  const gate = {
    isOpen: true,
    closes: 0,
    close() {
      this.isOpen = false;
      this.closes++;
    },
    open() {
      this.isOpen = true;
    },
  };
  const node = {
    target: { ...A },
    swaps: [] as NodeAddress[],
    swap(a: NodeAddress) {
      this.target = { ...a };
      this.swaps.push({ ...a });
    },
  };
  const events: Array<{ event: keyof TrackerEvents; payload: unknown }> = [];
  const switches: SwitchInfo[] = [];
  let closed = false;
  const deps: MasterTrackerDeps = {
    o: {
      masterName: 'mymaster',
      role: 'master',
      failoverCommit: opts.commit ?? 'promotion',
      fenceTimeout: opts.fenceTimeout ?? 15_000,
      promotionCheckInterval: 25,
      queueTimeout: 5000,
      natMap: (a) => a,
      pool: { reconnect: { initialDelay: 100, maxDelay: 1000 } },
    } as MasterTrackerDeps['o'],
    node,
    gate,
    ask: () => {
      calls.ask++;
      if (pendingAsk) return pendingAsk.promise.then(poll);
      return Promise.resolve(poll({ ...answer }));
    },
    verify: async (a) => {
      calls.verify.push(k(a));
      // A held check answers with the role the node has when the test releases it.
      const held = heldVerify.get(k(a));
      if (held) {
        heldVerify.delete(k(a));
        await held.promise;
      }
      const r = roles.get(k(a));
      if (r === 'master') return;
      if (r === 'slave') throw new RoleMismatchError(`${k(a)} reports role slave, not master`, { address: a });
      throw new ConnectionError(`${k(a)} did not answer ROLE within sentinelTimeout`, { address: a });
    },
    isClosed: () => closed,
    emit: (event, payload) => void events.push({ event, payload }),
    switched: (info) => void switches.push(info),
  };
  const tracker = new MasterTracker(deps, opts.epoch ?? 3);
  return {
    tracker,
    gate,
    node,
    events,
    switches,
    calls,
    roles,
    setAnswer(a: MasterAnswer) {
      answer = a;
    },
    /** Each answering sentinel's view (the others are silent: they count against a majority). */
    setVotes(v: MasterAnswer[]) {
      votes = v;
    },
    /** The next ROLE check of `a` waits until the returned deferred resolves. */
    holdVerify(a: NodeAddress) {
      const d = deferred<void>();
      heldVerify.set(k(a), d);
      return d;
    },
    holdAsk() {
      pendingAsk = deferred<MasterAnswer>();
      return pendingAsk;
    },
    releaseAsk() {
      const p = pendingAsk;
      pendingAsk = undefined;
      return p;
    },
    close() {
      closed = true;
      return tracker.close();
    },
  };
}

/** Lets promise callbacks run (and timers due now fire) under fake timers. */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('a promotion the pool did not hear of (the replica watch)', () => {
  it('holds writes the moment the watch connection is killed, switches once ROLE says master, and reports a detected, near-zero blind window', async () => {
    const h = harness();
    h.roles.set(k(B), 'master'); // Sentinel promoted B and killed our watch connection to it
    h.tracker.onReplicaLost(B, Date.now());
    expect(h.gate.isOpen).toBe(false); // held before any I/O
    await settle();
    expect(h.node.swaps).toEqual([B]);
    expect(h.gate.isOpen).toBe(true);
    expect(h.switches).toHaveLength(1);
    expect(h.switches[0]).toMatchObject({ from: A, to: B, detectedBy: 'promotion', fenced: false, blindMs: 0 });
    // Provisional epoch: newer than the old configuration, older than the one the failover makes.
    expect(h.tracker.configEpoch).toBe(3.5);
    await h.close();
  });

  it('a killed watch connection on a replica that still says slave (a restart, a network blip): the hold ends, no switch', async () => {
    const h = harness();
    h.tracker.onReplicaLost(B, Date.now());
    expect(h.gate.isOpen).toBe(false);
    await settle();
    expect(h.gate.isOpen).toBe(true);
    expect(h.node.swaps).toEqual([]);
    expect(h.switches).toEqual([]);
    await h.close();
  });

  it('two watch connections lost at once: the hold lasts until both are judged', async () => {
    const h = harness();
    let releaseC!: () => void;
    const slowC = new Promise<void>((r) => (releaseC = r));
    const verify = h.tracker['d'].verify;
    (h.tracker['d'] as { verify: (a: NodeAddress) => Promise<void> }).verify = async (a) => {
      if (k(a) === k(C)) {
        await slowC;
        throw new Error('slave');
      }
      return verify(a);
    };
    h.tracker.onReplicaLost(B, Date.now());
    h.tracker.onReplicaLost(C, Date.now());
    await settle();
    expect(h.gate.isOpen).toBe(false); // B judged (slave), C not yet
    releaseC();
    await settle();
    expect(h.gate.isOpen).toBe(true);
    await h.close();
  });
});

describe('never a stale view', () => {
  it('after a switch it saw first, a sentinel that still names the old master (older epoch, the old master still answers ROLE master) is not followed, long after the switch too', async () => {
    const h = harness({ fenceTimeout: 1000 });
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now());
    await settle();
    expect(h.node.target).toEqual(B);
    // The old master has not been reconfigured yet: it still says master.
    expect(h.roles.get(k(A))).toBe('master');
    // Well past fenceTimeout (the short-lived pin against the old master is gone): the epoch decides.
    await vi.advanceTimersByTimeAsync(5000);
    h.setAnswer({ address: A, sentinel: S1, epoch: 3 });
    h.tracker.requestRefresh('reconnect', true);
    await settle();
    expect(h.node.target).toEqual(B);
    expect(h.node.swaps).toEqual([B]);
    expect(h.gate.isOpen).toBe(true);
    expect(h.switches).toHaveLength(1);
    // The sentinels catch up: the same master with the failover's epoch.
    h.setAnswer({ address: B, sentinel: S1, epoch: 4 });
    h.tracker.requestRefresh('pubsub', false);
    await settle();
    expect(h.tracker.configEpoch).toBe(4);
    expect(h.switches).toHaveLength(1);
    await h.close();
  });

  it('a check of the current master that fails (a timeout right after its promotion) does not send the pool back to the stale answer', async () => {
    const h = harness({ fenceTimeout: 1 });
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now());
    await settle();
    expect(h.node.target).toEqual(B);
    await vi.advanceTimersByTimeAsync(10);
    h.roles.set(k(B), 'down'); // busy: ROLE times out
    h.setAnswer({ address: A, sentinel: S1, epoch: 3 }); // A still says master
    h.tracker.requestRefresh('reconnect', true);
    await vi.advanceTimersByTimeAsync(300);
    expect(h.node.swaps).toEqual([B]);
    h.roles.set(k(B), 'master');
    await vi.advanceTimersByTimeAsync(5000); // the held re-check is retried and finds B again
    expect(h.node.target).toEqual(B);
    expect(h.gate.isOpen).toBe(true);
    expect(h.switches).toHaveLength(1);
    await h.close();
  });

  it('the current master says it is a replica now and the sentinels, reset, name another at a lower epoch: followed', async () => {
    const h = harness({ epoch: 7 });
    h.roles.set(k(A), 'slave');
    h.roles.set(k(C), 'master');
    h.setAnswer({ address: C, sentinel: S1, epoch: 0 });
    h.tracker.requestRefresh('readonly', true);
    await settle();
    expect(h.node.swaps).toEqual([C]);
    expect(h.tracker.configEpoch).toBe(0);
    await h.close();
  });

  it('a newer configuration naming another master is followed (a second failover)', async () => {
    const h = harness();
    h.roles.set(k(A), 'slave');
    h.roles.set(k(C), 'master');
    h.setAnswer({ address: C, sentinel: S1, epoch: 5 });
    h.tracker.requestRefresh('pubsub', true);
    await settle();
    expect(h.node.swaps).toEqual([C]);
    expect(h.tracker.configEpoch).toBe(5);
    expect(h.switches[0]).toMatchObject({ from: A, to: C, detectedBy: 'pubsub', fenced: false, blindMs: undefined });
    await h.close();
  });

  it('a second failover while the ROLE check of the first failover\'s master is pending: the pool ends on the newest master, never back on the old one', async () => {
    const h = harness();
    h.roles.set(k(A), 'slave');
    h.roles.set(k(B), 'master');
    h.setAnswer({ address: B, sentinel: S1, epoch: 4 });
    const checkB = h.holdVerify(B);
    h.tracker.requestRefresh('pubsub', true);
    await settle();
    expect(h.calls.verify).toContain(k(B));
    expect(h.node.swaps).toEqual([]);
    // Meanwhile B fails over to C, and the sentinels say so (a newer epoch).
    h.roles.set(k(B), 'slave');
    h.roles.set(k(C), 'master');
    h.setAnswer({ address: C, sentinel: S1, epoch: 5 });
    h.tracker.requestRefresh('pubsub', true);
    await settle();
    // B's check answers now: B is a replica, so the pool does not go there.
    checkB.resolve();
    await vi.advanceTimersByTimeAsync(2000);
    expect(h.node.target).toEqual(C);
    expect(h.node.swaps).toEqual([C]);
    expect(h.tracker.configEpoch).toBe(5);
    expect(h.gate.isOpen).toBe(true);
    await h.close();
  });

  it('a promotion seen while a re-check is waiting for the sentinels: the late, older answer does not move the pool back', async () => {
    const h = harness({ fenceTimeout: 1 });
    const ask = h.holdAsk();
    h.tracker.requestRefresh('poll', false);
    await settle();
    expect(h.calls.ask).toBe(1);
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now());
    await settle();
    expect(h.node.target).toEqual(B);
    h.releaseAsk();
    ask.resolve({ address: A, sentinel: S1, epoch: 3 }); // asked before the failover
    await settle();
    await vi.advanceTimersByTimeAsync(2000);
    expect(h.node.target).toEqual(B);
    expect(h.node.swaps).toEqual([B]);
    expect(h.switches).toHaveLength(1);
    await h.close();
  });
});

describe('the write fence', () => {
  it('+try-failover holds writes and says so; no switch within fenceTimeout releases them (failover-abort) and re-checks', async () => {
    const h = harness({ fenceTimeout: 1000 });
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: A }, '+try-failover', S1);
    expect(h.gate.isOpen).toBe(false);
    expect(h.tracker.fenced).toBe(true);
    expect(h.events.map((e) => e.event)).toEqual(['failover-start']);
    await vi.advanceTimersByTimeAsync(999);
    expect(h.tracker.fenced).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.tracker.fenced).toBe(false);
    expect(h.events.map((e) => e.event)).toEqual(['failover-start', 'failover-abort']);
    expect((h.events[1]!.payload as { reason: string }).reason).toMatch(/fenceTimeout \(1000 ms\)/);
    await settle();
    expect(h.gate.isOpen).toBe(true); // the re-check found A still master
    expect(h.node.swaps).toEqual([]);
    await h.close();
  });

  it('the fence engaged before the promotion: the switch reports fenced, blind window 0, and happens once', async () => {
    const h = harness();
    h.tracker.onSignal({ kind: 'failover-start', event: '+selected-slave', master: A, candidate: B }, '+selected-slave', S1);
    await vi.advanceTimersByTimeAsync(100); // the candidate is asked every 25 ms: still a replica
    expect(h.node.swaps).toEqual([]);
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now()); // the watch hears the promotion too
    await vi.advanceTimersByTimeAsync(100);
    h.tracker.onSignal({ kind: 'promoted', address: B }, '+promoted-slave', S1);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.node.swaps).toEqual([B]);
    expect(h.switches).toHaveLength(1);
    expect(h.switches[0]).toMatchObject({ fenced: true, blindMs: 0 });
    expect(h.gate.isOpen).toBe(true);
    await h.close();
  });

  it('the leader is reported down while it leads: the held writes go back to the master at once', async () => {
    const h = harness();
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: A }, '+try-failover', S1);
    h.tracker.onSignal({ kind: 'sentinel-down', address: S1 }, '+sdown', { host: '10.0.1.2', port: 26379 });
    expect(h.tracker.fenced).toBe(false);
    expect((h.events.at(-1)!.payload as { reason: string }).reason).toMatch(/failover leader 10\.0\.1\.1:26379 is down/);
    await settle();
    expect(h.gate.isOpen).toBe(true);
    await h.close();
  });

  it('a failover of another master (a replayed old one) only starts a re-check', async () => {
    const h = harness();
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: C }, '+try-failover', S1);
    expect(h.tracker.fenced).toBe(false);
    expect(h.events).toEqual([]);
    await settle();
    expect(h.calls.ask).toBe(1);
    await h.close();
  });
});

describe('re-checks are coalesced', () => {
  it('a burst of 50 triggers while one re-check runs gives one more re-check, not 50', async () => {
    const h = harness();
    const ask = h.holdAsk();
    h.tracker.requestRefresh('pubsub', false);
    await settle();
    for (let i = 0; i < 50; i++) h.tracker.requestRefresh(i % 2 ? 'poll' : 'reconnect', false);
    h.releaseAsk();
    ask.resolve({ address: A, sentinel: S1, epoch: 3 });
    await settle();
    await settle();
    expect(h.calls.ask).toBe(2);
    expect(h.tracker.refreshes).toBe(2);
    await h.close();
  });

  it('sentinels unreachable while writes are held: it retries with backoff, and a queued command gets the last verified master (never while fenced)', async () => {
    const h = harness();
    const down = Object.assign(new Error('all down'), {});
    (h.tracker['d'] as { ask: () => Promise<unknown> }).ask = async () => {
      h.calls.ask++;
      throw down;
    };
    h.tracker.requestRefresh('reconnect', true);
    await settle();
    expect(h.gate.isOpen).toBe(false);
    await vi.advanceTimersByTimeAsync(3000);
    expect(h.calls.ask).toBeGreaterThan(2); // backoff retries
    expect(h.calls.ask).toBeLessThan(40); // not a tight loop
    // queueTimeout passed for a command: A still answers master, so it goes on there.
    await expect(h.tracker.onGateStall()).resolves.toBe(true);
    expect(h.gate.isOpen).toBe(true);
    expect(h.events.some((e) => e.event === 'error')).toBe(true);
    // Under a fence, never.
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: A }, '+try-failover', S1);
    await expect(h.tracker.onGateStall()).resolves.toBe(false);
    await h.close();
  });
});

describe('re-checks wait out the backoff only when nothing new comes', () => {
  it('a trigger during a re-check that then fails runs the next one at once, without the backoff', async () => {
    const h = harness();
    const ask = h.holdAsk();
    h.tracker.requestRefresh('reconnect', true);
    await settle();
    expect(h.calls.ask).toBe(1);
    h.tracker.requestRefresh('pubsub', false);
    h.releaseAsk();
    ask.reject(new Error('all down'));
    await settle();
    expect(h.calls.ask).toBe(2);
    expect(h.gate.isOpen).toBe(true); // the second one found A still master
    await h.close();
  });

  it('a trigger during the backoff wait after a failed re-check runs the next one at once', async () => {
    const h = harness();
    (h.tracker['d'] as { ask: () => Promise<unknown> }).ask = async () => {
      h.calls.ask++;
      throw new Error('all down');
    };
    h.tracker.requestRefresh('reconnect', true);
    await vi.advanceTimersByTimeAsync(3000); // the backoff is at its cap now: at least 250 ms each
    const before = h.calls.ask;
    expect(h.tracker.refreshes).toBe(before);
    h.tracker.requestRefresh('pubsub', false);
    await settle();
    expect(h.calls.ask).toBe(before + 1);
    await h.close();
  });
});

describe("failoverCommit 'majority': only the master the sentinels keep", () => {
  const S2 = { host: '10.0.1.2', port: 26379 };
  const S3 = { host: '10.0.1.3', port: 26379 };
  const vote = (address: NodeAddress, sentinel: NodeAddress, epoch: number): MasterAnswer => ({ address, sentinel, epoch });

  it('a promotion the sentinels do not adopt holds writes (sent to neither node) until it is turned back, then they go to the old master', async () => {
    const h = harness({ commit: 'majority', known: 3 });
    h.setVotes([vote(A, S1, 3), vote(A, S2, 3)]); // the leader S3 is silent (paused after promoting B)
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now());
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.node.swaps).toEqual([]);
    expect(h.gate.isOpen).toBe(false);
    expect(h.tracker.fenced).toBe(true); // reads still go to A, writes are held
    // A command that waited queueTimeout is refused rather than sent to A while B may still be kept.
    await expect(h.tracker.onGateStall()).resolves.toBe(false);
    // The others turn B back into a replica (+convert-to-slave): the hold ends on A.
    h.roles.set(k(B), 'slave');
    h.tracker.onSignal({ kind: 'refresh', event: '+convert-to-slave' }, '+convert-to-slave', S1);
    await settle();
    expect(h.gate.isOpen).toBe(true);
    expect(h.node.swaps).toEqual([]);
    expect(h.switches).toEqual([]);
    expect(h.tracker.fenced).toBe(false);
    const abort = h.events.find((e) => e.event === 'failover-abort')!.payload as { reason: string };
    expect(abort.reason).toMatch(/promotion of 10\.0\.0\.2:6379 was not kept by the sentinels \(2 of 3 sentinels still name 10\.0\.0\.1:6379\)/);
    await h.close();
  });

  it('one sentinel is one voice: the leader naming the promoted replica does not move the pool; the second sentinel adopting it does', async () => {
    const h = harness({ commit: 'majority', known: 3 });
    h.roles.set(k(B), 'master');
    h.tracker.onReplicaLost(B, Date.now());
    await settle();
    h.setVotes([vote(B, S3, 4), vote(A, S1, 3), vote(A, S2, 3)]);
    h.tracker.onSignal({ kind: 'promoted', address: B }, '+promoted-slave', S3);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S3);
    await vi.advanceTimersByTimeAsync(1200);
    expect(h.node.swaps).toEqual([]);
    expect(h.gate.isOpen).toBe(false);
    h.setVotes([vote(B, S3, 4), vote(B, S1, 4), vote(A, S2, 3)]);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S1);
    await settle();
    expect(h.node.swaps).toEqual([B]);
    expect(h.gate.isOpen).toBe(true);
    expect(h.switches).toHaveLength(1);
    expect(h.switches[0]).toMatchObject({ from: A, to: B, epoch: 4, confirmedBy: 2, fenced: false, blindMs: 0 });
    expect(h.switches[0]!.heldMs).toBeGreaterThanOrEqual(1200);
    expect(h.tracker.configEpoch).toBe(4);
    await h.close();
  });

  it('silent sentinels count: 2 of 5 naming the new master with a newer epoch is not a majority', async () => {
    const h = harness({ commit: 'majority', known: 5 });
    h.roles.set(k(A), 'down');
    h.roles.set(k(B), 'master');
    h.setVotes([vote(B, S1, 4), vote(B, S2, 4)]);
    h.tracker.requestRefresh('pubsub', true);
    await vi.advanceTimersByTimeAsync(3000);
    expect(h.node.swaps).toEqual([]);
    expect(h.gate.isOpen).toBe(false);
    h.setVotes([vote(B, S1, 4), vote(B, S2, 4), vote(B, S3, 4)]);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S3);
    await settle();
    expect(h.node.swaps).toEqual([B]);
    expect(h.switches[0]).toMatchObject({ confirmedBy: 3, epoch: 4 });
    await h.close();
  });

  it('the old master dead and the leader gone after promoting B: the others promote C with a newer epoch, and the pool goes to C, never to B', async () => {
    const h = harness({ commit: 'majority', known: 3 });
    h.tracker.onSignal({ kind: 'failover-start', event: '+selected-slave', master: A, candidate: B }, '+selected-slave', S3);
    h.roles.set(k(A), 'down');
    h.roles.set(k(B), 'master');
    await vi.advanceTimersByTimeAsync(100); // the candidate watch sees B promoted
    expect(h.node.swaps).toEqual([]);
    h.tracker.onSignal({ kind: 'sentinel-down', address: S3 }, '+sdown', S1);
    expect(h.tracker.fenced).toBe(true); // the fence is gone, the uncommitted promotion still holds writes
    await vi.advanceTimersByTimeAsync(2000);
    expect(h.gate.isOpen).toBe(false);
    h.roles.set(k(C), 'master');
    h.setVotes([vote(C, S1, 5), vote(C, S2, 5)]);
    h.tracker.onSignal({ kind: 'switch', from: A, to: C }, '+switch-master', S1);
    await settle();
    expect(h.node.swaps).toEqual([C]);
    expect(h.switches[0]).toMatchObject({ from: A, to: C, epoch: 5, confirmedBy: 2, fenced: true });
    expect(h.tracker.fenced).toBe(false);
    await h.close();
  });

  it('a sentinel that comes back naming an older configuration does not move the pool off the master the majority names', async () => {
    const h = harness({ commit: 'majority', known: 3, epoch: 4 });
    h.roles.set(k(B), 'master'); // B was A's replica, promoted then turned back by the others, still says master for a moment
    h.setVotes([vote(B, S3, 5), vote(A, S1, 4), vote(A, S2, 4)]);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S3);
    await settle();
    expect(h.node.swaps).toEqual([]);
    expect(h.gate.isOpen).toBe(true);
    await h.close();
  });

  it('a kept failover: the write held at the fence goes to the new master once a majority adopts it, with what committed it', async () => {
    const h = harness({ commit: 'majority', known: 3 });
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: A }, '+try-failover', S1);
    h.tracker.onSignal({ kind: 'failover-start', event: '+selected-slave', master: A, candidate: B }, '+selected-slave', S1);
    await vi.advanceTimersByTimeAsync(50);
    h.roles.set(k(B), 'master');
    h.roles.set(k(A), 'slave');
    await vi.advanceTimersByTimeAsync(50);
    expect(h.node.swaps).toEqual([]);
    h.setVotes([vote(B, S1, 4), vote(B, S2, 4), vote(A, S3, 3)]);
    h.tracker.onSignal({ kind: 'switch', from: A, to: B }, '+switch-master', S2);
    await settle();
    expect(h.switches).toHaveLength(1);
    expect(h.switches[0]).toMatchObject({ to: B, epoch: 4, confirmedBy: 2, fenced: true, blindMs: 0, heldMs: 100 });
    await h.close();
  });
});

describe('close()', () => {
  it('stops the fence timer and the loops: nothing fires afterwards', async () => {
    const h = harness({ fenceTimeout: 1000 });
    h.tracker.onSignal({ kind: 'failover-start', event: '+try-failover', master: A }, '+try-failover', S1);
    await h.close();
    const before = h.events.length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.events.length).toBe(before);
    expect(vi.getTimerCount()).toBe(0);
  });
});
