/**
 * Connection: pipelining, deadlines, aborts, broken sockets and malformed replies against a
 * scripted fake server; handshake, pub/sub and binary data against a real redis-server.
 */
import net from 'node:net';
import util from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { resolveConnectionOptions, type ConnectionOptions } from '../../src/connection/options.js';
import { PACKAGE_VERSION } from '../../src/version.js';
import {
  AuthenticationError, ConnectionError, ProtocolError, RedisError, TimeoutError, UncertainWriteError,
} from '../../src/errors.js';
import type { Arg, NodeAddress, Reply } from '../../src/types.js';
import { startFakeServer, resp, type FakeHandler, type FakeServer } from '../support/fake-server.js';
import { decodeCommand } from '../support/resp-wire.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';
import { deferred } from '../support/deferred.js';

// ------------------------------------------------------------------ helpers

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fake(handler: FakeHandler): Promise<FakeServer> {
  const s = await startFakeServer(handler);
  cleanups.push(() => s.close());
  return s;
}

// These fakes script every reply: without CLIENT SETINFO in the handshake unless a test asks for it.
async function connect(address: NodeAddress, o: ConnectionOptions = {}, extra?: Arg[][]): Promise<Connection> {
  const c = await Connection.connect(address, resolveConnectionOptions({ disableClientInfo: true, ...o }), extra);
  cleanups.push(() => c.destroy());
  return c;
}


/** Tracks a promise's outcome without letting a rejection go unhandled. */
function track<T>(p: Promise<T>) {
  const t = { state: 'pending' as 'pending' | 'resolved' | 'rejected', value: undefined as T | undefined, error: undefined as unknown, done: p as Promise<unknown> };
  t.done = p.then(
    (v) => { t.state = 'resolved'; t.value = v; },
    (e) => { t.state = 'rejected'; t.error = e; },
  );
  return t;
}

/** The error a promise rejects with; fails the test if it resolves. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    (v) => { throw new Error(`expected a rejection, got ${util.inspect(v)}`); },
    (e: Error) => e,
  );
}

/** Every error in a cause chain. */
function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let x = e; x !== undefined && out.length < 10; x = (x as Error).cause) out.push(x);
  return out;
}

/** A fake server handler: PING -> PONG, ECHO x -> x, GET k -> bulk `v:k`, anything else +OK. */
const basic: FakeHandler = (cmd) => {
  const name = cmd[0]!.toUpperCase();
  if (name === 'PING') return resp.simple('PONG');
  if (name === 'ECHO') return resp.bulk(cmd[1]!);
  if (name === 'GET') return resp.bulk(`v:${cmd[1]}`);
  return resp.simple('OK');
};

// ------------------------------------------------------------------ pipelining

describe('Connection: pipelining', () => {
  /** A raw TCP server that records how the bytes arrived: one entry per 'data' event. */
  async function chunkRecorder() {
    const chunks: Buffer[] = [];
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      let buf = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        buf = Buffer.concat([buf, chunk]);
        let out = '';
        for (;;) {
          const d = decodeCommand(buf);
          if (!d) break;
          buf = buf.subarray(d.next);
          out += resp.bulk(d.value.slice(1).join(' '));
        }
        if (out) socket.write(out);
      });
    });
    await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
    const address = { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
    cleanups.push(() => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }));
    return { address, chunks };
  }

  it('commands sent in the same tick arrive in one socket write, and each gets its own reply', async () => {
    const { address, chunks } = await chunkRecorder();
    const conn = await connect(address);
    expect(chunks).toHaveLength(0); // no handshake without password/db/name
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => conn.send(['ECHO', `m${i}`])));
    expect(replies).toEqual(Array.from({ length: 100 }, (_, i) => `m${i}`));
    expect(chunks).toHaveLength(1);
  });

  it('a batch with Buffer arguments also goes out as one write, binary bytes intact', async () => {
    const { address, chunks } = await chunkRecorder();
    const conn = await connect(address);
    const bin = Buffer.from([0x00, 0x0d, 0x0a, 0x41]);
    const out = await Promise.all([
      conn.send(['ECHO', 'a']),
      conn.send(['ECHO', bin]),
      conn.send(['ECHO', 'b']),
      conn.send(['ECHO', Buffer.from('c')]),
      conn.send(['ECHO', 'd']),
    ]);
    expect(out).toEqual(['a', '\0\r\nA', 'b', 'c', 'd']);
    expect(chunks).toHaveLength(1);
  });

  it('commands from different ticks keep their order and replies', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address);
    const ps: Array<Promise<Reply>> = [];
    for (let i = 0; i < 20; i++) {
      ps.push(conn.send(['ECHO', String(i)]));
      if (i % 3 === 0) await Promise.resolve(); // a new microtask …
      if (i % 5 === 0) await new Promise((r) => setImmediate(r)); // … and a new macrotask
    }
    expect(await Promise.all(ps)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it('an invalid argument rejects that command with TypeError and nothing is sent', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address);
    const bad = await rejection(conn.send(['SET', 'k', null as unknown as string]));
    expect(bad).toBeInstanceOf(TypeError);
    expect(await conn.send(['PING'])).toBe('PONG');
    expect(server.received).toEqual([['PING']]);
  });
});

