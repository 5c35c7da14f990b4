/**
 * Sentinel pure modules, without sockets:
 * - `classifySentinelMessage`: every subscribed channel, with payloads shaped like the ones
 *   redis-sentinel 7.0 publishes (`<type> <name> <ip> <port> [@ <master> <ip> <port>]`),
 *   other master names ignored, malformed payloads ignored;
 * - the reply parsers `parseMasterAddr`, `healthyReplicas`, `parseSentinels`, `parseRole` on
 *   RESP2 flat arrays and RESP3 maps;
 * - `Gate`, the bounded queue of commands held while the master is switched: `maxQueued`,
 *   `queueTimeout`, a shorter command deadline, release order on `open()`, abort signals, `fail()`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PoolClosedError, QueueFullError, TimeoutError } from '../../src/errors.js';
import type { ResolvedCall } from '../../src/pool/call-options.js';
import { Gate } from '../../src/sentinel/gate.js';
import { classifySentinelMessage, parseInstanceDetails, SENTINEL_CHANNELS, type SentinelSignal } from '../../src/sentinel/messages.js';
import { failoverState, healthyReplicas, parseMasterAddr, parseRole, parseSentinels, toFields } from '../../src/sentinel/sentinel-client.js';
import type { Reply } from '../../src/types.js';

const NAME = 'mymaster';
const M = { host: '127.0.0.1', port: 6379 };
const R = { host: '127.0.0.1', port: 6380 };
const SENTINEL_ID = '5f3e0b1f9c2a4d6e8f0a1b2c3d4e5f60718293a4';

/** Payload of an event about the master itself: `master <name> <ip> <port>`. */
const masterPayload = (name = NAME, a = M) => `master ${name} ${a.host} ${a.port}`;
/** Payload of an event about a replica: `slave <ip:port> <ip> <port> @ <name> <mip> <mport>`. */
const slavePayload = (name = NAME, r = R, m = M) => `slave ${r.host}:${r.port} ${r.host} ${r.port} @ ${name} ${m.host} ${m.port}`;
/** Payload of an event about another sentinel. */
const sentinelPayload = (name = NAME, s = { host: '127.0.0.1', port: 26380 }, m = M) =>
  `sentinel ${SENTINEL_ID} ${s.host} ${s.port} @ ${name} ${m.host} ${m.port}`;

/**
 * Every channel the watcher subscribes to, with the payload redis-sentinel 7.0 publishes on it
 * for our master and the signal the pool must get.
 */
