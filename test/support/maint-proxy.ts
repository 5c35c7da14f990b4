/**
 * A RESP proxy in front of a real redis-server that plays the part of a Redis Software /
 * Redis Cloud endpoint for maintenance notifications, which open-source Redis cannot send:
 *
 *   const proxy = await MaintProxy.start(node.address);
 *   // connect the pool to proxy.address
 *   proxy.inject(['MIGRATING', 1, 2, ['shard-1']]);   // a RESP3 push to every connection that opted in
 *   proxy.injectRaw('>2\r\n$6\r\nMOVING\r\n$1\r\nx\r\n');  // any bytes, at a frame boundary
 *   await proxy.expireAfter(3000);                     // the server's deadline: close what is still open
 *
 * Every command is forwarded to the real server and every reply comes back from it (the data
 * path stays real), except what the proxy is told to answer itself:
 * - `CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type <type>`: with `optIn: 'accept'`
 *   (default) the proxy answers `+OK` as a managed endpoint does, and records the type asked
 *   for; with `optIn: 'forward'` the real server answers (Redis 7: `ERR unknown subcommand`).
 * - `rewrite(command, reply)`: may replace the reply bytes of any forwarded command (HELLO …).
 *
 * Replies keep their order: the proxy reads the client's commands and the server's frames, and
 * slots its own answers in between at the right places. Pushes it injects are written between
 * whole frames, never inside a reply. The proxy counts connections, the commands it forwarded
 * by name, and who closed each connection.
 */
import net from 'node:net';
import type { NodeAddress } from '../../src/types.js';
import { decodeCommand, decodeReply } from './resp-wire.js';

/** A value of an injected push: bulk strings, integers, null, and nested arrays. */
export type PushItem = string | number | null | PushItem[];

export interface MaintProxyOptions {
  /** How the opt-in is answered: by the proxy (`+OK`, default) or by the real server. */
  optIn?: 'accept' | 'forward';
  /** Replaces the reply to a forwarded command; return the bytes to send instead (or the same). */
  rewrite?: (command: string[], reply: Buffer) => Buffer | string;
  /** Listen port on 127.0.0.1 (default: any free port). */
  port?: number;
  /**
   * Holds every new connection this long before it is connected through (its handshake waits):
   * the cost of reaching a farther node, or of a TLS handshake. Default 0.
   */
  connectDelayMs?: number;
}

/** One client connection through the proxy. */
export class ProxiedConnection {
  /** The endpoint type this connection asked for, when it opted in. */
  endpointType: string | undefined;
  /** It opted in and got `+OK` (from the proxy or the server). */
  optedIn = false;
  readonly openedAt = Date.now();
  closedAt: number | undefined;
  /** Who closed it: the client, the server, or the proxy (expireAfter / close). */
  closedBy: 'client' | 'server' | 'proxy' | undefined;
  /** Commands forwarded on this connection, by upper-case name. */
  readonly commands = new Map<string, number>();
  private clientBuf: Buffer = Buffer.alloc(0);
  private serverBuf: Buffer = Buffer.alloc(0);
  /** One entry per reply the client waits for, in order: the server's, or the proxy's own bytes. */
  private readonly expected: Array<{ command: string[]; own?: Buffer }> = [];
  private resp3 = false;

  constructor(readonly client: net.Socket, readonly server: net.Socket, private readonly owner: MaintProxy, private readonly o: MaintProxyOptions) {
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    server.on('data', (chunk: Buffer) => this.fromServer(chunk));
    client.on('close', () => this.closed('client'));
    server.on('close', () => this.closed('server'));
    client.on('error', () => {});
    server.on('error', () => {});
  }

  get isOpen(): boolean {
    return this.closedAt === undefined;
  }

  /** Writes bytes to the client between two frames (the proxy only ever writes whole frames). */
  write(bytes: Buffer | string): void {
    if (this.isOpen) this.client.write(bytes);
  }

  /** Closes both sides (the server's deadline, or the proxy closing). */
  kill(): void {
    this.closed('proxy');
  }

  private closed(by: 'client' | 'server' | 'proxy'): void {
    if (this.closedAt !== undefined) return;
    this.closedAt = Date.now();
    this.closedBy = by;
    this.client.destroy();
    this.server.destroy();
    this.owner.onClosed(this);
  }

  private fromClient(chunk: Buffer): void {
    this.clientBuf = this.clientBuf.length === 0 ? chunk : Buffer.concat([this.clientBuf, chunk]);
    let pos = 0;
    const forward: Buffer[] = [];
    for (;;) {
      const c = decodeCommand(this.clientBuf, pos);
      if (!c) break;
      const raw = this.clientBuf.subarray(pos, c.next);
      pos = c.next;
      const name = (c.value[0] ?? '').toUpperCase();
      const sub = (c.value[1] ?? '').toUpperCase();
      if (name === 'HELLO' && c.value[1] === '3') this.resp3 = true;
      if (name === 'CLIENT' && sub === 'MAINT_NOTIFICATIONS') {
        this.endpointType = c.value[4];
        this.owner.optIns.push(c.value[4] ?? '');
        if (this.o.optIn !== 'forward') {
          this.optedIn = true;
          this.expected.push({ command: c.value, own: Buffer.from('+OK\r\n') });
          continue;
        }
      }
      this.commands.set(name, (this.commands.get(name) ?? 0) + 1);
      this.owner.count(name);
      forward.push(Buffer.from(raw));
      // RESP3 answers (P|S)(UN)SUBSCRIBE with pushes only: no reply to wait for.
      if (!(this.resp3 && /^[PS]?(UN)?SUBSCRIBE$/.test(name))) this.expected.push({ command: c.value });
    }
    this.clientBuf = this.clientBuf.subarray(pos);
    if (forward.length > 0) this.server.write(forward.length === 1 ? forward[0]! : Buffer.concat(forward));
    this.flushOwn([]);
  }

