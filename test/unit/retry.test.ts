/**
 * The retry and deadline rules (src/retry.ts), by tables: the rule itself, then the same fault
 * driven through every mode's dispatcher (Standalone, Sentinel master, Sentinel replica,
 * Cluster) over fake node pools whose connections fail as told. The same fault must give the
 * same error in every mode.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  AuthenticationError, ConnectionError, NodeUnreachableError, PoolClosedError, ProtocolError, QueueFullError, RedisError, TimeoutError,
  UncertainWriteError,
} from '../../src/errors.js';
import {
  abortable, Coalescer, mayResend, mayRetry, noneWritten, raceTimer, retryOrThrow, retryTimeLeft, wasWritten, withinDeadline, type FailedAttempt,
} from '../../src/retry.js';
import { traitsOf } from '../../src/commands/traits.js';
import type { Connection } from '../../src/connection/connection.js';
import type { NodePool } from '../../src/pool/node-pool.js';
import type { ResolvedCall } from '../../src/pool/call-options.js';
import { LaneDispatcher } from '../../src/pool/lane-dispatcher.js';
import { MasterDispatcher, ReplicaDispatcher } from '../../src/sentinel/dispatchers.js';
import type { SentinelHost } from '../../src/sentinel/sentinel-host.js';
import { Gate } from '../../src/sentinel/gate.js';
import { FlightRunner } from '../../src/cluster/flight-runner.js';
import { newFlight } from '../../src/cluster/flight.js';
import type { ClusterHost } from '../../src/cluster/cluster-host.js';
import type { Router } from '../../src/cluster/route.js';
import type { Arg, NodeAddress, Reply } from '../../src/types.js';

const A: NodeAddress = { host: '127.0.0.1', port: 7001 };
const notSent = () => new ConnectionError('connection lost before the write', { address: A });
const written = () => new UncertainWriteError('connection lost after the write', { address: A });
const lateReply = () => new TimeoutError('no reply within the deadline', { sent: true, address: A });

describe('was it written?', () => {
  it.each<[string, unknown, boolean, boolean]>([
    ['a plain ConnectionError', notSent(), false, false],
    ['an UncertainWriteError', written(), false, true],
    ['a sent TimeoutError', lateReply(), false, true],
    ['an unsent TimeoutError', new TimeoutError('no lane', { sent: false }), false, false],
    ['a server error', new RedisError('ERR x'), false, false],
    ['anything the caller knows was sent', notSent(), true, true],
  ])('%s -> %s', (_name, err, sent, expected) => {
    expect(wasWritten(err, sent)).toBe(expected);
  });

  it('a pipeline may go again only when none of it was written', () => {
    expect(noneWritten([notSent(), notSent()])).toBe(true);
    expect(noneWritten([notSent(), written()])).toBe(false);
    expect(noneWritten([notSent(), 'OK'])).toBe(false);
  });
});

describe('may it be re-sent?', () => {
  // err, readOnly, idempotent -> mayResend (cluster), mayRetry (one node's connections)
  it.each<[string, unknown, boolean, boolean, boolean, boolean]>([
    ['not written', notSent(), false, false, true, true],
    ['written, a write', written(), false, false, false, false],
    ['written, a read', written(), true, false, true, true],
    ['written, idempotent', written(), false, true, true, true],
    ['reply not in time, a read', lateReply(), true, false, true, false],
    ['no lane within the deadline', new TimeoutError('no lane', { sent: false }), false, false, true, false],
    ['malformed reply', new ProtocolError('bad'), true, true, false, false],
    ['refused credentials', new AuthenticationError('WRONGPASS'), true, true, false, false],
    ['fail-fast refusal', new NodeUnreachableError('down'), true, true, false, false],
    ['server error', new RedisError('WRONGTYPE x'), true, true, false, false],
    ['full queue', new QueueFullError('full'), true, true, false, false],
    ['a TypeError', new TypeError('bad argument'), true, true, false, false],
  ])('%s: mayResend %s', (_name, err, readOnly, idempotent, resend, retry) => {
    expect(mayResend(err, false, readOnly, idempotent)).toBe(resend);
    expect(mayRetry(err, readOnly, idempotent)).toBe(retry);
  });
});

describe('how long may this wait?', () => {
  it('until the deadline, or within the retry window without one', () => {
    const now = Date.now();
    expect(retryTimeLeft({ deadline: now + 1000 }, now, 50)).toBeGreaterThan(900);
    expect(retryTimeLeft({ deadline: 0 }, now - 20, 50)).toBeLessThanOrEqual(30);
    expect(retryTimeLeft({ deadline: 0 }, now - 60, 50)).toBeLessThan(0);
  });

  const attempt = (over: Partial<FailedAttempt>): FailedAttempt => ({
    name: 'GET', deadline: Date.now() + 10_000, idempotent: false, readOnly: true, started: Date.now(), window: 1000, address: A, closed: false, ...over,
  });

  it.each<[string, unknown, Partial<FailedAttempt>, ((e: unknown) => void) | 'retry']>([
    ['time left: retry', notSent(), {}, 'retry'],
    ['deadline passed: a TimeoutError naming the node, the deadline and the cause', notSent(), { deadline: Date.now() - 1 }, (e) => {
      expect(e).toBeInstanceOf(TimeoutError);
      expect((e as TimeoutError).message).toBe('GET to 127.0.0.1:7001 could not be completed within its deadline; last error: connection lost before the write; it was not sent.');
      expect((e as TimeoutError).sent).toBe(false);
      expect((e as TimeoutError).cause).toBeInstanceOf(ConnectionError);
    }],
    ['written read out of time: sent', written(), { deadline: Date.now() - 1, role: 'replica ' }, (e) => {
      expect((e as TimeoutError).message).toMatch(/^GET to replica 127\.0\.0\.1:7001 could not be completed/);
      expect((e as TimeoutError).sent).toBe(true);
    }],
    ['no deadline: the retry window says so', notSent(), { deadline: 0, started: Date.now() - 2000 }, (e) => {
      expect((e as TimeoutError).message).toMatch(/within the retry window \(connectTimeout 1000 ms; the call has no deadline\)/);
    }],
    ['aborted: the reason', notSent(), { signal: AbortSignal.abort(new Error('stop')) }, (e) => expect((e as Error).message).toBe('stop')],
    ['closed: PoolClosedError with the cause', notSent(), { closed: true }, (e) => {
      expect(e).toBeInstanceOf(PoolClosedError);
      expect((e as Error).cause).toBeInstanceOf(ConnectionError);
    }],
    ['closed beats may-not-retry', new RedisError('ERR x'), { closed: true }, (e) => expect(e).toBeInstanceOf(PoolClosedError)],
    ['may not retry beats abort and deadline: its own error', written(), { readOnly: false, deadline: Date.now() - 1, signal: AbortSignal.abort() }, (e) => expect(e).toBeInstanceOf(UncertainWriteError)],
  ])('%s', (_name, err, over, expected) => {
    if (expected === 'retry') expect(() => retryOrThrow(err, attempt(over))).not.toThrow();
    else {
      let thrown: unknown;
      try {
        retryOrThrow(err, attempt(over));
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeDefined();
      expected(thrown);
    }
  });
});

// ---------------------------------------------------------------------------------------
// Every mode, the same faults
// ---------------------------------------------------------------------------------------

/** How a fake connection answers the n-th attempt (1-based). */
type Script = (attempt: number, call: ResolvedCall) => Promise<Reply>;