// ------------------------------------------------------------------ deadlines

describe('Connection: command timeout', () => {
  /** GET slow waits for `release`; everything else is answered at once (in command order). */
  function slowServer() {
    const release = deferred();
    return {
      release,
      handler: (async (cmd) => {
        if (cmd[0] === 'GET' && cmd[1] === 'slow') {
          await release.promise;
          return resp.bulk('late reply of slow');
        }
        return basic(cmd, undefined as never);
      }) satisfies FakeHandler,
    };
  }

  it('rejects with TimeoutError (sent: true); the late reply is discarded and the next command gets its own reply', async () => {
    const { release, handler } = slowServer();
    const server = await fake(handler);
    const conn = await connect(server.address, { commandTimeout: 5000 });
    const err = await rejection(conn.send(['GET', 'slow'], { timeout: 100 }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err).not.toBeInstanceOf(ConnectionError);
    expect((err as TimeoutError).sent).toBe(true);
    expect(err.message).toMatch(/GET/);
    const next = track(conn.send(['GET', 'fast']));
    await waitFor(() => server.received.some((c) => c[1] === 'fast'), 'the second command to reach the server');
    release.resolve(); // the server now answers the first command, then the second
    await next.done;
    expect(next.state).toBe('resolved');
    expect(next.value).toBe('v:fast');
    expect(conn.ready).toBe(true);
    expect(await conn.send(['ECHO', 'still in sync'])).toBe('still in sync');
  });

  it('the connection-wide commandTimeout applies when no per-command timeout is given', async () => {
    const { release, handler } = slowServer();
    const server = await fake(handler);
    const conn = await connect(server.address, { commandTimeout: 100 });
    const err = await rejection(conn.send(['GET', 'slow']));
    expect(err).toBeInstanceOf(TimeoutError);
    release.resolve();
    expect(await conn.send(['GET', 'x'])).toBe('v:x');
  });

  it('timeout 0 (per command, or commandTimeout 0) disables the deadline', async () => {
    for (const [connTimeout, cmdTimeout] of [[100, 0], [0, undefined]] as const) {
      const { release, handler } = slowServer();
      const server = await fake(handler);
      const conn = await connect(server.address, { commandTimeout: connTimeout, socketTimeout: 0 });
      const waiting = track(conn.send(['GET', 'slow'], cmdTimeout === undefined ? {} : { timeout: cmdTimeout }));
      // A command sent after it, with a 150 ms deadline, is our clock.
      const clock = await rejection(conn.send(['PING'], { timeout: 150 }));
      expect(clock).toBeInstanceOf(TimeoutError);
      await new Promise((r) => setImmediate(r));
      expect(waiting.state).toBe('pending');
      release.resolve();
      await waiting.done;
      expect(waiting.value).toBe('late reply of slow');
      expect(await conn.send(['ECHO', 'after'])).toBe('after'); // the PING's late reply was dropped
    }
  });
});

describe('Connection: socketTimeout', () => {
  it('a server that stops answering: the connection is dropped, pending commands reject with UncertainWriteError caused by a TimeoutError', async () => {
    const server = await fake(() => undefined);
    const conn = await connect(server.address, { socketTimeout: 200, commandTimeout: 0 });
    let closeError: Error | undefined;
    conn.on('close', (e) => (closeError = e));
    const a = conn.send(['SET', 'k', 'v']);
    const b = conn.send(['GET', 'k']);
    const [ea, eb] = await Promise.all([rejection(a), rejection(b)]);
    for (const e of [ea, eb]) {
      expect(e).toBeInstanceOf(UncertainWriteError);
      expect(e).toBeInstanceOf(ConnectionError);
      expect(e.cause).toBeInstanceOf(TimeoutError);
    }
    expect(conn.isOpen).toBe(false);
    expect(closeError).toBeDefined();
    expect(causes(closeError).some((c) => c instanceof TimeoutError)).toBe(true);
    // Afterwards: rejected at once as not sent.
    const late = await rejection(conn.send(['PING']));
    expect(late).toBeInstanceOf(ConnectionError);
    expect(late).not.toBeInstanceOf(UncertainWriteError);
  });

  it('an idle connection (nothing pending) is not dropped', async () => {
    const server = await fake(basic);
    const idle = await connect(server.address, { socketTimeout: 100 });
    expect(await idle.send(['PING'])).toBe('PONG');
    // Clock: another connection to a silent server is dropped after the same socketTimeout.
    const silent = await fake(() => undefined);
    const clock = await connect(silent.address, { socketTimeout: 150, commandTimeout: 0 });
    expect(await rejection(clock.send(['PING']))).toBeInstanceOf(UncertainWriteError);
    expect(idle.ready).toBe(true);
    expect(await idle.send(['PING'])).toBe('PONG');
  });

  it('a blocking command is exempt while it waits', async () => {
    const release = deferred();
    const server = await fake(async (cmd) => {
      if (cmd[0] === 'BLPOP') {
        await release.promise;
        return resp.bulks(['q', 'item']);
      }
      return undefined; // everything else: never answered
    });
    const blocked = await connect(server.address, { socketTimeout: 150, commandTimeout: 0 });
    const clock = await connect(server.address, { socketTimeout: 150, commandTimeout: 0 });
    const pop = track(blocked.send(['BLPOP', 'q', '0'], { blocking: true }));
    // Sent later with the same socketTimeout: once it is dropped, the blocking one has waited longer.
    expect(await rejection(clock.send(['PING']))).toBeInstanceOf(UncertainWriteError);
    expect(pop.state).toBe('pending');
    expect(blocked.ready).toBe(true);
    release.resolve();
    await pop.done;
    expect(pop.value).toEqual(['q', 'item']);
  });

  it('a slow reply that keeps bytes flowing is not a socket timeout', async () => {
    const reply = Buffer.from(resp.bulk('x'.repeat(40)));
    const server = await fake(async (_cmd, socket) => {
      for (const b of reply) {
        socket.write(Buffer.from([b]));
        await new Promise((r) => setTimeout(r, 10));
      }
      return undefined;
    });
    const conn = await connect(server.address, { socketTimeout: 250, commandTimeout: 0 });
    const t0 = Date.now();
    expect(await conn.send(['GET', 'k'])).toBe('x'.repeat(40));
    expect(Date.now() - t0).toBeGreaterThan(250); // the scenario really outlasted socketTimeout
    expect(conn.ready).toBe(true);
  });
});

describe('Connection: connect', () => {
  it('connectTimeout: a server that accepts but never answers the handshake -> TimeoutError, socket closed', async () => {
    const PASSWORD = 'hs-Pa55word-Quokka-4410';
    let serverSide: net.Socket | undefined;
    const server = await fake((_cmd, socket) => {
      serverSide = socket;
      return undefined;
    });
    const err = await rejection(Connection.connect(server.address, resolveConnectionOptions({ password: PASSWORD, connectTimeout: 300 })));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toMatch(/connectTimeout/);
    expect(util.inspect(err, { depth: 10 })).not.toContain(PASSWORD);
    expect(server.received[0]?.[0]).toBe('AUTH'); // there was a handshake, and it was sent
    await waitFor(() => serverSide?.destroyed || serverSide?.readableEnded, 'the client to close its socket');
  });

  it('a refused connection rejects with ConnectionError', async () => {
    const server = await startFakeServer(basic);
    const address = server.address;
    await server.close();
    const err = await rejection(Connection.connect(address, resolveConnectionOptions({ connectTimeout: 5000 })));
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err).not.toBeInstanceOf(TimeoutError);
  });

  it('a failing extra handshake step rejects connect with ConnectionError naming the step', async () => {
    const server = await fake((cmd) => (cmd[0] === 'READONLY' ? resp.error('ERR This instance has cluster support disabled') : resp.simple('OK')));
    const err = await rejection(Connection.connect(server.address, resolveConnectionOptions({}), [['READONLY']]));
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toMatch(/READONLY/);
    expect(err.cause).toBeInstanceOf(RedisError);
  });

  it('protocol 3 against a server without HELLO says RESP3 is not supported', async () => {
    const server = await fake((cmd) => (cmd[0] === 'HELLO' ? resp.error("ERR unknown command 'HELLO', with args beginning with: '3'") : resp.simple('OK')));
    const err = await rejection(Connection.connect(server.address, resolveConnectionOptions({ protocol: 3 })));
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toMatch(/RESP3/);
  });

  it('the RESP2 handshake sends AUTH, CLIENT SETNAME, SELECT, then the extra steps, in order', async () => {
    const server = await fake(() => resp.simple('OK'));
    const conn = await connect(server.address, { username: 'u', password: 'p', clientName: 'cn', db: 2, disableClientInfo: false }, [['READONLY']]);
    expect(server.received).toEqual([
      ['AUTH', 'u', 'p'], ['CLIENT', 'SETNAME', 'cn'],
      ['CLIENT', 'SETINFO', 'LIB-NAME', 'redis-ha-pool'], ['CLIENT', 'SETINFO', 'LIB-VER', PACKAGE_VERSION],
      ['SELECT', '2'], ['READONLY'],
    ]);
    expect(conn.ready).toBe(true);
  });

  it('CLIENT SETINFO refused as unknown (Redis 6.2, 7.0) or denied by ACL: the connection is made all the same', async () => {
    for (const refusal of ["ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.", "NOPERM User app has no permissions to run the 'client|setinfo' command"]) {
      const server = await fake((cmd) => (cmd[1] === 'SETINFO' ? resp.error(refusal) : resp.simple('OK')));
      const conn = await connect(server.address, { clientInfoTag: 'billing', disableClientInfo: false }, [['READONLY']]);
      expect(server.received).toEqual([
        ['CLIENT', 'SETINFO', 'LIB-NAME', 'redis-ha-pool(billing)'], ['CLIENT', 'SETINFO', 'LIB-VER', PACKAGE_VERSION], ['READONLY'],
      ]);
      expect(conn.ready).toBe(true);
      expect(await conn.send(['SET', 'k', 'v'])).toBe('OK');
    }
  });
});

