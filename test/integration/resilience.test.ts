/**
 * Resilience of one connection and one pool against a real redis-server that is paused
 * (SIGSTOP: the kernel keeps the socket open and nothing answers, like a black hole),
 * killed or made slow: bounded memory (maxPending, maxPendingBytes, backpressure), the
 * heartbeat, one deadline for every wait, oversize replies, fail-fast, and option limits.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  NodeUnreachableError, ProtocolError, QueueFullError, StandalonePool, TimeoutError, type StandaloneOptions,
} from '../../src/index.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;

/** A full garbage collection on demand (V8's gc, exposed at run time), for heap measurements. */
function forceGc(): () => void {
  v8.setFlagsFromString('--expose_gc');
  return vm.runInNewContext('gc') as () => void;
}
const pools: StandalonePool[] = [];

async function pool(options: StandaloneOptions = {}): Promise<StandalonePool> {
  const p = await StandalonePool.create(topo.address, options);
  pools.push(p);
  return p;
}

/** Calls of one command on the server, from INFO commandstats. */
async function calls(command: string): Promise<number> {
  const info = await topo.server.cli('INFO', 'commandstats');
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return m ? Number(m[1]) : 0;
}

async function settled<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
}

beforeAll(async () => {
  topo = await startStandalone();
});
afterEach(async () => {
  if (topo.server.isPaused()) topo.server.resume();
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  await topo?.stop();
});

describe('oversize replies', () => {
  it('a reply over maxReplyBytes rejects that command with ProtocolError (limit and length), is never re-sent, and the pool goes on', async () => {
    const p = await pool({ maxReplyBytes: 1024 * 1024 });
    await p.set('big', 'x'.repeat(3 * 1024 * 1024));
    const before = await calls('get');
    const setsBefore = await calls('set');
    const started = Date.now();
    const [big, other] = await Promise.all([settled(p.get('big')), settled(p.set('after-big', 'v'))]);
    expect(big.ok).toBe(false);
    const err = (big as { error: Error }).error;
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err.message).toMatch(/The reply to GET from 127\.0\.0\.1:\d+ was refused: A reply length of 3145728 exceeds maxReplyBytes \(1048576\)/);
    expect(Date.now() - started).toBeLessThan(3000);
    // GET is read-only, yet it is not re-sent: it would get the same reply again.
    expect((await calls('get')) - before).toBe(1);
    // The SET behind it on the same (only) lane was written too, and its reply is lost with the
    // connection: told so, with the refusal as cause, and not re-sent.
    expect(other.ok).toBe(false);
    const otherErr = (other as { error: Error }).error;
    expect(otherErr.name).toBe('UncertainWriteError');
    expect(otherErr.cause).toBeInstanceOf(ProtocolError);
    expect((await calls('set')) - setsBefore).toBe(1);
    expect(await p.set('next', 'v')).toBe('OK');
    expect(await p.get('next')).toBe('v');
  });
});