interface Fault {
  name: string;
  args: Arg[];
  script: Script;
  deadlineMs: number;
  idempotent?: boolean;
  /** Abort the call this many ms after it starts. */
  abortAfter?: number;
  /** The pool closes at the first failure. */
  closeOnFailure?: boolean;
  expect: (result: { value?: Reply; error?: unknown; attempts: number }) => void;
}

/** Fails a little later, as a socket would (no busy loop while the rule retries). */
const fail = (e: Error): Promise<Reply> => new Promise((_, reject) => setTimeout(() => reject(e), 2));
/** Rejects with `e` once the call's deadline has passed. */
const atDeadline = (call: ResolvedCall, e: Error): Promise<Reply> =>
  new Promise((_, reject) => setTimeout(() => reject(e), Math.max(0, call.deadline - Date.now()) + 1));

const faults: Fault[] = [
  {
    name: 'refused before the write, every time', args: ['GET', 'k'], deadlineMs: 150,
    script: () => fail(notSent()),
    expect: ({ error }) => {
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).sent).toBe(false);
      expect((error as Error).cause).toBeInstanceOf(ConnectionError);
      expect((error as Error).cause).not.toBeInstanceOf(UncertainWriteError);
    },
  },
  {
    name: 'refused once, then answered', args: ['SET', 'k', 'v'], deadlineMs: 2000,
    script: (n) => (n === 1 ? fail(notSent()) : Promise.resolve('OK')),
    expect: ({ value, attempts }) => {
      expect(value).toBe('OK');
      expect(attempts).toBe(2);
    },
  },
  {
    name: 'a write whose reply was lost', args: ['SET', 'k', 'v'], deadlineMs: 2000,
    script: () => fail(written()),
    expect: ({ error, attempts }) => {
      expect(error).toBeInstanceOf(UncertainWriteError);
      expect(attempts).toBe(1);
    },
  },
  {
    name: 'a read whose reply was lost once', args: ['GET', 'k'], deadlineMs: 2000,
    script: (n) => (n === 1 ? fail(written()) : Promise.resolve('v')),
    expect: ({ value, attempts }) => {
      expect(value).toBe('v');
      expect(attempts).toBe(2);
    },
  },
  {
    name: 'a read whose reply is lost every time', args: ['GET', 'k'], deadlineMs: 150,
    script: () => fail(written()),
    expect: ({ error }) => {
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).sent).toBe(true);
      expect((error as Error).cause).toBeInstanceOf(UncertainWriteError);
    },
  },
  {
    name: 'an idempotent write whose reply was lost once', args: ['INCR', 'n'], deadlineMs: 2000, idempotent: true,
    script: (n) => (n === 1 ? fail(written()) : Promise.resolve(1)),
    expect: ({ value }) => expect(value).toBe(1),
  },
  {
    name: 'no reply before the deadline', args: ['GET', 'k'], deadlineMs: 60,
    script: (_n, call) => atDeadline(call, lateReply()),
    expect: ({ error, attempts }) => {
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).sent).toBe(true);
      expect((error as Error).message).toBe('no reply within the deadline');
      expect(attempts).toBe(1);
    },
  },
  ...([
    ['a server error', () => new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value'), RedisError],
    ['a malformed reply', () => new ProtocolError('bad reply'), ProtocolError],
    ['refused credentials', () => new AuthenticationError('WRONGPASS'), AuthenticationError],
    ['a fail-fast refusal', () => new NodeUnreachableError('unreachable and offlineQueue is false'), NodeUnreachableError],
    ['a full queue', () => new QueueFullError('maxPending'), QueueFullError],
  ] as const).map(([name, make, cls]): Fault => ({
    name, args: ['GET', 'k'], deadlineMs: 2000,
    script: () => fail(make()),
    expect: ({ error, attempts }) => {
      expect(error).toBeInstanceOf(cls);
      expect(attempts).toBe(1);
    },
  })),
  {
    name: 'aborted while retrying', args: ['GET', 'k'], deadlineMs: 5000, abortAfter: 30,
    script: () => fail(notSent()),
    expect: ({ error }) => expect((error as Error).message).toBe('caller gave up'),
  },
  {
    name: 'the pool closed while retrying', args: ['GET', 'k'], deadlineMs: 5000, closeOnFailure: true,
    script: () => fail(notSent()),
    expect: ({ error }) => expect(error).toBeInstanceOf(PoolClosedError),
  },
];