const CASES: Array<{ channel: string; payload: string; expected: SentinelSignal }> = [
  { channel: '+switch-master', payload: `${NAME} ${M.host} ${M.port} ${R.host} ${R.port}`, expected: { kind: 'switch', from: M, to: R } },
  { channel: '+try-failover', payload: masterPayload(), expected: { kind: 'failover-start', event: '+try-failover', master: M } },
  { channel: '+elected-leader', payload: masterPayload(), expected: { kind: 'failover-start', event: '+elected-leader', master: M } },
  { channel: '+failover-state-select-slave', payload: masterPayload(), expected: { kind: 'failover-start', event: '+failover-state-select-slave', master: M } },
  { channel: '+selected-slave', payload: slavePayload(), expected: { kind: 'failover-start', event: '+selected-slave', master: M, candidate: R } },
  { channel: '+failover-state-send-slaveof-noone', payload: slavePayload(), expected: { kind: 'failover-start', event: '+failover-state-send-slaveof-noone', master: M, candidate: R } },
  { channel: '+failover-state-wait-promotion', payload: slavePayload(), expected: { kind: 'failover-start', event: '+failover-state-wait-promotion', master: M, candidate: R } },
  { channel: '+promoted-slave', payload: slavePayload(), expected: { kind: 'promoted', address: R } },
  { channel: '+failover-state-reconf-slaves', payload: masterPayload(), expected: { kind: 'refresh', event: '+failover-state-reconf-slaves' } },
  { channel: '+failover-end', payload: masterPayload(), expected: { kind: 'failover-end', aborted: false, event: '+failover-end' } },
  { channel: '+failover-end-for-timeout', payload: masterPayload(), expected: { kind: 'failover-end', aborted: false, event: '+failover-end-for-timeout' } },
  { channel: '-failover-abort-not-elected', payload: masterPayload(), expected: { kind: 'failover-end', aborted: true, event: '-failover-abort-not-elected' } },
  { channel: '-failover-abort-no-good-slave', payload: masterPayload(), expected: { kind: 'failover-end', aborted: true, event: '-failover-abort-no-good-slave' } },
  { channel: '-failover-abort-slave-timeout', payload: masterPayload(), expected: { kind: 'failover-end', aborted: true, event: '-failover-abort-slave-timeout' } },
  { channel: '+sdown', payload: masterPayload(), expected: { kind: 'refresh', event: '+sdown' } },
  { channel: '-sdown', payload: masterPayload(), expected: { kind: 'refresh', event: '-sdown' } },
  { channel: '+odown', payload: `${masterPayload()} #quorum 2/2`, expected: { kind: 'refresh', event: '+odown' } },
  { channel: '-odown', payload: masterPayload(), expected: { kind: 'refresh', event: '-odown' } },
  { channel: '+convert-to-slave', payload: slavePayload(), expected: { kind: 'replicas', event: '+convert-to-slave' } },
  { channel: '+reset-master', payload: masterPayload(), expected: { kind: 'refresh', event: '+reset-master' } },
  { channel: '+slave', payload: slavePayload(), expected: { kind: 'replicas', event: '+slave' } },
  { channel: '+sentinel', payload: sentinelPayload(), expected: { kind: 'sentinel', address: { host: '127.0.0.1', port: 26380 }, id: SENTINEL_ID } },
  { channel: '+role-change', payload: `${slavePayload()} new reported role is master`, expected: { kind: 'refresh', event: '+role-change' } },
];