// ------------------------------------------------------------------ abort

describe('Connection: AbortSignal', () => {
  it('aborting a queued command rejects it with the reason and it is never sent', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address);
    const ac = new AbortController();
    const p = conn.send(['SET', 'aborted', '1'], { signal: ac.signal });
    const reason = new Error('caller gave up');
    ac.abort(reason);
    expect(await rejection(p)).toBe(reason);
    expect(await conn.send(['PING'])).toBe('PONG');
    expect(server.received).toEqual([['PING']]);
  });

  it('an already aborted signal rejects at once, nothing sent', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address);
    const reason = new Error('already');
    expect(await rejection(conn.send(['SET', 'x', '1'], { signal: AbortSignal.abort(reason) }))).toBe(reason);
    expect(await conn.send(['PING'])).toBe('PONG');
    expect(server.received).toEqual([['PING']]);
  });

  it('aborting a written command rejects it; its late reply is discarded', async () => {
    const release = deferred();
    const server = await fake(async (cmd) => {
      if (cmd[1] === 'slow') {
        await release.promise;
        return resp.bulk('late');
      }
      return basic(cmd, undefined as never);
    });
    const conn = await connect(server.address);
    const ac = new AbortController();
    const p = track(conn.send(['GET', 'slow'], { signal: ac.signal }));
    await waitFor(() => server.received.length === 1, 'the command to be written');
    const reason = new Error('user navigated away');
    ac.abort(reason);
    await p.done;
    expect(p.error).toBe(reason);
    const next = track(conn.send(['GET', 'next']));
    await waitFor(() => server.received.length === 2, 'the next command to be written');
    release.resolve();
    await next.done;
    expect(next.value).toBe('v:next');
  });

  it('aborting after the reply arrived changes nothing', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address);
    const ac = new AbortController();
    expect(await conn.send(['GET', 'k'], { signal: ac.signal })).toBe('v:k');
    ac.abort(new Error('too late'));
    expect(await conn.send(['GET', 'j'])).toBe('v:j');
  });

  it('aborting a queued multi-channel SUBSCRIBE does not steal the replies of later commands', async () => {
    const server = await fake(basic);
    const conn = await connect(server.address, { commandTimeout: 1000 });
    const ac = new AbortController();
    const sub = conn.send(['SUBSCRIBE', 'a', 'b', 'c'], { signal: ac.signal });
    ac.abort(new Error('never mind'));
    await rejection(sub);
    expect(await conn.send(['GET', 'k'])).toBe('v:k');
    expect(await conn.send(['GET', 'j'])).toBe('v:j');
    expect(server.received.map((c) => c[0])).toEqual(['GET', 'GET']);
  });
});