/** A node pool whose one connection answers by `script`. */
function fakeNode(port: number, state: { attempts: number; closed: boolean; closeOnFailure: boolean }, script: Script): NodePool {
  const target = { host: '127.0.0.1', port };
  const conn = {
    address: target,
    generation: 0,
    send(_args: readonly Arg[], call: ResolvedCall): Promise<Reply> {
      const p = script(++state.attempts, call);
      p.catch(() => {
        if (state.closeOnFailure) state.closed = true;
      });
      return p;
    },
  } as unknown as Connection;
  return {
    target, generation: 0, lastError: undefined, laneWaiters: 0, maxPending: 1000,
    laneSync: () => conn, lane: () => Promise.resolve(conn), acquire: () => Promise.resolve(conn), release() {},
  } as unknown as NodePool;
}

function sentinelHost(nodes: NodePool[], state: { closed: boolean }): SentinelHost {
  let i = 0;
  return {
    node: nodes[0]!,
    gate: new Gate(100, 1000, () => 'the master'),
    o: { data: { commandTimeout: 0, connectTimeout: 1000 }, offlineQueue: true, pool: { acquireTimeoutMillis: 1000 } },
    isClosed: () => state.closed,
    isFenced: () => false,
    requestRefresh() {},
    replicaCount: () => nodes.length,
    pickReplica: () => nodes[i++ % nodes.length]!,
  } as unknown as SentinelHost;
}

