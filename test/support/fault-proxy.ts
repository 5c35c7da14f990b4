/**
 * A loopback TCP proxy for network-fault tests: one per node, in front of a real
 * redis-server or redis-sentinel, controllable while connections are open.
 *
 *   const proxy = await FaultProxy.start(node.address);
 *   // connect the client to proxy.address instead of node.address
 *   proxy.blackhole();   // the peer vanishes: sockets stay open, every byte is dropped, no RST
 *   proxy.heal();        // back to pass-through (dropped bytes stay dropped)
 *
 * Faults (each call adds to the current state; `heal()` / `pass()` clears them all):
 * - `delay(ms, jitterMs?, direction?)`: every chunk is held `ms` (+ a random 0..jitterMs) in
 *   each direction; order is always preserved (TCP never reorders bytes).
 * - `throttle(bytesPerSecond, direction?)`: at most that many bytes per second are forwarded;
 *   beyond a small buffer the proxy stops reading, so the sender sees real backpressure
 *   (its kernel buffers fill, Node's `socket.write()` returns false).
 * - `blackhole()`: every current socket stays open, every byte is read and dropped in both
 *   directions, nothing is closed or reset (not even when a side closes: that, too, is
 *   "lost"); new connections are accepted and black-holed as well.
 * - `partition('to-server' | 'to-client')`: the same, for one direction only.
 * - `cut()`: RST on every current connection (client side and server side); new ones pass.
 * - `halfClose(direction = 'to-client')`: FIN on one direction of every current connection
 *   (the client gets 'end'), the other direction keeps flowing.
 * - `refuse('close' | 'rst')`: stop listening (new connects get ECONNREFUSED), or accept and
 *   RST at once. Current connections are not touched (add `cut()` for that).
 * - `heal()`: back to pass for current and new connections; bytes dropped meanwhile are gone
 *   (never delivered late), closes that happened meanwhile are delivered now.
 * - `close()`: destroys every socket it opened and stops listening.
 *
 * `stats` counts connections and bytes each way (forwarded and dropped).
 *
 * `ProxySet` puts one proxy in front of each of a list of nodes and builds the `natMap`
 * (real address -> proxy address) a pool needs to reach announced addresses through them.
 */
import net from 'node:net';
import type { NodeAddress } from '../../src/types.js';
import type { ClusterTopology, SentinelTopology, ServerHandle } from './topology-types.js';
import { waitFor } from './wait.js';

export type Direction = 'to-server' | 'to-client';
type Directions = Direction | 'both';

export interface FaultProxyStats {
  /** Client connections accepted (including refused-by-RST ones). */
  accepted: number;
  /** Client connections open now. */
  open: number;
  /** Connection attempts answered with an RST by `refuse('rst')`. */
  refusedByRst: number;
  /** Upstream (proxy -> server) connections the server ended (FIN) or that closed for any reason. */
  serverClosed: number;
  /** Bytes read from clients. */
  bytesFromClient: number;
  /** Bytes written to the server. */
  bytesToServer: number;
  /** Bytes read from the server. */
  bytesFromServer: number;
  /** Bytes written to clients. */
  bytesToClient: number;
  /** Bytes from clients that were dropped (black hole, partition, half-close). */
  droppedToServer: number;
  /** Bytes from the server that were dropped. */
  droppedToClient: number;
}

export interface FaultProxyOptions {
  /** Listen port on 127.0.0.1; default 0 (any free port). */
  port?: number;
  /** A label for messages. */
  name?: string;
}

interface FaultState {
  blocked: Record<Direction, boolean>;
  delayMs: Record<Direction, number>;
  jitterMs: Record<Direction, number>;
  /** Bytes per second; 0 = unlimited. */
  rate: Record<Direction, number>;
}

const END = Symbol('end');
const RESET = Symbol('reset');
type Item = { at: number; data: Buffer | typeof END | typeof RESET };

const dirs = (d: Directions): Direction[] => (d === 'both' ? ['to-server', 'to-client'] : [d]);

function checkDirection(d: unknown, allowBoth: boolean): asserts d is Directions {
  if (d === 'to-server' || d === 'to-client' || (allowBoth && d === 'both')) return;
  throw new TypeError(`direction must be 'to-server', 'to-client'${allowBoth ? " or 'both'" : ''} (got ${String(d)})`);
}