// ------------------------------------------------------------------ broken sockets, bad replies

describe('Connection: socket failures', () => {
  it('server closes the socket: written commands reject with UncertainWriteError caused by the close', async () => {
    const server = await fake((cmd, socket) => {
      if (cmd[0] === 'QUITNOW') {
        socket.end();
        return undefined;
      }
      return basic(cmd, socket);
    });
    const conn = await connect(server.address);
    let closeError: Error | undefined;
    const closed = new Promise<void>((r) => conn.on('close', (e) => { closeError = e; r(); }));
    const ok = conn.send(['GET', 'a']);
    const doomed1 = conn.send(['QUITNOW']);
    const doomed2 = conn.send(['GET', 'b']);
    expect(await ok).toBe('v:a');
    for (const e of await Promise.all([rejection(doomed1), rejection(doomed2)])) {
      expect(e).toBeInstanceOf(UncertainWriteError);
      expect(e.cause).toBeInstanceOf(ConnectionError);
      expect((e.cause as Error).message).toMatch(/closed/);
      expect((e as ConnectionError).address).toEqual(server.address);
    }
    await closed;
    expect(closeError).toBeInstanceOf(ConnectionError);
    expect(conn.isOpen).toBe(false);
    expect(conn.closeReason).toBe(closeError);
    const after = await rejection(conn.send(['PING']));
    expect(after).toBeInstanceOf(ConnectionError);
    expect(after).not.toBeInstanceOf(UncertainWriteError);
  });

  it('connection reset: written commands reject with UncertainWriteError whose cause carries the socket error', async () => {
    const server = await fake((cmd, socket) => {
      if (cmd[0] === 'RESET-ME') {
        socket.resetAndDestroy();
        return undefined;
      }
      return basic(cmd, socket);
    });
    const conn = await connect(server.address);
    const e = await rejection(conn.send(['RESET-ME']));
    expect(e).toBeInstanceOf(UncertainWriteError);
    expect(e.cause).toBeInstanceOf(ConnectionError);
    // The peer's RST reaches the reader as ECONNRESET, which the cause chain keeps.
    const codes = causes(e).map((c) => (c as NodeJS.ErrnoException).code).filter(Boolean);
    expect(codes).toContain('ECONNRESET');
  });

  it('destroy(err): unwritten commands reject with ConnectionError (safe to retry), written ones with UncertainWriteError', async () => {
    const server = await fake(() => undefined);
    const conn = await connect(server.address, { commandTimeout: 0 });
    const written = conn.send(['SET', 'a', '1']);
    await waitFor(() => server.received.length === 1, 'the first command to be written');
    const queued = conn.send(['SET', 'b', '2']); // same tick as destroy: never written
    const why = new Error('owner shut it down');
    conn.destroy(why);
    const [ew, eq] = await Promise.all([rejection(written), rejection(queued)]);
    expect(ew).toBeInstanceOf(UncertainWriteError);
    expect(ew.cause).toBe(why);
    expect(eq).toBeInstanceOf(ConnectionError);
    expect(eq).not.toBeInstanceOf(UncertainWriteError);
    expect(eq.cause).toBe(why);
    expect(conn.closeReason).toBe(why);
    expect(server.received).toEqual([['SET', 'a', '1']]);
  });

  it('close(ms) waits for pending replies, then closes cleanly', async () => {
    const release = deferred();
    const server = await fake(async (cmd) => {
      if (cmd[1] === 'slow') {
        await release.promise;
        return resp.bulk('slow value');
      }
      return basic(cmd, undefined as never);
    });
    const conn = await connect(server.address);
    const closeEvents: Array<Error | undefined> = [];
    conn.on('close', (e) => closeEvents.push(e));
    const pending = track(conn.send(['GET', 'slow']));
    const closing = track(conn.close(5000));
    await waitFor(() => server.received.length >= 1, 'the command to be written');
    await new Promise((r) => setImmediate(r));
    expect(closing.state).toBe('pending');
    release.resolve();
    await closing.done;
    expect(pending.state).toBe('resolved');
    expect(pending.value).toBe('slow value');
    expect(conn.isOpen).toBe(false);
    expect(closeEvents).toEqual([undefined]);
  });

  it('close(ms) gives up after ms when the server never answers; pending commands reject as uncertain', async () => {
    const server = await fake(() => undefined);
    const conn = await connect(server.address, { commandTimeout: 0 });
    const pending = conn.send(['SET', 'k', 'v']);
    await conn.close(100);
    expect(await rejection(pending)).toBeInstanceOf(UncertainWriteError);
    expect(conn.isOpen).toBe(false);
  });
});

