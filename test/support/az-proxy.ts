/**
 * A RESP proxy that makes a real Redis 7 node report an availability zone, as Valkey 8 does:
 * the reply to `HELLO` gets an `availability_zone` field (Valkey 8.1) and the `# Server`
 * section of an `INFO` reply an `availability_zone:<zone>` line (Valkey 8.0). Every other byte
 * is forwarded unchanged both ways, so the data path is the real server's.
 *
 *   const proxy = await AzProxy.start(node.address, 'use1-az1');
 *   // connect to proxy.address (a pool reaches it through natMap, see AzProxies)
 *   await proxy.stop();   // the node "goes away": listener closed, every connection reset
 *   await proxy.resume(); // listening again on the same port
 *
 * Replies are matched to commands in order; RESP3 push frames (`>`) and attributes (`|`) are
 * not replies and pass through. A connection that subscribes (its replies no longer pair
 * with commands) or runs MONITOR is forwarded untouched from then on. When the server cannot
 * be reached, the client's connection is reset (like a refused connect).
 */
import net from 'node:net';
import type { NodeAddress } from '../../src/types.js';
import { decodeCommand } from './resp-wire.js';
import type { ServerHandle } from './topology-types.js';

const CRLF = Buffer.from('\r\n');

/** End offset of the RESP frame starting at `pos`, or -1 when the buffer does not hold all of it yet. */
export function frameEnd(buf: Buffer, pos: number): number {
  if (pos >= buf.length) return -1;
  const eol = buf.indexOf(CRLF, pos);
  if (eol < 0) return -1;
  const type = String.fromCharCode(buf[pos]!);
  const n = Number(buf.toString('latin1', pos + 1, eol));
  let next = eol + 2;
  switch (type) {
    case '$': case '=': case '!':
      if (n < 0) return next;
      return buf.length >= next + n + 2 ? next + n + 2 : -1;
    case '*': case '~': case '>': case '%': case '|': {
      const items = n < 0 ? 0 : type === '%' || type === '|' ? n * 2 : n;
      for (let i = 0; i < items; i++) {
        next = frameEnd(buf, next);
        if (next < 0) return -1;
      }
      return next;
    }
    default:
      return next;
  }
}

const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;

/** The HELLO reply (a RESP3 map or RESP2 list) with `availability_zone` added; other frames unchanged. */
export function withZoneInHello(frame: Buffer, zone: string): Buffer {
  const type = String.fromCharCode(frame[0]!);
  if (type !== '%' && type !== '*') return frame;
  const eol = frame.indexOf(CRLF);
  const n = Number(frame.toString('latin1', 1, eol));
  const header = `${type}${type === '%' ? n + 1 : n + 2}\r\n`;
  return Buffer.concat([Buffer.from(header), frame.subarray(eol + 2), Buffer.from(bulk('availability_zone') + bulk(zone))]);
}

/** An INFO reply (bulk or verbatim string) with `availability_zone:<zone>` at the end of its `# Server` section. */
export function withZoneInInfo(frame: Buffer, zone: string): Buffer {
  const type = String.fromCharCode(frame[0]!);
  if (type !== '$' && type !== '=') return frame;
  const eol = frame.indexOf(CRLF);
  const body = frame.toString('utf8', eol + 2, frame.length - 2);
  const at = body.indexOf('# Server\r\n');
  if (at < 0) return frame;
  const end = body.indexOf('\r\n\r\n', at);
  const cut = end < 0 ? body.length : end + 2;
  const line = `availability_zone:${zone}\r\n`;
  const text = body.slice(0, cut) + (cut === body.length && !body.endsWith('\r\n') ? '\r\n' : '') + line + body.slice(cut);
  return Buffer.from(`${type}${Buffer.byteLength(text)}\r\n${text}\r\n`);
}

type Kind = 'hello' | 'info' | 'other';
const UNPAIRED = new Set(['subscribe', 'psubscribe', 'ssubscribe', 'monitor']);

export interface AzProxyStats {
  /** Client connections accepted. */
  accepted: number;
  /** HELLO replies that got the zone. */
  hello: number;
  /** INFO replies that got the zone. */
  info: number;
}

/** One node behind a zone-reporting proxy. */
export class AzProxy {
  /** The zone put into replies from now on; undefined: replies pass unchanged (a node without a zone). */
  zone: string | undefined;
  readonly stats: AzProxyStats = { accepted: 0, hello: 0, info: 0 };
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private port = 0;

  private constructor(readonly upstream: NodeAddress, zone: string | undefined) {
    this.zone = zone;
  }

