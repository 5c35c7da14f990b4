/**
 * Confirmations (the WAITs of one connection) driven through their host interface: when a WAIT
 * is queued, which writes it covers, and how its answer settles them. The socket side is
 * covered by test/integration/durability*.test.ts against real servers.
 */
import { describe, expect, it } from 'vitest';
import { DurabilityError, RedisError, UncertainWriteError } from '../../src/index.js';
import { Confirmations, type ConfirmationHost, type DurableCommand } from '../../src/connection/confirmations.js';
import { DurabilityCounters, type Durability } from '../../src/connection/durability.js';
import type { Arg, Reply } from '../../src/types.js';

interface Cmd extends DurableCommand {
  state: 'queued' | 'written' | 'settled';
  outcome?: { value?: Reply; error?: Error };
}

function harness() {
  const waits: Array<{ args: Arg[]; onReply: (v: Reply) => void; onError: (e: Error) => void }> = [];
  let flushes = 0;
  let closed = false;
  const host: ConfirmationHost<Cmd> = {
    label: '127.0.0.1:6379',
    address: { host: '127.0.0.1', port: 6379 },
    isClosed: () => closed,
    settled: (c) => c.state === 'settled',
    written: (c) => c.state === 'written',
    settle: (c) => void (c.state = 'settled'),
    queueWait: (args, _timeout, onReply, onError) => void waits.push({ args, onReply, onError }),
    flushSoon: () => void flushes++,
    rethrow: (e) => {
      throw e;
    },
  };
  const conf = new Confirmations<Cmd>(host);
  const stats = new DurabilityCounters();
  const spec: Durability = { replicas: 1, timeout: 500, stats };
  const cmd = (name = 'SET', durable: Durability = spec, timer = 0): Cmd => {
    const c: Cmd = {
      name, timer, durable, confirming: false, reply: null, attrs: undefined, onAttributes: undefined, state: 'queued',
      resolve: (value) => void (c.outcome = { value }),
      reject: (error) => void (c.outcome = { error }),
    };
    conf.add(c);
    return c;
  };
  /** The flush writes what is queued; each command then gets its reply. */
  const flush = (...cs: Cmd[]) => {
    conf.beforeFlush();
    for (const c of cs) if (c.state === 'queued') c.state = 'written';
  };
  const reply = (c: Cmd, v: Reply | Error) => {
    if (!conf.hold(c, v, undefined)) {
      c.state = 'settled';
      if (v instanceof Error) c.reject(v);
      else c.resolve(v);
    }
  };
  return { conf, waits, cmd, flush, reply, stats, spec, flushes: () => flushes, close: () => void (closed = true) };
}