  private fromServer(chunk: Buffer): void {
    this.serverBuf = this.serverBuf.length === 0 ? chunk : Buffer.concat([this.serverBuf, chunk]);
    const out: Buffer[] = [];
    let pos = 0;
    for (;;) {
      const f = decodeReply(this.serverBuf, pos);
      if (!f) break;
      let frame: Buffer = this.serverBuf.subarray(pos, f.next);
      const isPush = this.serverBuf[pos] === 0x3e; // '>'
      pos = f.next;
      if (!isPush) {
        const head = this.expected.shift();
        if (head?.command && head.command[0]?.toUpperCase() === 'CLIENT' && head.command[1]?.toUpperCase() === 'MAINT_NOTIFICATIONS' && frame[0] === 0x2b) this.optedIn = true;
        if (head && this.o.rewrite) {
          const r = this.o.rewrite(head.command, Buffer.from(frame));
          frame = typeof r === 'string' ? Buffer.from(r) : r;
        }
      }
      out.push(Buffer.from(frame));
      this.flushOwn(out);
    }
    this.serverBuf = this.serverBuf.subarray(pos);
    if (out.length > 0) this.write(Buffer.concat(out));
  }

  /** The proxy's own replies that are next in line go out now (after `out`, the server's so far). */
  private flushOwn(out: Buffer[]): void {
    let own: Buffer[] | undefined;
    while (this.expected[0]?.own) {
      (own ??= []).push(this.expected.shift()!.own!);
    }
    if (!own) return;
    if (out.length > 0) out.push(...own);
    else this.write(Buffer.concat(own));
  }
}

export class MaintProxy {
  readonly connections: ProxiedConnection[] = [];
  /** Endpoint types asked for by every opt-in seen (forwarded or not). */
  readonly optIns: string[] = [];
  /** Commands forwarded by name, over every connection. */
  readonly commands = new Map<string, number>();
  private closing = false;

  private constructor(private readonly server: net.Server, readonly upstream: NodeAddress, readonly address: NodeAddress, private readonly o: MaintProxyOptions) {}

  static async start(upstream: NodeAddress, options: MaintProxyOptions = {}): Promise<MaintProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as net.AddressInfo).port;
    const proxy = new MaintProxy(server, upstream, { host: '127.0.0.1', port }, options);
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  private accept(client: net.Socket): void {
    if (this.closing) {
      client.destroy();
      return;
    }
    client.setNoDelay(true);
    client.pause();
    const server = net.connect({ host: this.upstream.host, port: this.upstream.port });
    server.setNoDelay(true);
    const conn = new ProxiedConnection(client, server, this, this.o);
    this.connections.push(conn);
    const delay = this.o.connectDelayMs ?? 0;
    server.once('connect', () => (delay > 0 ? setTimeout(() => client.resume(), delay).unref() : client.resume()));
  }

  /** @internal */
  onClosed(_conn: ProxiedConnection): void {}

  /** @internal */
  count(name: string): void {
    this.commands.set(name, (this.commands.get(name) ?? 0) + 1);
  }

  /** Client connections open now. */
  get open(): ProxiedConnection[] {
    return this.connections.filter((c) => c.isOpen);
  }

  /**
   * Sends a RESP3 push of `items` to every open connection that opted in (or that `to`
   * selects); returns how many got it.
   */
  inject(items: PushItem[], to: (c: ProxiedConnection) => boolean = (c) => c.optedIn): number {
    return this.injectRaw(encodePush(items), to);
  }

  /** Sends raw bytes (a hand-made frame) between two frames; returns how many connections got them. */
  injectRaw(bytes: string | Buffer, to: (c: ProxiedConnection) => boolean = (c) => c.optedIn): number {
    let n = 0;
    for (const c of this.open) {
      if (!to(c)) continue;
      c.write(bytes);
      n++;
    }
    return n;
  }

  /**
   * What the endpoint does when a MOVING's time is up: after `ms`, closes every connection that
   * is open now and still open then. Resolves with how many it had to close (0 when the client
   * closed them all in time).
   */
  expireAfter(ms: number): Promise<number> {
    const victims = this.open;
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        const left = victims.filter((c) => c.isOpen);
        for (const c of left) c.kill();
        resolve(left.length);
      }, ms);
      t.unref();
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const c of this.open) c.kill();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A RESP3 push frame: strings as bulk strings, integers, null as `_`, arrays as arrays. */
export function encodePush(items: PushItem[]): string {
  const enc = (v: PushItem): string => {
    if (v === null) return '_\r\n';
    if (typeof v === 'number') return `:${v}\r\n`;
    if (Array.isArray(v)) return `*${v.length}\r\n${v.map(enc).join('')}`;
    return `$${Buffer.byteLength(v)}\r\n${v}\r\n`;
  };
  return `>${items.length}\r\n${items.map(enc).join('')}`;
}