describe('Connection: reply framing', () => {
  const REPLY = '*4\r\n$5\r\nhello\r\n:42\r\n%1\r\n+k\r\n*2\r\n$-1\r\n,3.5\r\n$7\r\nbin\r\n\x00\xff\r\n';

  it('a reply written one byte at a time decodes, and the next command still gets its own reply', async () => {
    const server = await fake(async (cmd, socket) => {
      if (cmd[0] === 'TRICKLE') {
        for (const b of Buffer.from(REPLY, 'latin1')) {
          socket.write(Buffer.from([b]));
          await new Promise((r) => setImmediate(r));
        }
        return undefined;
      }
      return basic(cmd, socket);
    });
    const conn = await connect(server.address);
    const [v, next] = await Promise.all([conn.send(['TRICKLE'], { returnBuffers: true }), conn.send(['GET', 'n'])]);
    expect(v).toEqual([
      Buffer.from('hello'), 42, new Map([['k', [null, 3.5]]]), Buffer.from('bin\r\n\x00\xff', 'latin1'),
    ]);
    expect(next).toBe('v:n');
  });

  it.each([1, 3, 4, 5, 9, 10, 11, 30, REPLY.length - 2, REPLY.length - 1])('a reply split in two at byte %i decodes', async (at) => {
    const bytes = Buffer.from(REPLY, 'latin1');
    const server = await fake(async (_cmd, socket) => {
      socket.write(bytes.subarray(0, at));
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 5));
      socket.write(bytes.subarray(at));
      return undefined;
    });
    const conn = await connect(server.address);
    const v = (await conn.send(['X'], { returnBuffers: true })) as Reply[];
    expect(v[1]).toBe(42);
    expect((v[3] as Buffer).equals(Buffer.from('bin\r\n\x00\xff', 'latin1'))).toBe(true);
  });

  it('returnBuffers applies to its own command only', async () => {
    const server = await fake(() => resp.bulk('same'));
    const conn = await connect(server.address);
    const [a, b, c] = await Promise.all([
      conn.send(['GET', 'k'], { returnBuffers: true }),
      conn.send(['GET', 'k']),
      conn.send(['GET', 'k'], { returnBuffers: true }),
    ]);
    expect(Buffer.isBuffer(a) && Buffer.isBuffer(c)).toBe(true);
    expect(b).toBe('same');
  });

  it('an error reply rejects that command only with RedisError (code, address); the connection stays usable', async () => {
    const server = await fake((cmd) => (cmd[0] === 'BAD' ? resp.error('WRONGTYPE Operation against a key holding the wrong kind of value') : resp.simple('OK')));
    const conn = await connect(server.address);
    const [bad, good] = await Promise.allSettled([conn.send(['BAD']), conn.send(['SET', 'k', 'v'])]);
    expect(bad.status).toBe('rejected');
    const err = (bad as PromiseRejectedResult).reason as RedisError;
    expect(err).toBeInstanceOf(RedisError);
    expect(err.code).toBe('WRONGTYPE');
    expect(err.address).toEqual(server.address);
    expect(good).toEqual({ status: 'fulfilled', value: 'OK' });
    expect(conn.ready).toBe(true);
  });

  it('garbage bytes -> ProtocolError: the connection closes and every pending command rejects', async () => {
    let serverSide: net.Socket | undefined;
    const server = await fake((cmd, socket) => {
      serverSide = socket;
      return cmd[0] === 'GARBAGE' ? '@this is not RESP\r\n' : undefined;
    });
    const conn = await connect(server.address, { commandTimeout: 0 });
    let closeError: Error | undefined;
    conn.on('close', (e) => (closeError = e));
    const first = conn.send(['GARBAGE']);
    const second = conn.send(['GET', 'k']);
    const [e1, e2] = await Promise.all([rejection(first), rejection(second)]);
    // The command whose reply was garbage gets the ProtocolError itself (it ran; never re-sent) …
    expect(e1).toBeInstanceOf(ProtocolError);
    expect(e1.message).toMatch(/The reply to GARBAGE from 127\.0\.0\.1:\d+ was refused/);
    // … the others fail as in any dropped connection.
    expect(e2).toBeInstanceOf(UncertainWriteError);
    expect(e2.cause).toBeInstanceOf(ProtocolError);
    expect(closeError).toBeInstanceOf(ProtocolError);
    expect(conn.isOpen).toBe(false);
    await waitFor(() => serverSide?.destroyed || serverSide?.readableEnded, 'the socket to be closed');
  });

  it('a reply with no command waiting for it is a ProtocolError', async () => {
    const server = await fake((cmd) => (cmd[0] === 'PING' ? '+PONG\r\n+UNSOLICITED\r\n' : undefined));
    const conn = await connect(server.address);
    const closed = new Promise<Error | undefined>((r) => conn.on('close', r));
    expect(await conn.send(['PING'])).toBe('PONG');
    expect(await closed).toBeInstanceOf(ProtocolError);
  });

  it('a reply bigger than maxReplyBytes is refused before it is received', async () => {
    const server = await fake(() => `$${10 * 1024 * 1024}\r\n` + 'x'.repeat(1000));
    const conn = await connect(server.address, { maxReplyBytes: 1024 * 1024 });
    const e = await rejection(conn.send(['GET', 'huge']));
    expect(e).toBeInstanceOf(ProtocolError);
    expect(e.message).toMatch(/The reply to GET .* was refused: A reply length of 10485760 exceeds maxReplyBytes \(1048576\)/);
  });

  it('RESP3 attributes are handed to onAttributes, not mixed into the value', async () => {
    const server = await fake(() => '|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.5\r\n*1\r\n:7\r\n');
    const conn = await connect(server.address);
    let attrs: Map<Reply, Reply> | undefined;
    expect(await conn.send(['X'], { onAttributes: (a) => (attrs = a) })).toEqual([7]);
    expect(attrs).toEqual(new Map([['key-popularity', new Map([['a', 0.5]])]]));
  });

  it('an out-of-band RESP3 push is emitted as a push event and does not consume a reply', async () => {
    const server = await fake((cmd) => (cmd[0] === 'GET' ? '>2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n' + resp.bulk('v') : undefined));
    const conn = await connect(server.address);
    const pushes: Reply[][] = [];
    conn.on('push', (v) => pushes.push(v));
    expect(await conn.send(['GET', 'k'])).toBe('v');
    expect(pushes).toEqual([['invalidate', ['k']]]);
  });
});