/** One direction of one proxied connection: reads `from`, writes `to`, with the proxy's faults applied. */
class Pipe {
  private queue: Item[] = [];
  private queuedBytes = 0;
  private lastAt = 0;
  private nextFree = 0;
  private timer: NodeJS.Timeout | undefined;
  private waitingDrain = false;
  private pausedByUs = false;
  /** The source closed while this direction was blocked: delivered on heal. */
  private deferred: typeof END | typeof RESET | undefined;
  /** No more bytes go this way (FIN sent, reset, or the destination is gone). */
  finished = false;

  constructor(
    readonly dir: Direction,
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly proxy: FaultProxy,
  ) {}

  private get state(): FaultState {
    return this.proxy.state;
  }

  private get blocked(): boolean {
    return this.state.blocked[this.dir];
  }

  private highWater(): number {
    const rate = this.state.rate[this.dir];
    return rate > 0 ? Math.max(4096, Math.floor(rate / 4)) : 1 << 20;
  }

  onData(chunk: Buffer): void {
    this.proxy.count(this.dir, 'in', chunk.length);
    if (this.finished || this.blocked) {
      this.proxy.count(this.dir, 'dropped', chunk.length);
      return;
    }
    // Split big chunks so a throttle releases them smoothly.
    const rate = this.state.rate[this.dir];
    const piece = rate > 0 ? Math.max(1024, Math.floor(rate / 20)) : chunk.length;
    for (let off = 0; off < chunk.length; off += piece) this.enqueue(chunk.subarray(off, Math.min(chunk.length, off + piece)));
    if (this.queuedBytes > this.highWater() && !this.pausedByUs) {
      this.pausedByUs = true;
      this.from.pause();
    }
  }

  /** The source sent FIN (`END`) or was reset / destroyed (`RESET`). */
  onSourceClosed(kind: typeof END | typeof RESET): void {
    if (this.finished) return;
    if (this.blocked) {
      this.deferred ??= kind;
      return;
    }
    this.enqueue(kind);
  }

  private enqueue(data: Item['data']): void {
    const now = Date.now();
    const s = this.state;
    let at = now + s.delayMs[this.dir] + (s.jitterMs[this.dir] > 0 ? Math.random() * s.jitterMs[this.dir] : 0);
    at = Math.max(at, this.lastAt);
    const rate = s.rate[this.dir];
    if (rate > 0 && Buffer.isBuffer(data)) {
      at = Math.max(at, this.nextFree);
      this.nextFree = at + (data.length / rate) * 1000;
    }
    this.lastAt = at;
    this.queue.push({ at, data });
    if (Buffer.isBuffer(data)) this.queuedBytes += data.length;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.waitingDrain || this.queue.length === 0) return;
    const wait = Math.max(0, this.queue[0]!.at - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, wait);
  }

  private run(): void {
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0]!.at <= now + 1) {
      const item = this.queue.shift()!;
      const data = item.data;
      if (Buffer.isBuffer(data)) {
        this.queuedBytes -= data.length;
        if (this.blocked || this.finished || this.to.destroyed || this.to.writableEnded) {
          this.proxy.count(this.dir, 'dropped', data.length);
          continue;
        }
        this.proxy.count(this.dir, 'out', data.length);
        if (!this.to.write(data)) {
          this.waitingDrain = true;
          this.to.once('drain', () => {
            this.waitingDrain = false;
            this.run();
          });
          break;
        }
      } else if (!this.finished) {
        this.finish(data);
      }
    }
    if (this.pausedByUs && this.queuedBytes <= this.highWater() / 2 && !this.waitingDrain) {
      this.pausedByUs = false;
      if (!this.from.destroyed) this.from.resume();
    }
    this.schedule();
  }

  private finish(kind: typeof END | typeof RESET): void {
    this.finished = true;
    if (kind === END) {
      if (!this.to.destroyed && !this.to.writableEnded) this.to.end();
    } else {
      reset(this.to);
    }
    this.proxy.maybeForget();
  }

  /** A fault changed: drop what is queued for a blocked direction, resume reading. */
  onStateChange(): void {
    if (this.blocked) {
      for (const item of this.queue) if (Buffer.isBuffer(item.data)) this.proxy.count(this.dir, 'dropped', item.data.length);
      const pendingClose = this.queue.find((i) => !Buffer.isBuffer(i.data))?.data as typeof END | typeof RESET | undefined;
      if (pendingClose) this.deferred ??= pendingClose;
      this.queue = [];
      this.queuedBytes = 0;
      this.lastAt = 0;
      this.nextFree = 0;
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      if (this.pausedByUs) {
        this.pausedByUs = false;
        if (!this.from.destroyed) this.from.resume();
      }
      return;
    }
    if (this.state.rate[this.dir] === 0) this.nextFree = 0;
    if (this.deferred !== undefined) {
      const d = this.deferred;
      this.deferred = undefined;
      this.enqueue(d);
    }
    this.run();
  }

  /** FIN on this direction now (halfClose). */
  endNow(): void {
    if (this.finished) return;
    this.queue = [];
    this.queuedBytes = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.finish(END);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.queuedBytes = 0;
    this.finished = true;
  }
}