describe('classifySentinelMessage', () => {
  it('has a case here for every channel the watcher subscribes to', () => {
    expect(new Set(CASES.map((c) => c.channel))).toEqual(new Set(SENTINEL_CHANNELS));
    expect(SENTINEL_CHANNELS).toHaveLength(new Set(SENTINEL_CHANNELS).size);
  });

  it.each(CASES)('$channel about our master -> $expected.kind', ({ channel, payload, expected }) => {
    // toMatchObject: a signal may carry more (e.g. the address a failover-start names).
    expect(classifySentinelMessage(channel, payload, NAME)).toMatchObject(expected);
  });

  it('the write fence starts on every step the leader announces before the promotion', () => {
    const fence = CASES.filter((c) => c.expected.kind === 'failover-start').map((c) => c.channel);
    expect(fence.sort()).toEqual(
      ['+try-failover', '+elected-leader', '+failover-state-select-slave', '+selected-slave', '+failover-state-send-slaveof-noone', '+failover-state-wait-promotion'].sort(),
    );
  });

  it('+sdown / -sdown of one of our replicas is a replica change, of our master a refresh', () => {
    expect(classifySentinelMessage('+sdown', slavePayload(), NAME)).toEqual({ kind: 'replicas', event: '+sdown' });
    expect(classifySentinelMessage('-sdown', slavePayload(), NAME)).toEqual({ kind: 'replicas', event: '-sdown' });
    expect(classifySentinelMessage('+sdown', masterPayload(), NAME)).toEqual({ kind: 'refresh', event: '+sdown' });
  });

  it('+sdown of another sentinel of our master is not mistaken for a replica', () => {
    const sig = classifySentinelMessage('+sdown', sentinelPayload(), NAME);
    expect(sig?.kind).not.toBe('replicas');
  });

  describe('events about another master name are ignored', () => {
    const other = 'othermaster';
    const otherCases = CASES.map((c) => ({
      channel: c.channel,
      payload:
        c.channel === '+switch-master'
          ? `${other} ${M.host} ${M.port} ${R.host} ${R.port}`
          : c.payload.replaceAll(` ${NAME} `, ` ${other} `),
    }));
    it.each(otherCases)('$channel for othermaster', ({ channel, payload }) => {
      expect(payload).toContain(other);
      expect(classifySentinelMessage(channel, payload, NAME)).toBeUndefined();
    });

    it('names that share a prefix or differ in case are other names', () => {
      for (const name of ['mymaster2', 'my', 'MYMASTER', 'mymaster ']) {
        expect(classifySentinelMessage('+switch-master', `${name} ${M.host} ${M.port} ${R.host} ${R.port}`, NAME)).toBeUndefined();
        expect(classifySentinelMessage('+try-failover', `master ${name} ${M.host} ${M.port}`, NAME)).toBeUndefined();
        expect(classifySentinelMessage('+promoted-slave', slavePayload(name), NAME)).toBeUndefined();
      }
    });

    it('a replica event that names our master only as the instance name (not after @) is not ours', () => {
      // `slave mymaster ...` without the `@ <master>` part: the instance name is not a master name.
      expect(classifySentinelMessage('+promoted-slave', `slave ${NAME} ${R.host} ${R.port}`, NAME)).toBeUndefined();
    });
  });

  describe('malformed payloads are ignored, never thrown on', () => {
    const bad: Array<[string, string]> = [
      ['+switch-master', ''],
      ['+switch-master', NAME],
      ['+switch-master', `${NAME} ${M.host} ${M.port} ${R.host}`],
      ['+switch-master', `${NAME} ${M.host} ${M.port} ${R.host} ${R.port} extra`],
      ['+switch-master', `${NAME} ${M.host} port ${R.host} ${R.port}`],
      ['+switch-master', `${NAME} ${M.host} ${M.port} ${R.host} 0`],
      ['+switch-master', `${NAME} ${M.host} ${M.port} ${R.host} 65536`],
      ['+switch-master', `${NAME} ${M.host} ${M.port} ${R.host} 63.5`],
      ['+switch-master', `${NAME} ${M.host} -1 ${R.host} ${R.port}`],
      ['+switch-master', `${NAME}  ${M.host} ${M.port} ${R.host} ${R.port}`],
      ['+try-failover', ''],
      ['+try-failover', 'master'],
      ['+try-failover', `master ${NAME} ${M.host}`],
      ['+try-failover', `master ${NAME} ${M.host} notaport`],
      ['+try-failover', `master ${NAME} ${M.host} 0`],
      ['+promoted-slave', `slave ${R.host}:${R.port} ${R.host} ${R.port} @`],
      ['+promoted-slave', `slave ${R.host}:${R.port} ${R.host} ${R.port} @ ${NAME}`],
      ['+promoted-slave', `slave ${R.host}:${R.port} ${R.host} ${R.port} @ ${NAME} ${M.host}`],
      ['+promoted-slave', `slave ${R.host}:${R.port} ${R.host} ${R.port} @ ${NAME} ${M.host} x`],
      ['+promoted-slave', `slave ${R.host}:${R.port} ${R.host} 99999 @ ${NAME} ${M.host} ${M.port}`],
      ['+sentinel', `sentinel ${SENTINEL_ID} 127.0.0.1 @ ${NAME} ${M.host} ${M.port}`],
      ['+sdown', '\u0000\u0001 garbage \r\n'],
    ];
    it.each(bad)('%s %j', (channel, payload) => {
      expect(() => classifySentinelMessage(channel, payload, NAME)).not.toThrow();
      expect(classifySentinelMessage(channel, payload, NAME)).toBeUndefined();
    });

    it('channels nobody subscribes to carry nothing, even with a well-formed payload', () => {
      for (const channel of ['__sentinel__:hello', '+tilt', '-tilt', '+monitor', '+new-epoch', '+vote-for-leader', '+config-update-from', 'message', '']) {
        expect(classifySentinelMessage(channel, masterPayload(), NAME)).toBeUndefined();
        expect(classifySentinelMessage(channel, slavePayload(), NAME)).toBeUndefined();
      }
    });
  });

  it('parseInstanceDetails reads the instance and, after @, its master', () => {
    expect(parseInstanceDetails(slavePayload())).toEqual({ type: 'slave', name: `${R.host}:${R.port}`, address: R, master: { name: NAME, address: M } });
    expect(parseInstanceDetails(masterPayload())).toEqual({ type: 'master', name: NAME, address: M, master: undefined });
    expect(parseInstanceDetails('master x')).toBeUndefined();
  });
});