  /** Starts listening on 127.0.0.1 (any free port) in front of `upstream`. */
  static async start(upstream: NodeAddress, zone: string | undefined): Promise<AzProxy> {
    const p = new AzProxy(upstream, zone);
    await p.resume();
    return p;
  }

  /** Where clients connect. */
  get address(): NodeAddress {
    return { host: '127.0.0.1', port: this.port };
  }

  /** Listens again (on the port of the first start). */
  resume(): Promise<void> {
    if (this.server) return Promise.resolve();
    const server = net.createServer((c) => this.accept(c));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: this.port }, () => {
        this.port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  /** Stops listening and resets every connection: to clients, the node is gone. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  private accept(client: net.Socket): void {
    this.stats.accepted++;
    const upstream = net.connect({ host: this.upstream.host, port: this.upstream.port });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.sockets.add(client).add(upstream);
    const kinds: Kind[] = [];
    let raw = false;
    let fromClient: Buffer = Buffer.alloc(0);
    let fromServer: Buffer = Buffer.alloc(0);
    const end = (): void => {
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', () => {
      // Unreachable (or lost) server: the client sees a reset, as from a dead node.
      this.sockets.delete(client);
      if (!client.destroyed) client.resetAndDestroy();
      end();
    });
    client.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    client.on('data', (chunk: Buffer) => {
      // Commands are read before they are forwarded, so each reply's kind is queued before it can arrive.
      if (!raw) {
        fromClient = fromClient.length ? Buffer.concat([fromClient, chunk]) : chunk;
        let pos = 0;
        for (let d = decodeCommand(fromClient, pos); d; d = decodeCommand(fromClient, pos)) {
          pos = d.next;
          const name = (d.value[0] ?? '').toLowerCase();
          if (UNPAIRED.has(name)) raw = true;
          kinds.push(name === 'hello' ? 'hello' : name === 'info' ? 'info' : 'other');
        }
        fromClient = fromClient.subarray(pos);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      fromServer = fromServer.length ? Buffer.concat([fromServer, chunk]) : chunk;
      const out: Buffer[] = [];
      let pos = 0;
      for (;;) {
        if (raw && kinds.length === 0) {
          out.push(fromServer.subarray(pos));
          pos = fromServer.length;
          break;
        }
        const e = frameEnd(fromServer, pos);
        if (e < 0) break;
        const frame = fromServer.subarray(pos, e);
        pos = e;
        const type = frame[0];
        // Pushes and attributes are not replies to a command.
        if (type === 0x3e /* > */ || type === 0x7c /* | */) {
          out.push(frame);
          continue;
        }
        const kind = kinds.shift() ?? 'other';
        out.push(this.rewrite(kind, frame));
      }
      fromServer = fromServer.subarray(pos);
      if (out.length) client.write(Buffer.concat(out));
    });
  }

  private rewrite(kind: Kind, frame: Buffer): Buffer {
    const zone = this.zone;
    if (zone === undefined || kind === 'other') return frame;
    const out = kind === 'hello' ? withZoneInHello(frame, zone) : withZoneInInfo(frame, zone);
    if (out !== frame) this.stats[kind]++;
    return out;
  }
}

/**
 * One {@link AzProxy} per node, and the `natMap` that sends a pool to them: the nodes announce
 * their own addresses (sentinels, CLUSTER SHARDS), the pool connects to the proxies.
 */
export class AzProxies {
  private constructor(private readonly byPort: Map<number, AzProxy>) {}

  /** Proxies in front of `nodes`, each with the zone `zoneOf` gives it (undefined: none). */
  static async start(nodes: readonly ServerHandle[], zoneOf: (node: ServerHandle) => string | undefined): Promise<AzProxies> {
    const list = await Promise.all(nodes.map(async (n) => [n.port, await AzProxy.start(n.address, zoneOf(n))] as const));
    return new AzProxies(new Map(list));
  }

  /** The proxy in front of a node. */
  of(node: ServerHandle | NodeAddress): AzProxy {
    const p = this.byPort.get(node.port);
    if (!p) throw new Error(`no proxy in front of port ${node.port}`);
    return p;
  }

  /** Announced address -> its proxy (addresses of nodes without one pass unchanged). */
  readonly natMap = (a: NodeAddress): NodeAddress => this.byPort.get(a.port)?.address ?? a;

  /** The node behind a proxy address, by port. */
  nodeBehind(proxyAddress: NodeAddress): number | undefined {
    for (const [port, p] of this.byPort) if (p.address.port === proxyAddress.port) return port;
    return undefined;
  }

  async close(): Promise<void> {
    await Promise.all([...this.byPort.values()].map((p) => p.stop()));
  }
}