function reset(s: net.Socket): void {
  if (s.destroyed) return;
  try {
    s.resetAndDestroy();
  } catch {
    s.destroy();
  }
}

/** One client connection and its upstream connection. */
class Link {
  readonly toServer: Pipe;
  readonly toClient: Pipe;
  constructor(
    readonly client: net.Socket,
    readonly server: net.Socket,
    proxy: FaultProxy,
  ) {
    this.toServer = new Pipe('to-server', client, server, proxy);
    this.toClient = new Pipe('to-client', server, client, proxy);
  }

  get gone(): boolean {
    return this.client.destroyed && this.server.destroyed;
  }
}

export class FaultProxy {
  /** Where clients connect (127.0.0.1 and the listen port). */
  readonly address: NodeAddress;
  /** The node behind the proxy. */
  readonly target: NodeAddress;
  readonly name: string;
  /** @internal read by the pipes */
  readonly state: FaultState = FaultProxy.cleanState();
  private readonly counters: FaultProxyStats = {
    accepted: 0, open: 0, refusedByRst: 0, serverClosed: 0,
    bytesFromClient: 0, bytesToServer: 0, bytesFromServer: 0, bytesToClient: 0, droppedToServer: 0, droppedToClient: 0,
  };
  private readonly links = new Set<Link>();
  private server: net.Server | undefined;
  private refuseMode: 'close' | 'rst' | undefined;
  private closed = false;

  private constructor(target: NodeAddress, port: number, name: string) {
    this.target = { host: target.host, port: target.port };
    this.address = { host: '127.0.0.1', port };
    this.name = name;
  }

  /** Starts a proxy to `target` on 127.0.0.1 (port 0 = any free port). */
  static async start(target: NodeAddress, options: FaultProxyOptions = {}): Promise<FaultProxy> {
    const p = new FaultProxy(target, options.port ?? 0, options.name ?? `proxy->${target.host}:${target.port}`);
    await p.listen();
    return p;
  }

  private static cleanState(): FaultState {
    return {
      blocked: { 'to-server': false, 'to-client': false },
      delayMs: { 'to-server': 0, 'to-client': 0 },
      jitterMs: { 'to-server': 0, 'to-client': 0 },
      rate: { 'to-server': 0, 'to-client': 0 },
    };
  }

  get port(): number {
    return this.address.port;
  }

  /** `'127.0.0.1:<port>'` */
  get url(): string {
    return `redis://${this.address.host}:${this.address.port}`;
  }

  /** A snapshot of the counters. */
  get stats(): FaultProxyStats {
    return { ...this.counters, open: [...this.links].filter((l) => !l.client.destroyed).length };
  }

  /** What the proxy does now, for messages. */
  describe(): string {
    const s = this.state;
    const parts: string[] = [];
    if (this.refuseMode) parts.push(`refuse(${this.refuseMode})`);
    for (const d of ['to-server', 'to-client'] as const) {
      if (s.blocked[d]) parts.push(`drop ${d}`);
      if (s.delayMs[d] || s.jitterMs[d]) parts.push(`delay ${d} ${s.delayMs[d]}+${s.jitterMs[d]} ms`);
      if (s.rate[d]) parts.push(`throttle ${d} ${s.rate[d]} B/s`);
    }
    return `${this.name} ${parts.length ? parts.join(', ') : 'pass'}`;
  }