// ------------------------------------------------------------------ reply parsers

/** A RESP2 flat field list -> what the decoder gives under RESP3 (a Map). */
const asMap = (flat: string[]): Map<Reply, Reply> => {
  const m = new Map<Reply, Reply>();
  for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i]!, flat[i + 1]!);
  return m;
};

/** A `SENTINEL replicas` entry as redis-sentinel 7.0 sends it (the fields we read, plus some noise). */
function replicaFields(port: number, flags: string, link = 'ok', ip = '127.0.0.1'): string[] {
  return [
    'name', `${ip}:${port}`, 'ip', ip, 'port', String(port), 'runid', 'abc', 'flags', flags,
    'link-pending-commands', '0', 'last-ping-reply', '120', 'master-link-down-time', '0',
    'master-link-status', link, 'master-host', '127.0.0.1', 'master-port', '6379', 'slave-priority', '100',
  ];
}

function sentinelFields(port: number, ip = '127.0.0.1'): string[] {
  return ['name', SENTINEL_ID, 'ip', ip, 'port', String(port), 'runid', SENTINEL_ID, 'flags', 'sentinel', 'voted-leader', '?'];
}

describe.each([
  ['RESP2 arrays', (flat: string[]): Reply => flat],
  ['RESP3 maps', asMap],
] as const)('reply parsers on %s', (_label, shape) => {
  it('toFields reads every pair', () => {
    expect(toFields(shape(['ip', '10.0.0.1', 'port', '7000']))).toEqual({ ip: '10.0.0.1', port: '7000' });
  });

  it('healthyReplicas keeps linked replicas and skips s_down, o_down, disconnected and broken links', () => {
    const reply: Reply = [
      shape(replicaFields(6380, 'slave')),
      shape(replicaFields(6381, 'slave,s_down')),
      shape(replicaFields(6382, 'slave,o_down')),
      shape(replicaFields(6383, 'slave,disconnected')),
      shape(replicaFields(6384, 'slave', 'err')),
      shape(replicaFields(6385, 's_down,slave,disconnected')),
      shape(replicaFields(6386, 'slave', 'ok', '10.1.2.3')),
    ];
    expect(healthyReplicas(reply)).toEqual([
      { host: '127.0.0.1', port: 6380 },
      { host: '10.1.2.3', port: 6386 },
    ]);
  });

  it('healthyReplicas accepts an entry without master-link-status and skips entries without ip or a valid port', () => {
    const noLink = replicaFields(6390, 'slave').filter((_, i, a) => a[i] !== 'master-link-status' && a[i - 1] !== 'master-link-status');
    const noIp = ['name', 'x', 'port', '6391', 'flags', 'slave'];
    const badPort = replicaFields(6392, 'slave').map((v) => (v === '6392' ? 'abc' : v));
    expect(healthyReplicas([shape(noLink), shape(noIp), shape(badPort)])).toEqual([{ host: '127.0.0.1', port: 6390 }]);
  });

  it('parseSentinels reads ip, port and run id of each sentinel', () => {
    expect(parseSentinels([shape(sentinelFields(26380)), shape(sentinelFields(26381, '10.0.0.9'))])).toEqual([
      { host: '127.0.0.1', port: 26380, id: SENTINEL_ID },
      { host: '10.0.0.9', port: 26381, id: SENTINEL_ID },
    ]);
    expect(parseSentinels([shape(['name', 'x', 'flags', 'sentinel'])])).toEqual([]);
  });
});