// ------------------------------------------------------------------ real server

describe('Connection against a real redis-server', () => {
  const PASSWORD = 'default-Pa55-Narwhal-9921';
  const ALICE_PASSWORD = 'alice-Pa55-Ocelot-3307';
  const WRONG = 'Wr0ng-Pa55w0rd-Zebra-7731';
  const BOB_PASSWORD = 'bob-Pa55-Heron-5150';
  let topo: StandaloneTopology;

  beforeAll(async () => {
    topo = await startStandalone({ password: PASSWORD, acl: [
      `user alice on >${ALICE_PASSWORD} ~* &* +@all`,
      // May only use channels named allowed:*.
      `user bob on >${BOB_PASSWORD} ~* resetchannels &allowed:* +@all`,
    ] });
  });
  afterAll(async () => {
    await topo?.stop();
  });

  let keyN = 0;
  const key = (what: string) => `conn-test:${what}:${process.pid}:${++keyN}`;

  describe.each([2, 3] as const)('protocol %i', (protocol) => {
    it('authenticates as the default user and runs commands', async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD });
      expect(await conn.send(['PING'])).toBe('PONG');
      expect(await conn.send(['ACL', 'WHOAMI'])).toBe('default');
      const k = key('set');
      expect(await conn.send(['SET', k, 'v'])).toBe('OK');
      expect(await conn.send(['GET', k])).toBe('v');
    });

    it('authenticates an ACL user with username + password', async () => {
      const conn = await connect(topo.address, { protocol, username: 'alice', password: ALICE_PASSWORD });
      expect(await conn.send(['ACL', 'WHOAMI'])).toBe('alice');
    });

    it.each([
      ['the default user', {}],
      ['an ACL user', { username: 'alice' }],
    ])('a wrong password for %s -> AuthenticationError that never shows the password', async (_who, extra) => {
      const err = await rejection(Connection.connect(topo.address, resolveConnectionOptions({ protocol, password: WRONG, ...extra })));
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err).toBeInstanceOf(ConnectionError);
      expect(err.message).toMatch(/authentication failed/i);
      expect(err.message).not.toContain(WRONG);
      expect(String(err)).not.toContain(WRONG);
      expect(util.inspect(err, { depth: 20 })).not.toContain(WRONG);
      expect(JSON.stringify(causes(err).map((c) => String(c)))).not.toContain(WRONG);
    });

    it('no password against a server that requires one: refused with NOAUTH', async () => {
      if (protocol === 2) {
        // Nothing to send in the handshake: the first command is refused.
        const conn = await connect(topo.address, { protocol });
        const e = await rejection(conn.send(['GET', 'x']));
        expect(e).toBeInstanceOf(RedisError);
        expect((e as RedisError).code).toBe('NOAUTH');
      } else {
        // HELLO 3 itself is refused.
        const e = await rejection(Connection.connect(topo.address, resolveConnectionOptions({ protocol })));
        expect(e).toBeInstanceOf(AuthenticationError);
      }
    });

    it('selects the configured db: a key written is visible only in that db', async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD, db: 3 });
      const k = key('db');
      await conn.send(['SET', k, 'in-db-3']);
      expect(await topo.server.cli('-n', '3', 'GET', k)).toBe('in-db-3');
      expect(await topo.server.cli('-n', '0', 'GET', k)).toBe('');
    });

    it('sets the client name, visible in CLIENT LIST', async () => {
      const name = `ha-pool-test-${protocol}-${process.pid}`;
      const conn = await connect(topo.address, { protocol, password: PASSWORD, clientName: name });
      expect(await conn.send(['CLIENT', 'GETNAME'])).toBe(name);
      const list = await topo.server.cli('CLIENT', 'LIST');
      expect(list).toContain(`name=${name} `);
    });

    it(`HGETALL decodes as ${protocol === 3 ? 'a Map' : 'a flat array'}`, async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD });
      const k = key('hash');
      await conn.send(['HSET', k, 'f1', 'v1', 'f2', 'v2']);
      const v = await conn.send(['HGETALL', k]);
      if (protocol === 3) expect(v).toEqual(new Map([['f1', 'v1'], ['f2', 'v2']]));
      else expect(v).toEqual(['f1', 'v1', 'f2', 'v2']);
    });

    it('pub/sub: SUBSCRIBE resolves after confirmation; messages arrive as push events', async () => {
      const sub = await connect(topo.address, { protocol, password: PASSWORD });
      const pub = await connect(topo.address, { protocol, password: PASSWORD });
      const pushes: Reply[][] = [];
      sub.on('push', (v) => pushes.push(v));
      const chA = key('ch-a');
      const chB = key('ch-b');
      await sub.send(['SUBSCRIBE', chA, chB]);
      expect(sub.dirty).toBe(true);
      // Both channels are subscribed by the time SUBSCRIBE resolved.
      expect(await pub.send(['PUBLISH', chB, 'to-b'])).toBe(1);
      expect(await pub.send(['PUBLISH', chA, 'to-a'])).toBe(1);
      await waitFor(() => pushes.length >= 2, 'two messages', 10_000);
      expect(pushes).toEqual([['message', chB, 'to-b'], ['message', chA, 'to-a']]);
      // Patterns too.
      const prefix = key('news');
      await sub.send(['PSUBSCRIBE', `${prefix}.*`]);
      expect(await pub.send(['PUBLISH', `${prefix}.sport`, 'goal'])).toBe(1);
      await waitFor(() => pushes.length >= 3, 'a pattern message', 10_000);
      expect(pushes[2]).toEqual(['pmessage', `${prefix}.*`, `${prefix}.sport`, 'goal']);
      // PING still works on a subscribed connection: its reply (RESP2 gives the subscribed form,
      // ['pong', '']) resolves the PING and is not taken for a message.
      expect(await sub.send(['PING'])).toEqual(protocol === 3 ? 'PONG' : ['pong', '']);
      expect(pushes).toHaveLength(3);
    });

    it('a SUBSCRIBE refused by ACL rejects with NOPERM and later commands still get their own replies', async () => {
      const conn = await connect(topo.address, { protocol, username: 'bob', password: BOB_PASSWORD, commandTimeout: 2000 });
      const e = await rejection(conn.send(['SUBSCRIBE', 'allowed:1', 'forbidden', 'allowed:2']));
      expect(e).toBeInstanceOf(RedisError);
      expect((e as RedisError).code).toBe('NOPERM');
      expect(await conn.send(['PING'])).toBe('PONG');
      expect(await conn.send(['ECHO', 'in sync'])).toBe('in sync');
    });

    it('pipelines 1000 commands in one tick, replies in order', async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD });
      const k = key('incr');
      const out = await Promise.all(Array.from({ length: 1000 }, () => conn.send(['INCR', k])));
      expect(out).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    });

    it('binary values round-trip byte for byte with returnBuffers', async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD });
      const k = key('bin');
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      await conn.send(['SET', k, bytes]);
      const back = await conn.send(['GET', k], { returnBuffers: true });
      expect(Buffer.isBuffer(back)).toBe(true);
      expect((back as Buffer).equals(bytes)).toBe(true);
      // A big one, spanning many socket reads.
      const big = Buffer.alloc(8 * 1024 * 1024);
      for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i ^ 0x9e3779b9) >>> 0, i);
      await conn.send(['SET', k, big]);
      expect(((await conn.send(['GET', k], { returnBuffers: true })) as Buffer).equals(big)).toBe(true);
      expect(await conn.send(['STRLEN', k])).toBe(big.length);
    });

    it('a server error reply is a RedisError; the connection goes on', async () => {
      const conn = await connect(topo.address, { protocol, password: PASSWORD });
      const k = key('wrongtype');
      await conn.send(['LPUSH', k, 'x']);
      const e = await rejection(conn.send(['GET', k]));
      expect(e).toBeInstanceOf(RedisError);
      expect((e as RedisError).code).toBe('WRONGTYPE');
      expect(await conn.send(['PING'])).toBe('PONG');
    });
  });

  it('RESP3: a regular reply that looks like a pub/sub message is still the reply of its command on a subscribed connection', async () => {
    const conn = await connect(topo.address, { protocol: 3, password: PASSWORD, commandTimeout: 2000 });
    const k = key('list');
    await conn.send(['RPUSH', k, 'message', 'x', 'y']);
    await conn.send(['SUBSCRIBE', key('ch')]);
    const pushes: Reply[][] = [];
    conn.on('push', (v) => pushes.push(v));
    // RESP3 allows any command on a subscribed connection; messages only ever come as '>' pushes.
    expect(await conn.send(['LRANGE', k, '0', '-1'])).toEqual(['message', 'x', 'y']);
    expect(pushes).toEqual([]);
  });

  it('the server closing the connection (CLIENT KILL) rejects pending commands and emits close', async () => {
    const name = `victim-${process.pid}`;
    const conn = await connect(topo.address, { password: PASSWORD, clientName: name, commandTimeout: 0, socketTimeout: 0 });
    const closed = new Promise<Error | undefined>((r) => conn.on('close', r));
    const blocked = track(conn.send(['BLPOP', key('never'), '0'], { blocking: true }));
    const id = await waitFor(async () => {
      const me = (await topo.server.cli('CLIENT', 'LIST')).split('\n').find((l) => l.includes(`name=${name} `));
      return me?.includes('cmd=blpop') ? /\bid=(\d+)/.exec(me)![1] : undefined;
    }, 'the BLPOP to block');
    await topo.server.cli('CLIENT', 'KILL', 'ID', id);
    await blocked.done;
    expect(blocked.error).toBeInstanceOf(UncertainWriteError);
    expect(await closed).toBeInstanceOf(ConnectionError);
  });
});