function clusterRunner(nodes: NodePool[], state: { closed: boolean }): FlightRunner {
  const changed = new AbortController().signal;
  const byPort = new Map(nodes.map((n) => [n.target.port, n]));
  const h = {
    topology: {
      pool: (a: NodeAddress) => byPort.get(a.port)!,
      map: { mapAddress: (a: NodeAddress) => a },
      version: 0,
      changed,
      failing: () => () => {},
      nodeDown() {},
      requestRefresh() {},
      moved() {},
      refreshed: () => Promise.resolve(),
      connectError: () => undefined,
    },
    // The defaults: with them a call's deadline comes before the cluster's own bound on retries
    // (maxRedirections, a MaxRedirectionsError when spent first) for the faults below.
    o: { offlineQueue: true, maxRedirections: 16, retryDelayOnTryAgain: 100, retryBackoff: { initialDelay: 100, maxDelay: 2000 }, data: { maxPending: 1000 } },
    isClosed: () => state.closed,
    onMoved() {},
    onAsk() {},
    onRetry() {},
  } as unknown as ClusterHost;
  let i = 0;
  const router = { pick: () => nodes[i++ % nodes.length]!.target } as unknown as Router;
  return new FlightRunner(h, router);
}

function callFor(f: Fault, signal?: AbortSignal): ResolvedCall {
  return {
    signal, deadline: Date.now() + f.deadlineMs, returnBuffers: false, idempotent: f.idempotent ?? false, blocking: false, budget: f.deadlineMs,
    patience: 0, durability: undefined, durable: undefined, traits: traitsOf(f.args),
  };
}

type Mode = [string, (nodes: NodePool[], state: { closed: boolean }) => (args: Arg[], call: ResolvedCall) => Promise<Reply>];
const modes: Mode[] = [
  ['standalone', (nodes, st) => {
    const d = new LaneDispatcher(nodes[0]!, 0, 1000, () => st.closed);
    return (args, call) => d.dispatch(args, call);
  }],
  ['sentinel master', (nodes, st) => {
    const d = new MasterDispatcher(sentinelHost(nodes, st));
    return (args, call) => d.dispatch(args, call);
  }],
  ['sentinel replica', (nodes, st) => {
    const d = new ReplicaDispatcher(sentinelHost(nodes, st));
    return (args, call) => d.dispatch(args, call);
  }],
  ['cluster', (nodes, st) => {
    const runner = clusterRunner(nodes, st);
    return (args, call) => runner.run(newFlight(args, { name: String(args[0]).toLowerCase(), traits: call.traits, info: call.traits?.info, slot: 0, readOnly: call.traits?.readOnly ?? false }), call);
  }],
];

describe.each(modes)('the same fault, the same error: %s', (_mode, make) => {
  it.each(faults.map((f) => [f.name, f] as const))('%s', async (_name, f) => {
    const state = { attempts: 0, closed: false, closeOnFailure: f.closeOnFailure ?? false };
    // Two nodes: a replica set or a cluster retries on the other one.
    const nodes = [fakeNode(7001, state, f.script), fakeNode(7002, state, f.script)];
    const dispatch = make(nodes, state);
    const ctl = new AbortController();
    const timer = f.abortAfter !== undefined ? setTimeout(() => ctl.abort(new Error('caller gave up')), f.abortAfter) : undefined;
    const result: { value?: Reply; error?: unknown; attempts: number } = { attempts: 0 };
    try {
      result.value = await dispatch(f.args, callFor(f, f.abortAfter !== undefined ? ctl.signal : undefined));
    } catch (e) {
      result.error = e;
    } finally {
      clearTimeout(timer);
    }
    result.attempts = state.attempts;
    f.expect(result);
  });
});

// ---------------------------------------------------------------------------------------
// The one timer race and the one coalescer
// ---------------------------------------------------------------------------------------