describe('Confirmations', () => {
  it('one WAIT covers every write of a flush; enough replicas resolves each with its own reply', () => {
    const h = harness();
    const a = h.cmd();
    const b = h.cmd('INCR');
    h.flush(a, b);
    expect(h.waits.map((w) => w.args)).toEqual([['WAIT', 1, 500]]);
    h.reply(a, 'OK');
    h.reply(b, 7);
    expect([a.outcome, b.outcome]).toEqual([undefined, undefined]); // held
    h.waits[0]!.onReply(1);
    expect([a.outcome, b.outcome]).toEqual([{ value: 'OK' }, { value: 7 }]);
    expect(h.stats.snapshot()).toMatchObject({ waits: 1, confirmed: 2, durabilityErrors: 0 });
  });

  it('too few replicas: each write rejects with DurabilityError; error replies and EXEC null are not held', () => {
    const h = harness();
    const a = h.cmd();
    const wrong = h.cmd('INCR');
    const exec = h.cmd('EXEC');
    h.flush(a, wrong, exec);
    h.reply(a, 'OK');
    h.reply(wrong, new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value'));
    h.reply(exec, null);
    expect(wrong.outcome?.error).toBeInstanceOf(RedisError);
    expect(exec.outcome).toEqual({ value: null });
    h.waits[0]!.onReply(0);
    const e = a.outcome?.error as DurabilityError;
    expect(e).toBeInstanceOf(DurabilityError);
    expect([e.replicas, e.required, e.address]).toEqual([0, 1, { host: '127.0.0.1', port: 6379 }]);
    expect(h.stats.snapshot()).toMatchObject({ confirmed: 0, durabilityErrors: 1 });
  });

  it('one WAIT in flight: writes of later flushes wait, then share the next WAIT', () => {
    const h = harness();
    const a = h.cmd();
    h.flush(a);
    const b = h.cmd();
    const c = h.cmd();
    h.flush(b, c);
    expect(h.waits).toHaveLength(1);
    h.reply(a, 'OK');
    h.waits[0]!.onReply(1);
    expect(a.outcome).toEqual({ value: 'OK' });
    // Answered: the next WAIT is queued at once and a flush asked for.
    expect(h.waits).toHaveLength(2);
    expect(h.flushes()).toBe(1);
    h.reply(b, 'OK');
    h.reply(c, 'OK');
    expect(b.outcome).toBeUndefined();
    h.waits[1]!.onReply(1);
    expect([b.outcome, c.outcome]).toEqual([{ value: 'OK' }, { value: 'OK' }]);
  });

  it('a MULTI seals the writes before it even while a WAIT is in flight; mixed specs get a WAIT each', () => {
    const h = harness();
    h.flush(h.cmd());
    h.cmd();
    h.conf.beforeMulti();
    expect(h.waits).toHaveLength(2);
    const other = harness();
    other.cmd('SET', other.spec);
    other.cmd('SET', { replicas: 2, timeout: 100, stats: other.stats });
    other.cmd('SET', other.spec);
    other.flush();
    expect(other.waits.map((w) => w.args)).toEqual([['WAIT', 1, 500], ['WAIT', 2, 100]]);
  });

  it('the WAIT timeout is cut to the earliest deadline; settled writes need no WAIT', () => {
    const h = harness();
    h.cmd('SET', h.spec, Date.now() + 200);
    h.cmd('SET', h.spec, Date.now() + 10_000);
    h.flush();
    const t = h.waits[0]!.args[2] as number;
    expect(t).toBeGreaterThan(0);
    expect(t).toBeLessThanOrEqual(200);
    const g = harness();
    const gone = g.cmd();
    gone.state = 'settled';
    g.flush();
    expect(g.waits).toEqual([]);
  });

  it('a WAIT refused (NOPERM) fails its writes with the refusal as cause; a lost connection leaves them uncertain', () => {
    const h = harness();
    const a = h.cmd();
    h.flush(a);
    h.reply(a, 'OK');
    const denied = new RedisError("NOPERM this user has no permissions to run the 'wait' command");
    h.waits[0]!.onError(denied);
    expect((a.outcome?.error as DurabilityError).cause).toBe(denied);
    expect((a.outcome?.error as Error).message).toMatch(/ACL \+wait/);

    const l = harness();
    const b = l.cmd();
    l.flush(b);
    l.reply(b, 'OK');
    const cut = new Error('Connection to 127.0.0.1:6379 was closed by the server or the network');
    l.close();
    l.waits[0]!.onError(new UncertainWriteError('WAIT was sent but the connection closed', { cause: cut }));
    const e = b.outcome?.error as UncertainWriteError;
    expect(e).toBeInstanceOf(UncertainWriteError);
    expect(e.cause).toBe(cut);
    expect(e.message).toMatch(/^SET ran on 127\.0\.0\.1:6379, but the connection closed before the WAIT/);
    expect(l.stats.snapshot().uncertain).toBe(1);
  });

  it('closing rejects held writes whose WAIT was never sent; dropping unsent commands keeps the written ones', () => {
    const h = harness();
    h.flush(h.cmd());
    const written = h.cmd();
    const unsent = h.cmd();
    written.state = 'written';
    h.conf.dropUnsent();
    h.reply(written, 'OK');
    h.conf.closed(': gone', new Error('gone'));
    expect(written.outcome?.error).toBeInstanceOf(UncertainWriteError);
    expect(unsent.outcome).toBeUndefined(); // the connection's own drop rejects it (not sent)
  });
});