  private async listen(): Promise<void> {
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, (client) => this.onConnection(client));
    server.on('error', () => {}); // listen errors are handled below; later ones cannot happen on a bound server
    const port = this.address.port;
    await waitFor(
      () =>
        new Promise<boolean>((resolve, reject) => {
          const onError = (err: Error) => {
            server.off('listening', onListening);
            reject(err);
          };
          const onListening = () => {
            server.off('error', onError);
            resolve(true);
          };
          server.once('error', onError);
          server.once('listening', onListening);
          server.listen({ host: '127.0.0.1', port });
        }),
      `${this.name} to listen on 127.0.0.1:${port}`,
      10_000,
    );
    const a = server.address();
    if (typeof a !== 'object' || a === null) throw new Error(`${this.name}: no listen address`);
    (this.address as { port: number }).port = a.port;
    this.server = server;
  }

  private onConnection(client: net.Socket): void {
    this.counters.accepted++;
    client.on('error', () => {});
    if (this.closed) {
      client.destroy();
      return;
    }
    if (this.refuseMode === 'rst') {
      this.counters.refusedByRst++;
      reset(client);
      return;
    }
    client.setNoDelay(true);
    const upstream = net.connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    upstream.setNoDelay(true);
    upstream.on('error', () => {});
    const link = new Link(client, upstream, this);
    this.links.add(link);
    client.on('data', (c: Buffer) => link.toServer.onData(c));
    upstream.on('data', (c: Buffer) => link.toClient.onData(c));
    // FIN from one side travels (after the data before it) to the other side.
    let serverGone = false;
    const upstreamGone = () => {
      if (serverGone) return;
      serverGone = true;
      this.counters.serverClosed++;
    };
    client.on('end', () => link.toServer.onSourceClosed(END));
    upstream.on('end', () => {
      upstreamGone();
      link.toClient.onSourceClosed(END);
    });
    // A side that closes without FIN (RST, error, destroy) resets the other side.
    client.on('close', () => {
      if (!client.readableEnded) link.toServer.onSourceClosed(RESET);
      link.toClient.finished = true;
      this.maybeForget();
    });
    upstream.on('close', () => {
      upstreamGone();
      if (!upstream.readableEnded) link.toClient.onSourceClosed(RESET);
      link.toServer.finished = true;
      this.maybeForget();
    });
  }

  /** @internal */
  count(dir: Direction, what: 'in' | 'out' | 'dropped', n: number): void {
    const c = this.counters;
    if (dir === 'to-server') {
      if (what === 'in') c.bytesFromClient += n;
      else if (what === 'out') c.bytesToServer += n;
      else c.droppedToServer += n;
    } else {
      if (what === 'in') c.bytesFromServer += n;
      else if (what === 'out') c.bytesToClient += n;
      else c.droppedToClient += n;
    }
  }

  /** @internal drops links whose both sockets are gone */
  maybeForget(): void {
    for (const l of this.links) {
      if (l.gone) {
        l.toServer.dispose();
        l.toClient.dispose();
        this.links.delete(l);
      }
    }
  }

  private changed(): this {
    for (const l of this.links) {
      l.toServer.onStateChange();
      l.toClient.onStateChange();
    }
    return this;
  }

  // ------------------------------------------------------------------ faults

  /** Back to pass-through for current and new connections (same as `heal()`). */
  pass(): Promise<void> {
    return this.heal();
  }

  /**
   * Clears every fault: pass-through again, listening again after `refuse()`. Bytes dropped
   * while black-holed are gone; a close that happened meanwhile is delivered now.
   */
  async heal(): Promise<void> {
    Object.assign(this.state, FaultProxy.cleanState());
    const wasClosedListener = this.refuseMode === 'close';
    this.refuseMode = undefined;
    this.changed();
    if (wasClosedListener && !this.closed) await this.listen();
  }

  /** Holds every chunk `ms` (+ random 0..jitterMs) before forwarding it, order preserved. */
  delay(ms: number, jitterMs = 0, direction: Directions = 'both'): this {
    if (!(ms >= 0) || !(jitterMs >= 0)) throw new RangeError('delay: ms and jitterMs must be >= 0');
    checkDirection(direction, true);
    for (const d of dirs(direction)) {
      this.state.delayMs[d] = ms;
      this.state.jitterMs[d] = jitterMs;
    }
    return this.changed();
  }

  /** Forwards at most `bytesPerSecond` in `direction` (default both), reading no faster than that. */
  throttle(bytesPerSecond: number, direction: Directions = 'both'): this {
    if (!(bytesPerSecond > 0)) throw new RangeError('throttle: bytesPerSecond must be > 0');
    checkDirection(direction, true);
    for (const d of dirs(direction)) this.state.rate[d] = bytesPerSecond;
    return this.changed();
  }

  /** Every socket stays open; every byte both ways is dropped; nothing is closed or reset. */
  blackhole(): this {
    this.state.blocked['to-server'] = true;
    this.state.blocked['to-client'] = true;
    return this.changed();
  }

  /** Drops one direction only (current and new connections). */
  partition(direction: Direction): this {
    checkDirection(direction, false);
    this.state.blocked[direction] = true;
    return this.changed();
  }

  /** RST on every current connection, both the client's and the upstream one. */
  cut(): this {
    for (const l of this.links) {
      l.toServer.dispose();
      l.toClient.dispose();
      reset(l.client);
      reset(l.server);
    }
    this.maybeForget();
    return this;
  }

  /** FIN in one direction of every current connection (default: to the client); the other keeps flowing. */
  halfClose(direction: Direction = 'to-client'): this {
    checkDirection(direction, false);
    for (const l of this.links) (direction === 'to-client' ? l.toClient : l.toServer).endNow();
    return this;
  }

  /** 'close': stop listening (ECONNREFUSED); 'rst': accept and reset at once. `heal()` undoes it. */
  async refuse(how: 'close' | 'rst' = 'close'): Promise<void> {
    if (how !== 'close' && how !== 'rst') throw new TypeError(`refuse: 'close' or 'rst' (got ${String(how)})`);
    if (this.refuseMode === 'close' && how === 'rst' && !this.closed) await this.listen();
    this.refuseMode = how;
    if (how === 'close') await this.closeListener();
  }

  /** Stops listening at once; connections it accepted stay open (server.close() waits for them, we do not). */
  private async closeListener(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.close();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Destroys every socket it opened and stops listening. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const s = this.server;
    this.server = undefined;
    const closing = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
    for (const l of this.links) {
      l.toServer.dispose();
      l.toClient.dispose();
      l.client.destroy();
      l.server.destroy();
    }
    this.links.clear();
    await closing;
  }
}