describe('reply parsers: edge cases', () => {
  it('parseMasterAddr reads [ip, port] (strings, numbers or Buffers)', () => {
    expect(parseMasterAddr(['127.0.0.1', '6379'])).toEqual({ host: '127.0.0.1', port: 6379 });
    expect(parseMasterAddr(['::1', 6380])).toEqual({ host: '::1', port: 6380 });
    expect(parseMasterAddr([Buffer.from('10.0.0.1'), Buffer.from('7000')])).toEqual({ host: '10.0.0.1', port: 7000 });
  });

  it('parseMasterAddr gives null for an unknown name (RESP2 null array, RESP3 null) and for malformed replies', () => {
    for (const r of [null, [], ['127.0.0.1'], ['127.0.0.1', 'x'], ['127.0.0.1', '0'], ['127.0.0.1', '65536'], ['127.0.0.1', '6379.5'], 'OK', 42, new Map<Reply, Reply>([['ip', '1']])] as Reply[]) {
      expect(parseMasterAddr(r)).toBeNull();
    }
  });

  it('healthyReplicas / parseSentinels give [] for non-arrays and empty lists', () => {
    for (const r of [null, 'OK', 0, new Map<Reply, Reply>(), []] as Reply[]) {
      expect(healthyReplicas(r)).toEqual([]);
      expect(parseSentinels(r)).toEqual([]);
    }
  });

  it('parseRole reads the first element', () => {
    expect(parseRole(['master', 100, []])).toBe('master');
    expect(parseRole(['slave', '127.0.0.1', 6379, 'connected', 100])).toBe('slave');
    expect(parseRole(['sentinel', ['mymaster']])).toBe('sentinel');
    expect(parseRole([])).toBeUndefined();
    expect(parseRole(null)).toBeUndefined();
  });
});

// ------------------------------------------------------------------ Gate

/** A resolved call with a deadline `timeoutMs` from now (0 = none). */
function call(timeoutMs: number, signal?: AbortSignal): ResolvedCall {
  return { signal, deadline: timeoutMs > 0 ? Date.now() + timeoutMs : 0, returnBuffers: false, idempotent: false, blocking: false, budget: timeoutMs, patience: timeoutMs };
}

/** Settles a promise into a record without leaving a rejection unhandled. */
function track<T>(p: Promise<T>) {
  const r: { settled: boolean; ok?: boolean; value?: T; error?: unknown; at?: number } = { settled: false };
  p.then(
    (value) => Object.assign(r, { settled: true, ok: true, value, at: Date.now() }),
    (error: unknown) => Object.assign(r, { settled: true, ok: false, error, at: Date.now() }),
  );
  return r;
}