describe('the timer race', () => {
  it('settles with the promise when it comes first, and leaves no timer behind', async () => {
    vi.useFakeTimers();
    try {
      const p = raceTimer(Promise.resolve('v'), 1000, () => 'late');
      await expect(p).resolves.toBe('v');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives the timer\'s answer when the time passes first, and hands the late value to discard', async () => {
    vi.useFakeTimers();
    try {
      let deliver!: (v: string) => void;
      const slow = new Promise<string>((r) => (deliver = r));
      const discarded: string[] = [];
      const p = raceTimer(slow, 100, () => 'fallback', (v) => discarded.push(v));
      await vi.advanceTimersByTimeAsync(100);
      await expect(p).resolves.toBe('fallback');
      deliver('late');
      await vi.advanceTimersByTimeAsync(0);
      expect(discarded).toEqual(['late']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('withinDeadline rejects with an unsent TimeoutError carrying the context; none without a deadline', async () => {
    vi.useFakeTimers();
    try {
      const cause = new Error('ECONNREFUSED');
      const never = new Promise<string>(() => {});
      const p = withinDeadline(never, { deadline: Date.now() + 50 }, () => 'no lane in time', () => ({ cause, address: A }));
      const check = expect(p).rejects.toMatchObject({ name: 'TimeoutError', message: 'no lane in time', sent: false, cause, address: A });
      await vi.advanceTimersByTimeAsync(50);
      await check;
      withinDeadline(never, { deadline: 0 }, () => 'x');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('abortable gives the reason at once and hands a late value to discard', async () => {
    const ctl = new AbortController();
    let deliver!: (v: string) => void;
    const discarded: string[] = [];
    const p = abortable(new Promise<string>((r) => (deliver = r)), ctl.signal, (v) => discarded.push(v));
    ctl.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    deliver('lease');
    await Promise.resolve();
    expect(discarded).toEqual(['lease']);
  });
});

describe('one at a time', () => {
  it('a burst of requests during a run costs one more run; every request resolves once the runs settle', async () => {
    const runs: Array<() => void> = [];
    const c = new Coalescer(() => new Promise<void>((r) => runs.push(r)));
    const flush = async () => { for (let i = 0; i < 10; i++) await Promise.resolve(); };
    let settled = 0;
    const first = c.request().then(() => settled++);
    await flush();
    expect(runs.length).toBe(1);
    const burst = Array.from({ length: 10 }, () => c.request().then(() => settled++));
    runs[0]!();
    await flush();
    // The run the burst asked for, and only one; nobody is told "done" before it ends.
    expect(runs.length).toBe(2);
    expect(settled).toBe(0);
    expect(c.busy).toBe(true);
    runs[1]!();
    await Promise.all([first, ...burst]);
    expect(settled).toBe(11);
    expect(c.runs).toBe(2);
    expect(c.busy).toBe(false);
  });

  it('a request made by a run (synchronously) does not start a second, concurrent loop', async () => {
    let active = 0;
    let most = 0;
    let n = 0;
    const c: Coalescer = new Coalescer(async () => {
      active++;
      most = Math.max(most, active);
      if (n++ < 3) void c.request();
      await new Promise((r) => setTimeout(r, 1));
      active--;
    });
    await c.request();
    expect(most).toBe(1);
    expect(c.runs).toBe(4);
  });

  it('minInterval spaces the starts of runs, and close() ends the wait and resolves every request', async () => {
    vi.useFakeTimers();
    try {
      const starts: number[] = [];
      const c = new Coalescer(async () => { starts.push(Date.now()); }, { minInterval: 1000 });
      await c.request();
      const again = c.request();
      await vi.advanceTimersByTimeAsync(500);
      expect(starts.length).toBe(1);
      await vi.advanceTimersByTimeAsync(500);
      await again;
      expect(starts.length).toBe(2);
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(1000);
      const third = c.request();
      await vi.advanceTimersByTimeAsync(10);
      c.close();
      await third;
      expect(starts.length).toBe(2);
      expect(vi.getTimerCount()).toBe(0);
      await c.request();
      expect(starts.length).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a run that throws is reported and the loop goes on', async () => {
    const errors: unknown[] = [];
    let n = 0;
    const c = new Coalescer(async () => {
      if (n++ === 0) throw new Error('first run failed');
    }, { onError: (e) => errors.push(e) });
    await c.request();
    await c.request();
    expect(errors.map((e) => (e as Error).message)).toEqual(['first run failed']);
    expect(c.runs).toBe(2);
  });
});

describe('one at a time: what the refresh scheduler and the master tracker need', () => {
  /** A coalescer whose runs stay in flight until `finish()`; `holding` false lets them end at once. */
  function held(o: { minInterval?: number } = {}) {
    const starts: number[] = [];
    const ends: Array<() => void> = [];
    let holding = true;
    const c = new Coalescer(() => {
      starts.push(Date.now());
      return holding ? new Promise<void>((r) => ends.push(r)) : Promise.resolve();
    }, o);
    return {
      c,
      starts,
      finish: () => ends.shift()?.(),
      release() {
        holding = false;
        for (const r of ends.splice(0)) r();
      },
    };
  }
  const settle = () => vi.advanceTimersByTimeAsync(0);

  // When a second trigger comes, and how many runs the two cost (minInterval 1000).
  it.each([
    { when: 'in the same tick as the first (before its run starts)', at: 'same-tick', runs: 1 },
    { when: 'during the run', at: 'during-run', runs: 2 },
    { when: 'while the loop waits out minInterval for a run asked during the first', at: 'during-wait', runs: 2 },
    { when: 'after the runs settled, within minInterval', at: 'after', runs: 2 },
  ] as const)('a second trigger $when: $runs run(s) in all', async ({ at, runs }) => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const h = held({ minInterval: 1000 });
      void h.c.request();
      if (at === 'same-tick') void h.c.request();
      await settle();
      expect(h.starts.length).toBe(1);
      if (at === 'during-run') void h.c.request();
      if (at === 'during-wait') {
        void h.c.request(); // asks for the second run, which must wait for minInterval
        h.finish();
        await vi.advanceTimersByTimeAsync(500);
        expect(h.starts.length).toBe(1);
        void h.c.request(); // joins the run it waits for
      }
      h.release();
      await settle();
      if (at === 'after') void h.c.request();
      await vi.advanceTimersByTimeAsync(10_000);
      expect(h.starts.length).toBe(runs);
      for (let i = 1; i < h.starts.length; i++) expect(h.starts[i]! - h.starts[i - 1]!).toBeGreaterThanOrEqual(1000);
      expect(h.c.busy).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('next() resolves once a run that began after it has finished, while a stream of triggers keeps the runs going', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const h = held();
      let settled = false;
      let fresh = false;
      void h.c.request().then(() => (settled = true));
      await settle();
      expect(h.starts.length).toBe(1);
      void h.c.next().then(() => (fresh = true));
      expect(h.c.pending).toBe(true);
      h.finish(); // the run that began before next(): not the one it waits for
      await settle();
      expect(h.starts.length).toBe(2);
      expect(fresh).toBe(false);
      void h.c.request(); // one more trigger during the second run
      h.finish();
      await settle();
      expect(fresh).toBe(true); // the second run is done, although a third has started
      expect(h.starts.length).toBe(3);
      expect(settled).toBe(false);
      h.finish();
      await settle();
      expect(settled).toBe(true);
      expect(h.c.pending).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('noteStart() counts a run made elsewhere (a first load) and starts the minInterval window', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const h = held({ minInterval: 500 });
      h.release();
      h.c.noteStart();
      expect(h.c.runs).toBe(1);
      let fresh = false;
      void h.c.next().then(() => (fresh = true));
      await vi.advanceTimersByTimeAsync(499);
      expect(h.starts).toEqual([]);
      expect(fresh).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(h.starts).toEqual([1_000_500]);
      expect(fresh).toBe(true);
      expect(h.c.runs).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('after close(), idle() waits for the run under way to end, and no run starts although one was asked for', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const h = held();
      void h.c.request();
      await settle();
      let fresh = false;
      void h.c.next().then(() => (fresh = true));
      h.c.close();
      await settle();
      expect(fresh).toBe(true); // close() resolves every request now
      let idle = false;
      void h.c.idle().then(() => (idle = true));
      await settle();
      expect(idle).toBe(false);
      h.finish();
      await settle();
      expect(idle).toBe(true);
      expect(h.starts.length).toBe(1);
      expect(h.c.busy).toBe(false);
      await h.c.idle(); // none under way: at once
    } finally {
      vi.useRealTimers();
    }
  });
});
