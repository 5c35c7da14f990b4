/**
 * The fault proxy (test/support/fault-proxy.ts) against a real redis-server, with raw sockets
 * (never the library under test): each mode does what it says, seen from the client and from
 * the server.
 */
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { sendCommand } from '../support/mini-client.js';
import { decodeReply, encodeCommand, type RespValue } from '../support/resp-wire.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';
import type { NodeAddress } from '../../src/types.js';

/** A raw RESP connection that records replies, FIN, errors and close. */
class Raw {
  readonly replies: RespValue[] = [];
  ended = false;
  closed = false;
  error: (Error & { code?: string }) | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private taken = 0;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
      let pos = 0;
      for (;;) {
        const r = decodeReply(this.buf, pos);
        if (!r) break;
        this.replies.push(r.value);
        pos = r.next;
      }
      this.buf = this.buf.subarray(pos);
    });
    socket.on('end', () => (this.ended = true));
    socket.on('error', (e) => (this.error = e));
    socket.on('close', () => (this.closed = true));
  }

  static connect(a: NodeAddress, allowHalfOpen = false): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: a.host, port: a.port, allowHalfOpen });
      s.setNoDelay(true);
      s.once('connect', () => {
        s.off('error', reject);
        resolve(new Raw(s));
      });
      s.once('error', reject);
    });
  }

  /** Connects and reports how the attempt ended: 'connected', or the error code. */
  static attempt(a: NodeAddress): Promise<{ outcome: string; raw?: Raw }> {
    return Raw.connect(a).then(
      (raw) => ({ outcome: 'connected', raw }),
      (e: NodeJS.ErrnoException) => ({ outcome: e.code ?? e.message }),
    );
  }

  send(...args: (string | number)[]): number {
    const bytes = encodeCommand(args);
    this.socket.write(bytes);
    return bytes.length;
  }

  /** The next reply not yet taken. */
  async next(what = 'a reply', timeoutMs = 5000): Promise<RespValue> {
    await waitFor(() => this.replies.length > this.taken, what, timeoutMs, 5);
    return this.replies[this.taken++]!;
  }

  /** Replies received and not yet taken. */
  get unread(): number {
    return this.replies.length - this.taken;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

let topo: StandaloneTopology;
const proxies: FaultProxy[] = [];
const raws: Raw[] = [];

async function proxy(): Promise<FaultProxy> {
  const p = await FaultProxy.start(topo.address);
  proxies.push(p);
  return p;
}

async function raw(p: FaultProxy | NodeAddress, allowHalfOpen = false): Promise<Raw> {
  const r = await Raw.connect(p instanceof FaultProxy ? p.address : p, allowHalfOpen);
  raws.push(r);
  return r;
}

/** Clients connected to the real server now (CLIENT LIST lines, not counting the asking one). */
async function serverClients(): Promise<number> {
  const list = String(await sendCommand(topo.address, ['CLIENT', 'LIST']));
  return list.split('\n').filter((l) => l.trim() !== '').length - 1;
}

const direct = (...args: (string | number)[]) => sendCommand(topo.address, args);

beforeAll(async () => {
  topo = await startStandalone();
});

afterEach(async () => {
  for (const r of raws.splice(0)) r.destroy();
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await topo?.stop();
});

describe('FaultProxy', () => {
  it('pass: bytes go through unchanged both ways, counted exactly; the server sees one connection per client', async () => {
    const p = await proxy();
    const before = await serverClients();
    const a = await raw(p);
    const sent = a.send('SET', 'fp:pass', 'hello') + a.send('GET', 'fp:pass');
    expect(await a.next()).toBe('OK');
    expect(await a.next()).toBe('hello');
    await waitFor(() => p.stats.bytesToClient === '+OK\r\n'.length + '$5\r\nhello\r\n'.length, 'the reply byte count');
    const s = p.stats;
    expect(s).toMatchObject({ accepted: 1, open: 1, bytesFromClient: sent, bytesToServer: sent, bytesFromServer: s.bytesToClient, droppedToServer: 0, droppedToClient: 0 });
    expect(await serverClients()).toBe(before + 1);
    a.destroy();
    await waitFor(() => p.stats.open === 0 && p.stats.serverClosed === 1, 'the proxy to close the upstream connection');
    await waitFor(async () => (await serverClients()) === before, 'the server to see the connection gone');
  });

  it('delay(ms, jitter): each direction is held at least ms, and jitter never reorders bytes', async () => {
    const p = await proxy();
    const a = await raw(p);
    await direct('DEL', 'fp:order');
    p.delay(100, 60);
    const t0 = Date.now();
    for (let i = 0; i < 50; i++) a.send('INCR', 'fp:order');
    const first = await a.next();
    const rtt = Date.now() - t0;
    const rest: RespValue[] = [first];
    for (let i = 1; i < 50; i++) rest.push(await a.next());
    expect(rest).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    console.log(`delay(100, 60): first reply after ${rtt} ms`);
    expect(rtt).toBeGreaterThanOrEqual(195); // 100 ms to the server + 100 ms back
    // One direction only: requests held, replies not.
    await p.heal();
    p.delay(150, 0, 'to-server');
    const t1 = Date.now();
    a.send('PING');
    expect(await a.next()).toBe('PONG');
    expect(Date.now() - t1).toBeGreaterThanOrEqual(145);
    expect(p.describe()).toContain('delay to-server 150+0 ms');
  });

  it('throttle(bytesPerSecond, to-server): forwards no faster than the rate and stops reading beyond a small buffer', async () => {
    const p = await proxy();
    const a = await raw(p);
    const rate = 128 * 1024;
    const size = 192 * 1024;
    p.throttle(rate, 'to-server');
    const t0 = Date.now();
    const total = a.send('SET', 'fp:big', 'x'.repeat(size));
    // When a third has gone out, the proxy has read far less than everything (it paused the client).
    const seen = await waitFor(() => (p.stats.bytesToServer >= 64 * 1024 ? p.stats : undefined), 'a third of the value to be forwarded', 10_000, 5);
    expect(seen.bytesFromClient).toBeLessThan(total);
    expect(await a.next('the SET reply', 10_000)).toBe('OK');
    const elapsed = Date.now() - t0;
    console.log(`throttle ${rate} B/s: ${total} bytes forwarded in ${elapsed} ms; read ${seen.bytesFromClient} bytes when ${seen.bytesToServer} had been forwarded`);
    expect(elapsed).toBeGreaterThanOrEqual(((total - 8192) / rate) * 1000 * 0.9);
    expect(await direct('STRLEN', 'fp:big')).toBe(size);
    // Replies were not throttled, and heal() lifts the limit.
    await p.heal();
    a.send('GET', 'fp:big');
    expect(String(await a.next()).length).toBe(size);
  });

  it('blackhole(): sockets stay open with no RST or FIN, nothing arrives either way, new connections are accepted and black-holed; heal() drops what was lost', async () => {
    const p = await proxy();
    const a = await raw(p);
    a.send('CLIENT', 'SETNAME', 'fp-a');
    expect(await a.next()).toBe('OK');
    const sub = await raw(p);
    sub.send('SUBSCRIBE', 'fp:ch');
    expect(await sub.next()).toEqual(['subscribe', 'fp:ch', 1]);

    p.blackhole();
    const ping = a.send('PING');
    // The server delivers a message to the proxy; the proxy drops it.
    expect(await direct('PUBLISH', 'fp:ch', 'lost')).toBe(1);
    const b = await raw(p); // accepted while black-holed
    const echo = b.send('ECHO', 'b1');
    await waitFor(() => p.stats.droppedToServer >= ping + echo && p.stats.droppedToClient > 0, 'the proxy to drop bytes both ways');
    expect(p.stats.accepted).toBe(3);

    // The server closes a's upstream connection: in a black hole that FIN is lost too.
    const list = String(await direct('CLIENT', 'LIST'));
    const id = /id=(\d+) [^\n]*name=fp-a/.exec(list)?.[1];
    expect(id).toBeDefined();
    expect(await direct('CLIENT', 'KILL', 'ID', id!)).toBe(1);
    await waitFor(() => p.stats.serverClosed >= 1, 'the proxy to see the upstream close');

    for (const r of [a, sub, b]) {
      expect(r.unread).toBe(0);
      expect(r.ended || r.closed || r.error !== undefined).toBe(false);
    }

    await p.heal();
    // a's close is delivered now; nothing that was dropped arrives late.
    await waitFor(() => a.closed, 'the killed connection to be closed on heal');
    expect(a.unread).toBe(0);
    expect(await direct('PUBLISH', 'fp:ch', 'after')).toBe(1);
    expect(await sub.next()).toEqual(['message', 'fp:ch', 'after']);
    b.send('ECHO', 'b2');
    expect(await b.next()).toBe('b2'); // not 'b1'
    expect(sub.unread + b.unread).toBe(0);
  });

  it('cut(): every current connection gets an RST, the server side too; new connections pass', async () => {
    const p = await proxy();
    const before = await serverClients();
    const a = await raw(p);
    const b = await raw(p);
    a.send('PING');
    b.send('PING');
    expect([await a.next(), await b.next()]).toEqual(['PONG', 'PONG']);
    expect(await serverClients()).toBe(before + 2);
    p.cut();
    await waitFor(() => a.closed && b.closed, 'both clients to be closed');
    expect([a.error?.code, b.error?.code]).toEqual(['ECONNRESET', 'ECONNRESET']);
    expect(a.ended || b.ended).toBe(false); // an RST, not a FIN
    await waitFor(async () => (await serverClients()) === before, 'the server to lose both upstream connections');
    const c = await raw(p);
    c.send('PING');
    expect(await c.next()).toBe('PONG');
  });

  it('halfClose(): the client gets a FIN while its own direction keeps flowing to the server', async () => {
    const p = await proxy();
    const a = await raw(p, true);
    a.send('PING');
    expect(await a.next()).toBe('PONG');
    p.halfClose();
    await waitFor(() => a.ended, 'the client to receive FIN');
    expect(a.closed).toBe(false);
    a.send('SET', 'fp:half', 'still-flowing');
    await waitFor(async () => (await direct('GET', 'fp:half')) === 'still-flowing', 'the command to reach the server');
    await waitFor(() => p.stats.droppedToClient >= '+OK\r\n'.length, 'the reply to be dropped');
    expect(a.unread).toBe(0);
    expect(a.error).toBeUndefined();
  });

  it("partition('to-server'): commands never reach the server while the server's pushes still reach the client", async () => {
    const p = await proxy();
    const a = await raw(p);
    const sub = await raw(p);
    sub.send('SUBSCRIBE', 'fp:part');
    expect(await sub.next()).toEqual(['subscribe', 'fp:part', 1]);
    await direct('DEL', 'fp:p1');
    p.partition('to-server');
    const n = a.send('SET', 'fp:p1', 'v');
    await waitFor(() => p.stats.droppedToServer >= n, 'the SET to be dropped');
    expect(await direct('PUBLISH', 'fp:part', 'm')).toBe(1);
    expect(await sub.next()).toEqual(['message', 'fp:part', 'm']);
    expect(await direct('EXISTS', 'fp:p1')).toBe(0);
    await p.heal();
    a.send('GET', 'fp:p1');
    expect(await a.next()).toBeNull(); // the SET never ran, and no stale reply came first
  });

  it("partition('to-client'): commands run on the server but no reply comes back", async () => {
    const p = await proxy();
    const a = await raw(p);
    await direct('DEL', 'fp:p2');
    p.partition('to-client');
    a.send('SET', 'fp:p2', 'ran');
    await waitFor(async () => (await direct('GET', 'fp:p2')) === 'ran', 'the SET to run on the server');
    await waitFor(() => p.stats.droppedToClient >= '+OK\r\n'.length, 'the reply to be dropped');
    expect(a.unread).toBe(0);
    await p.heal();
    a.send('ECHO', 'x');
    expect(await a.next()).toBe('x');
    expect(a.unread).toBe(0);
  });

  it("refuse('close') gives ECONNREFUSED and refuse('rst') an accept-and-reset, current connections untouched; heal() listens again on the same port", async () => {
    const p = await proxy();
    const port = p.port;
    const a = await raw(p);
    await p.refuse('close');
    expect((await Raw.attempt(p.address)).outcome).toBe('ECONNREFUSED');
    a.send('PING');
    expect(await a.next()).toBe('PONG');
    await p.heal();
    expect(p.port).toBe(port);
    const ok = await Raw.attempt(p.address);
    expect(ok.outcome).toBe('connected');
    ok.raw!.destroy();

    await p.refuse('rst');
    const r = await Raw.attempt(p.address);
    // The TCP handshake completes, then the RST arrives (sometimes before the connect callback).
    if (r.raw) {
      raws.push(r.raw);
      await waitFor(() => r.raw!.closed, 'the accepted connection to be reset');
      expect(r.raw.error?.code).toBe('ECONNRESET');
    } else {
      expect(r.outcome).toBe('ECONNRESET');
    }
    expect(p.stats.refusedByRst).toBe(1);
    await p.heal();
    const c = await raw(p);
    c.send('PING');
    expect(await c.next()).toBe('PONG');
  });

  it('close(): destroys every socket it opened and stops listening', async () => {
    const before = await serverClients();
    const p = await FaultProxy.start(topo.address);
    const a = await raw(p);
    a.send('PING');
    expect(await a.next()).toBe('PONG');
    p.blackhole(); // closing must not depend on the mode
    await p.close();
    await waitFor(() => a.closed, 'the client socket to close');
    expect((await Raw.attempt(p.address)).outcome).toBe('ECONNREFUSED');
    await waitFor(async () => (await serverClients()) === before, 'the upstream connection to be gone');
  });
});