describe('Gate', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const gate = (maxQueued = 100, queueTimeout = 5000) => new Gate(maxQueued, queueTimeout, () => 'the master of "mymaster" to be confirmed');

  it('an open gate lets commands through at once and queues nothing', async () => {
    const g = gate();
    expect(g.isOpen).toBe(true);
    await expect(g.wait(call(1000), 'SET')).resolves.toBeUndefined();
    expect(g.queued).toBe(0);
  });

  it('maxQueued: the command over the limit is refused at once with QueueFullError', async () => {
    const g = gate(2, 5000);
    g.close();
    const a = track(g.wait(call(10_000), 'SET'));
    const b = track(g.wait(call(10_000), 'SET'));
    expect(g.queued).toBe(2);
    const c = track(g.wait(call(10_000), 'INCR'));
    await vi.advanceTimersByTimeAsync(0);
    expect(c.settled).toBe(true);
    expect(c.error).toBeInstanceOf(QueueFullError);
    expect((c.error as Error).message).toMatch(/INCR/);
    expect((c.error as Error).message).toMatch(/maxQueued 2/);
    expect(g.queued).toBe(2);
    expect(a.settled || b.settled).toBe(false);
    g.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.ok && b.ok).toBe(true);
  });

  it('maxQueued 0 refuses every command while the gate is held', async () => {
    const g = gate(0, 5000);
    g.close();
    await expect(g.wait(call(1000), 'GET')).rejects.toBeInstanceOf(QueueFullError);
  });

  it('queueTimeout: a command that waited queueTimeout ms (deadline longer) fails with QueueFullError', async () => {
    const g = gate(100, 300);
    g.close();
    const t0 = Date.now();
    const r = track(g.wait(call(10_000), 'SET'));
    const none = track(g.wait(call(0), 'GET')); // no deadline at all: queueTimeout still bounds it
    await vi.advanceTimersByTimeAsync(299);
    expect(r.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.error).toBeInstanceOf(QueueFullError);
    expect((r.error as Error).message).toMatch(/queueTimeout 300 ms/);
    expect(r.at! - t0).toBe(300);
    expect(none.error).toBeInstanceOf(QueueFullError);
    expect(g.queued).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a deadline shorter than queueTimeout: the command fails with TimeoutError (not sent) at its deadline', async () => {
    const g = gate(100, 5000);
    g.close();
    const t0 = Date.now();
    const r = track(g.wait(call(200), 'SET'));
    await vi.advanceTimersByTimeAsync(199);
    expect(r.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.error).toBeInstanceOf(TimeoutError);
    expect(r.error).not.toBeInstanceOf(QueueFullError);
    expect((r.error as TimeoutError).sent).toBe(false);
    expect((r.error as Error).message).toMatch(/deadline/);
    expect(r.at! - t0).toBe(200);
    expect(g.queued).toBe(0);
  });

  it('a deadline already passed fails at once', async () => {
    const g = gate(100, 5000);
    g.close();
    const c = call(100);
    vi.setSystemTime(Date.now() + 500);
    const r = track(g.wait(c, 'SET'));
    await vi.advanceTimersByTimeAsync(0);
    expect(r.error).toBeInstanceOf(TimeoutError);
  });

  it('open() releases every waiter, in arrival order, and clears their timers', async () => {
    const g = gate(100, 5000);
    g.close();
    const order: number[] = [];
    const waits = [0, 1, 2, 3, 4].map((i) => g.wait(call(10_000), 'SET').then(() => order.push(i)));
    expect(g.queued).toBe(5);
    expect(g.isOpen).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    expect(order).toEqual([]);
    g.open();
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(g.queued).toBe(0);
    expect(g.isOpen).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    // Open again: new commands pass at once.
    await expect(g.wait(call(10), 'GET')).resolves.toBeUndefined();
  });

  it('a waiter that timed out is not released later, and does not count against maxQueued', async () => {
    const g = gate(1, 100);
    g.close();
    const first = track(g.wait(call(0), 'SET'));
    await vi.advanceTimersByTimeAsync(100);
    expect(first.error).toBeInstanceOf(QueueFullError);
    const second = track(g.wait(call(0), 'SET'));
    g.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(second.ok).toBe(true);
    expect(first.ok).toBe(false);
  });

  it('an abort signal rejects the waiting command with its reason and frees its place', async () => {
    const g = gate(1, 5000);
    g.close();
    const ac = new AbortController();
    const r = track(g.wait(call(10_000, ac.signal), 'SET'));
    expect(g.queued).toBe(1);
    const reason = new Error('caller gave up');
    ac.abort(reason);
    await vi.advanceTimersByTimeAsync(0);
    expect(r.error).toBe(reason);
    expect(g.queued).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    // Its place is free again.
    const next = track(g.wait(call(10_000), 'SET'));
    g.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(next.ok).toBe(true);
  });

  it('the abort listener is removed when the command is released', async () => {
    const g = gate(10, 5000);
    g.close();
    const ac = new AbortController();
    const remove = vi.spyOn(ac.signal, 'removeEventListener');
    const r = track(g.wait(call(10_000, ac.signal), 'SET'));
    g.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(r.ok).toBe(true);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
    ac.abort(new Error('late'));
    await vi.advanceTimersByTimeAsync(0);
    expect(r.ok).toBe(true);
  });

  it('a signal that is already aborted rejects at once with its reason (it does not wait for queueTimeout)', async () => {
    const g = gate(10, 5000);
    g.close();
    const ac = new AbortController();
    const reason = new Error('aborted before the call');
    ac.abort(reason);
    const r = track(g.wait(call(10_000, ac.signal), 'SET'));
    await vi.advanceTimersByTimeAsync(10);
    expect(r.settled, 'a pre-aborted command should not sit in the queue').toBe(true);
    expect(r.error).toBe(reason);
    expect(g.queued).toBe(0);
  });

  it('fail() rejects every waiter with PoolClosedError', async () => {
    const g = gate(10, 5000);
    g.close();
    const rs = [track(g.wait(call(10_000), 'SET')), track(g.wait(call(0), 'GET'))];
    g.fail();
    await vi.advanceTimersByTimeAsync(0);
    for (const r of rs) expect(r.error).toBeInstanceOf(PoolClosedError);
    expect(g.queued).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a held gate refuses nothing until closed explicitly: close() is idempotent, open() on an open gate is harmless', async () => {
    const g = gate(10, 5000);
    g.open();
    g.close();
    g.close();
    const r = track(g.wait(call(10_000), 'SET'));
    expect(g.queued).toBe(1);
    g.open();
    g.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(r.ok).toBe(true);
  });
});