describe('bounded memory', () => {
  it('maxPending: beyond it commands reject at once with QueueFullError (not sent); every command settles once the server is back', async () => {
    const p = await pool({ maxPending: 1000, commandTimeout: 0 });
    await p.set('warm', '1');
    topo.server.pause();
    const results = Array.from({ length: 5000 }, (_, i) => settled(p.set(`mp:${i}`, 'v')));
    // The refusals come at once, while the server is still paused.
    const refused = await Promise.race([Promise.all(results.slice(1000)), new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
    expect(refused).not.toBeNull();
    for (const r of refused!) {
      expect(r.ok).toBe(false);
      expect((r as { error: unknown }).error).toBeInstanceOf(QueueFullError);
      expect(((r as { error: Error }).error).message).toMatch(/maxPending 1000/);
    }
    topo.server.resume();
    const held = await Promise.all(results.slice(0, 1000));
    expect(held.every((r) => r.ok)).toBe(true);
    expect(await p.get('mp:999')).toBe('v');
    expect(await p.get('mp:1000')).toBeNull(); // refused means not sent
  });

  it('1,000,000 commands against a paused server: the pool holds at most maxPending of them, refuses the rest at once, and every command settles', async () => {
    const gc = forceGc();
    const p = await pool({ commandTimeout: 0, socketTimeout: 0, maxPending: 50_000 });
    await p.set('warm', '1');
    topo.server.pause();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const total = 1_000_000;
    let ok = 0;
    let queueFull = 0;
    let other = 0;
    let done = 0;
    const allDone = new Promise<void>((resolve) => {
      const okf = () => {
        ok++;
        if (++done === total) resolve();
      };
      const fail = (e: unknown) => {
        if (e instanceof QueueFullError) queueFull++;
        else other++;
        if (++done === total) resolve();
      };
      let i = 0;
      const burst = () => {
        for (let n = 0; n < 50_000 && i < total; n++, i++) p.set('flood', 'v').then(okf, fail);
        if (i < total) setImmediate(burst);
      };
      burst();
    });
    await waitFor(() => queueFull + ok + other >= total - 50_000, 'every command beyond maxPending to be refused', 60_000);
    // What the pool still holds while the server is silent: its 50,000 commands, not a million.
    gc();
    const held = process.memoryUsage().heapUsed - heapBefore;
    topo.server.resume();
    await allDone;
    console.log(`flood: ${ok} ok, ${queueFull} QueueFullError, ${other} other; heap held while paused +${Math.round(held / 1e6)} MB`);
    expect(other).toBe(0);
    expect(ok).toBe(50_000);
    expect(queueFull).toBe(total - 50_000);
    expect(held).toBeLessThan(150 * 1024 * 1024);
    expect(await p.get('warm')).toBe('1');
  });

  it('maxPendingBytes: a server that stops reading fills the socket, then commands reject with QueueFullError instead of piling up', async () => {
    const p = await pool({ maxPendingBytes: 2 * 1024 * 1024, commandTimeout: 0 });
    await p.set('warm', '1');
    topo.server.pause();
    const value = 'v'.repeat(64 * 1024);
    const results: Array<Promise<{ ok: boolean; error?: unknown }>> = [];
    let firstRefusal = -1;
    // Writes go out while the kernel buffers take them; then backpressure holds them in the pool, up to the limit.
    for (let i = 0; i < 2000 && firstRefusal === -1; i++) {
      const r = settled(p.set(`bytes:${i}`, value));
      results.push(r);
      await new Promise((res) => setImmediate(res));
      const peek = await Promise.race([r, Promise.resolve(undefined)]);
      if (peek && !peek.ok && peek.error instanceof QueueFullError) firstRefusal = i;
    }
    expect(firstRefusal).toBeGreaterThan(0);
    const refusal = (await results[firstRefusal]!) as { error: Error };
    expect(refusal.error.message).toMatch(/maxPendingBytes 2097152/);
    topo.server.resume();
    const all = await Promise.all(results);
    expect(all.slice(0, firstRefusal).every((r) => r.ok)).toBe(true);
    expect(await p.get(`bytes:${firstRefusal - 1}`)).toBe(value);
  });
});

describe('heartbeat', () => {
  it('pingInterval finds a silent server on an idle connection before any command hits it, and the pool recovers', async () => {
    const p = await pool({ pingInterval: 200 });
    await p.set('hb', '1');
    const closes: Array<Error | undefined> = [];
    p.on('close', (e) => closes.push(e.error));
    topo.server.pause();
    const paused = Date.now();
    await waitFor(() => closes.some((e) => e !== undefined), 'the heartbeat to close the silent connection', 5000);
    const found = Date.now() - paused;
    console.log(`heartbeat: silent server found after ${found} ms (pingInterval 200)`);
    expect(closes.find((e) => e)!.message).toMatch(/did not answer a heartbeat PING within pingInterval \(200 ms\)/);
    topo.server.resume();
    expect(await p.get('hb')).toBe('1');
  });

  it('no heartbeat PING slips into a lease’s MULTI', async () => {
    const p = await pool({ pingInterval: 50 });
    const pingsBefore = await calls('ping');
    const result = await p.use(async (l) => {
      await l.call('MULTI');
      await l.call('SET', 'hb:multi', 'x');
      // Other connections keep pinging meanwhile; this one, inside MULTI, must not.
      await waitFor(async () => (await calls('ping')) >= pingsBefore + 4, 'heartbeats elsewhere');
      return l.call('EXEC');
    });
    expect(result).toEqual(['OK']);
  });
});

describe('one deadline for every wait', () => {
  it('a per-call timeout longer than socketTimeout wins for that command', async () => {
    const p = await pool({ socketTimeout: 300 });
    // The server busy for 800 ms: no byte flows meanwhile. Not a script polling TIME until 800 ms
    // passed, as this test once used: from Redis 7.2 (and Valkey) TIME is frozen for the whole
    // script, so that loop never ends and the server stays busy for good (the script timed out on
    // 7.2+ whatever the client did). DEBUG SLEEP blocks the same way on every server.
    const slow = ['DEBUG', 'SLEEP', '0.8'] as const;
    expect(await p.with({ timeout: 5000 }).call(...slow)).toBe('OK');
    const r = await settled(p.with({ timeout: 250 }).call(...slow));
    expect(r.ok).toBe(false);
    expect((r as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    await waitFor(async () => (await settled(p.get('x'))).ok, 'the pool answers again');
    // The default commandTimeout (5000) does not stretch socketTimeout: only a per-call timeout does.
    const plain = await settled(p.call(...slow));
    expect(plain.ok).toBe(false);
    expect(String((plain as { error: Error }).error.cause ?? (plain as { error: Error }).error)).toMatch(/socketTimeout 300 ms/);
    await waitFor(async () => (await settled(p.get('x'))).ok, 'the pool answers again');
  });

  it('waiting for an exclusive connection counts within the call’s deadline (blocking command, multi, use)', async () => {
    const p = await pool({ pool: { max: 1, acquireTimeoutMillis: 10_000 } });
    let release!: () => void;
    const holding = p.use(() => new Promise<void>((r) => (release = r)));
    await waitFor(() => p.stats().exclusive.borrowed === 1, 'the only connection lent out');
    const runs: Array<[string, () => Promise<unknown>]> = [
      ['BLPOP', () => p.with({ timeout: 300 }).call('BLPOP', 'dl:list', 1)],
      ['multi', () => p.with({ timeout: 300 }).multi().set('dl:k', 'v').exec()],
      ['use', () => p.with({ timeout: 300 }).use(async (l) => l.get('dl:k'))],
    ];
    for (const [what, run] of runs) {
      const t0 = Date.now();
      const r = await settled(run());
      const took = Date.now() - t0;
      expect(r.ok, what).toBe(false);
      expect((r as { error: unknown }).error, what).toBeInstanceOf(TimeoutError);
      expect(took, what).toBeLessThan(3000);
    }
    release();
    await holding;
    expect(await p.multi().set('dl:k', 'v').get('dl:k').exec()).toEqual(['OK', 'v']);
  });

  it('a blocking command with a non-numeric timeout is refused with a TypeError before sending', async () => {
    const p = await pool();
    const before = await calls('blpop');
    await expect(p.call('BLPOP', 'k', 'abc')).rejects.toThrow(TypeError);
    await expect(p.call('BLPOP', 'k', 'abc')).rejects.toThrow(/BLPOP needs a timeout that is a non-negative number \(got "abc"\)/);
    await expect(p.call('XREAD', 'BLOCK', 'soon', 'STREAMS', 's', '$')).rejects.toThrow(/XREAD BLOCK needs a timeout/);
    expect(await calls('blpop')).toBe(before);
  });
});

describe('fail fast', () => {
  it('offlineQueue: false rejects at once with NodeUnreachableError while the server is down, and works again when it is back', async () => {
    const own = await startStandalone();
    try {
      const p = await StandalonePool.create(own.address, { offlineQueue: false, commandTimeout: 5000, pool: { reconnect: { initialDelay: 50, maxDelay: 200 } } });
      pools.push(p);
      await p.set('k', 'v');
      await own.server.kill();
      // The first call after the drop learns that the node is down; from then on calls fail at once.
      await waitFor(async () => (await settled(p.get('k'))).ok === false && p.stats().lanes.connected === 0, 'the pool to see the node down');
      await waitFor(async () => {
        const r = await settled(p.get('k'));
        return !r.ok && r.error instanceof NodeUnreachableError;
      }, 'a NodeUnreachableError');
      const t0 = Date.now();
      const r = await settled(p.get('k'));
      expect(r.ok).toBe(false);
      expect((r as { error: unknown }).error).toBeInstanceOf(NodeUnreachableError);
      expect(Date.now() - t0).toBeLessThan(1000); // not the 5 s commandTimeout
      await own.server.restart();
      await waitFor(async () => (await settled(p.set('k', 'again'))).ok, 'the pool reconnects in the background');
    } finally {
      await own.stop();
    }
  });
});

describe('option limits', () => {
  it.each<[string, StandaloneOptions, RegExp]>([
    ['pingInterval beyond a timer', { pingInterval: 2 ** 31 }, /Option pingInterval/],
    ['keepAlive negative', { keepAlive: -1 }, /Option keepAlive/],
    ['keepAlive below a second', { keepAlive: 500 }, /Option keepAlive must be 0 \(off\) or at least 1000 ms/],
    ['maxPending 0', { maxPending: 0 }, /Option maxPending/],
    ['maxPendingBytes tiny', { maxPendingBytes: 10 }, /Option maxPendingBytes/],
    ['socketTimeout beyond a timer', { socketTimeout: 2 ** 31 }, /Option socketTimeout/],
    ['closeTimeout beyond a timer', { closeTimeout: 2 ** 31 }, /Option closeTimeout/],
    ['offlineQueue not a boolean', { offlineQueue: 'no' as never }, /Option offlineQueue/],
  ])('%s -> TypeError naming it', async (_n, options, message) => {
    await expect(StandalonePool.create(topo.address, options)).rejects.toThrow(TypeError);
    await expect(StandalonePool.create(topo.address, options)).rejects.toThrow(message);
  });
});

describe('no deadline', () => {
  it('with commandTimeout 0 retries end after connectTimeout, and the TimeoutError says that was the limit', async () => {
    const own = await startStandalone();
    try {
      const p = await StandalonePool.create(own.address, { commandTimeout: 0, connectTimeout: 300, pool: { reconnect: { initialDelay: 20, maxDelay: 50 } } });
      pools.push(p);
      expect(await p.set('nd:k', 'v')).toBe('OK');
      await own.server.kill();
      const err = await p.get('nd:k').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as TimeoutError).message).toMatch(/within the retry window \(connectTimeout 300 ms; the call has no deadline\)/);
      expect((err as TimeoutError).cause).toBeInstanceOf(Error);
    } finally {
      await own.stop();
    }
  });
});

describe('far deadlines', () => {
  it('a blocking call weeks long (beyond a 2^31-1 ms timer) does not spin its connection timer', async () => {
    const p = await pool();
    const warnings: string[] = [];
    const onWarning = (w: Error) => { if (w.name === 'TimeoutOverflowWarning') warnings.push(w.message); };
    process.on('warning', onWarning);
    try {
      const got = await p.use(async (lease) => {
        const popped = lease.blpop('far:q', 3e6); // 34 days
        await lease.with({ timeout: 200 }).get('far:k').catch(() => undefined);
        // The timer, re-armed by that call, would fire every millisecond from here (Node's cap).
        const until = Date.now() + 500;
        await waitFor(() => Date.now() >= until, 'half a second to pass', 5000, 50);
        await p.lpush('far:q', 'x');
        return { popped: await popped };
      });
      expect(got.popped).toEqual(['far:q', 'x']);
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('exclusive connections to a stalled server', () => {
  it('a wait cut by the deadline says a connection was still being opened, not to raise pool.max', async () => {
    const p = await pool({ commandTimeout: 1000 });
    topo.server.pause();
    const err = await p.blpop('stall:q', 1).catch((e: unknown) => e);
    topo.server.resume();
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toMatch(/became free within the call's deadline; a connection was still being opened \(0 of pool\.max \d+ lent out\)/);
    expect((err as Error).message).not.toMatch(/\.\.$/);
  });
});