// ------------------------------------------------------------------ proxies for a topology

const key = (a: NodeAddress): string => `${a.host === 'localhost' ? '127.0.0.1' : a.host}:${a.port}`;

/**
 * One `FaultProxy` in front of each of a set of nodes. Only client <-> node traffic goes
 * through them: the nodes keep talking to each other directly (replication, sentinel
 * monitoring, the cluster bus), so a fault affects the client alone.
 */
export class ProxySet {
  private readonly byReal = new Map<string, FaultProxy>();

  private constructor(readonly proxies: FaultProxy[]) {
    for (const p of proxies) this.byReal.set(key(p.target), p);
  }

  static async front(nodes: readonly (NodeAddress | ServerHandle)[]): Promise<ProxySet> {
    const addrs = nodes.map((n) => ('address' in n ? n.address : n));
    const proxies = await Promise.all(addrs.map((a) => FaultProxy.start(a)));
    return new ProxySet(proxies);
  }

  /** The proxy in front of this real node (by address or handle); throws if there is none. */
  of(node: NodeAddress | ServerHandle): FaultProxy {
    const a = 'address' in node ? node.address : node;
    const p = this.byReal.get(key(a));
    if (!p) throw new Error(`no proxy in front of ${key(a)}`);
    return p;
  }

  /** The proxy address clients use for this real node. */
  toProxy(node: NodeAddress | ServerHandle): NodeAddress {
    return { ...this.of(node).address };
  }

  /** The real node behind a proxy address (identity for addresses that are not a proxy). */
  toReal(a: NodeAddress): NodeAddress {
    const p = this.proxies.find((x) => x.port === a.port && key(x.address) === key(a));
    return p ? { ...p.target } : a;
  }

  /** `natMap` for a pool: `{ 'real-host:port': 'proxy-host:port' }`, for every node. */
  get natMap(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const p of this.proxies) {
      out[`${p.target.host}:${p.target.port}`] = `${p.address.host}:${p.address.port}`;
      if (p.target.host === '127.0.0.1') out[`localhost:${p.target.port}`] = `${p.address.host}:${p.address.port}`;
    }
    return out;
  }

  /** Heals every proxy. */
  async healAll(): Promise<void> {
    await Promise.all(this.proxies.map((p) => p.heal()));
  }

  async close(): Promise<void> {
    await Promise.all(this.proxies.map((p) => p.close()));
  }
}

/** Proxies in front of every data node and sentinel of a Sentinel topology. */
export async function proxySentinel(topo: SentinelTopology): Promise<ProxySet & { sentinelAddresses: NodeAddress[] }> {
  const set = await ProxySet.front([...topo.dataNodes, ...topo.sentinels]);
  return Object.assign(set, { sentinelAddresses: topo.sentinels.map((s) => set.toProxy(s)) });
}

/** Proxies in front of every node of a cluster; `seeds` are the proxy addresses. */
export async function proxyCluster(topo: ClusterTopology): Promise<ProxySet & { seeds: NodeAddress[] }> {
  const set = await ProxySet.front(topo.nodes);
  return Object.assign(set, { seeds: topo.nodes.map((n) => set.toProxy(n)) });
}