describe('failoverState (polling a sentinel that refuses SUBSCRIBE)', () => {
  const master = (flags: string) => ['name', 'mymaster', 'ip', '127.0.0.1', 'port', '6379', 'flags', flags];
  const replica = (port: number, flags: string) => ['name', `127.0.0.1:${port}`, 'ip', '127.0.0.1', 'port', String(port), 'flags', flags];

  it('no failover in progress: undefined', () => {
    expect(failoverState(master('master'), [replica(6380, 'slave')])).toBeUndefined();
  });

  it('failover in progress before a replica is chosen: no candidate', () => {
    expect(failoverState(master('master,failover_in_progress'), [replica(6380, 'slave'), replica(6381, 'slave')])).toEqual({ candidate: undefined });
  });

  it('failover in progress with the replica being promoted (RESP2 arrays or RESP3 maps)', () => {
    expect(failoverState(master('master,failover_in_progress'), [replica(6380, 'slave'), replica(6381, 'slave,promoted')])).toEqual({
      candidate: { host: '127.0.0.1', port: 6381 },
    });
    const asMap = (a: string[]) => new Map(Array.from({ length: a.length / 2 }, (_, i) => [a[2 * i]!, a[2 * i + 1]!] as [string, string]));
    expect(failoverState(asMap(master('master,failover_in_progress')), [asMap(replica(6382, 'slave,promoted'))])).toEqual({
      candidate: { host: '127.0.0.1', port: 6382 },
    });
  });

  it('an unreadable master reply (denied by ACL): undefined', () => {
    expect(failoverState(null, null)).toBeUndefined();
  });
});

describe('a sentinel reported down', () => {
  it('+sdown of a sentinel of our master is a sentinel-down signal (a stuck failover leader)', () => {
    const payload = `sentinel 0123456789abcdef0123456789abcdef01234567 127.0.0.1 26380 @ mymaster 127.0.0.1 6379`;
    expect(classifySentinelMessage('+sdown', payload, 'mymaster')).toEqual({ kind: 'sentinel-down', address: { host: '127.0.0.1', port: 26380 } });
    expect(classifySentinelMessage('+sdown', payload, 'othermaster')).toBeUndefined();
  });
});
