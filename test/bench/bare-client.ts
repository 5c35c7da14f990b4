/**
 * The yardstick of the benchmarks: the thinnest correct pipelined Redis client on Node's `net`,
 * what a hand-written client with no features reaches. A ratio "× bare" in a bench table says
 * how much of the machine's Node-side ceiling a real client keeps.
 *
 * - Commands are RESP arrays of bulk strings, appended to one string per socket and written
 *   once per tick (`send()` says why `process.nextTick`).
 * - Replies resolve a FIFO ring of resolvers, from a minimal incremental RESP2 parser (simple
 *   string, error, integer, bulk, null, arrays) that keeps a reply split across TCP chunks and
 *   concatenates only once the bytes it knows it needs have arrived.
 * - No reconnect, no timeouts, no AUTH/SELECT/HELLO, no RESP3. A socket error or close rejects
 *   what is pending; after that the connection is dead.
 *
 * `BareCluster` reads `CLUSTER SLOTS` once from a seed, opens one connection per master and
 * routes every command by the slot of its first argument after the name (no MOVED/ASK).
 */
import net from 'node:net';
import tls from 'node:tls';
import { keySlot, SLOT_COUNT } from '../../src/cluster/slot.js';

/** A command argument: text (sent as UTF-8) or bytes. */
export type BareArg = string | Buffer;
/**
 * A decoded RESP2 reply: bulk and simple strings as UTF-8 strings, integers as numbers (exact
 * up to 2^53), null bulk/array as null, arrays as arrays. An error reply is an `Error` when
 * nested in an array; at the top level it rejects the command's promise instead.
 */
export type BareReply = string | number | null | Error | BareReply[];

const INCOMPLETE = Symbol('incomplete');
type Parsed = BareReply | typeof INCOMPLETE;
const CR = 13;

/**
 * Incremental RESP2 parser. `feed()` takes the socket's chunks and calls `onReply` once per
 * complete top-level reply, in order.
 */
export class RespParser {
  /** Unparsed tail of earlier chunks plus chunks received since (not yet concatenated). */
  private pending: Buffer[] = [];
  private pendingLen = 0;
  /** Bytes of `pending` needed before a parse can succeed (a large bulk: its whole length). */
  private need = 0;
  /** Read position in the buffer being parsed; on INCOMPLETE, `need` is in the same coordinates. */
  private pos = 0;

  constructor(private readonly onReply: (reply: BareReply) => void) {}

  feed(chunk: Buffer): void {
    let buf = chunk;
    if (this.pendingLen > 0) {
      this.pending.push(chunk);
      this.pendingLen += chunk.length;
      // A 1 MB bulk arrives in ~16 chunks: concatenating (and re-parsing) on every one of them
      // would copy O(n²) bytes.
      if (this.pendingLen < this.need) return;
      buf = Buffer.concat(this.pending, this.pendingLen);
      this.pending = [];
      this.pendingLen = 0;
    }
    const len = buf.length;
    this.pos = 0;
    while (this.pos < len) {
      const start = this.pos;
      const v = this.value(buf);
      if (v === INCOMPLETE) {
        this.pending = [buf.subarray(start)];
        this.pendingLen = len - start;
        this.need -= start;
        return;
      }
      this.onReply(v);
    }
  }

  /** The integer of a `:`, `$` or `*` line starting at `at`; NaN when the line is incomplete. */
  private int(buf: Buffer, at: number): number {
    const len = buf.length;
    let i = at;
    let neg = false;
    if (i < len && buf[i] === 0x2d) {
      neg = true;
      i++;
    }
    let n = 0;
    for (; i < len; i++) {
      const c = buf[i]!;
      if (c === CR) break;
      if (c < 0x30 || c > 0x39) throw new Error(`RESP: bad integer byte ${c} at ${i}`);
      n = n * 10 + (c - 0x30);
    }
    if (i + 1 >= len) {
      this.need = len + 1;
      return NaN;
    }
    this.pos = i + 2;
    return neg ? -n : n;
  }

  private value(buf: Buffer): Parsed {
    const len = buf.length;
    const start = this.pos;
    switch (buf[start]) {
      case 0x2b: // '+'
      case 0x2d: { // '-'
        const cr = buf.indexOf(CR, start + 1);
        if (cr === -1 || cr + 1 >= len) {
          this.need = len + 1;
          return INCOMPLETE;
        }
        this.pos = cr + 2;
        // The reply of every SET: no string to allocate.
        if (cr === start + 3 && buf[start + 1] === 0x4f && buf[start + 2] === 0x4b && buf[start] === 0x2b) return 'OK';
        const text = buf.toString('utf8', start + 1, cr);
        return buf[start] === 0x2b ? text : new Error(text);
      }
      case 0x3a: { // ':'
        const n = this.int(buf, start + 1);
        return n !== n ? INCOMPLETE : n;
      }
      case 0x24: { // '$'
        const n = this.int(buf, start + 1);
        if (n !== n) return INCOMPLETE;
        if (n < 0) return null;
        const from = this.pos;
        const end = from + n;
        if (end + 2 > len) {
          this.need = end + 2;
          return INCOMPLETE;
        }
        this.pos = end + 2;
        return buf.toString('utf8', from, end);
      }
      case 0x2a: { // '*'
        const n = this.int(buf, start + 1);
        if (n !== n) return INCOMPLETE;
        if (n < 0) return null;
        const items: BareReply[] = new Array(n);
        for (let i = 0; i < n; i++) {
          if (this.pos >= len) {
            this.need = len + 1;
            return INCOMPLETE;
          }
          const v = this.value(buf);
          if (v === INCOMPLETE) return INCOMPLETE;
          items[i] = v;
        }
        return items;
      }
      default:
        throw new Error(`RESP: unexpected type byte ${buf[start]} at ${start}`);
    }
  }
}

/** One socket: pipelined sends, replies matched in FIFO order. */
export class BareConnection {
  /** Encoded commands not yet written; `parts` only once a Buffer argument is pending. */
  private out = '';
  private parts: Array<string | Buffer> | undefined;
  private scheduled = false;
  /** Ring of [resolve, reject] pairs: slot 2i resolves, 2i+1 rejects. */
  private ring: Array<((v: never) => void) | undefined> = new Array(2 * 1024);
  private head = 0;
  private count = 0;
  private dead: Error | undefined;
  private readonly closed: Promise<void>;
  private readonly parser = new RespParser((r) => this.reply(r));
  private readonly flushBound = () => this.flush();

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.parser.feed(d));
    socket.on('error', (e) => this.fail(e));
    this.closed = new Promise((resolve) => socket.once('close', () => {
      this.fail(new Error('connection closed'));
      resolve();
    }));
  }

  /** Connects to `host:port` (over TLS with `tlsOptions`). */
  static connect(host: string, port: number, tlsOptions?: tls.ConnectionOptions): Promise<BareConnection> {
    return new Promise((resolve, reject) => {
      const socket = tlsOptions ? tls.connect({ host, port, ...tlsOptions }) : net.connect({ host, port });
      socket.once(tlsOptions ? 'secureConnect' : 'connect', () => {
        socket.off('error', reject);
        resolve(new BareConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends one command; resolves to its reply, rejects on an error reply or a dead socket. */
  send(args: readonly BareArg[]): Promise<unknown> {
    if (this.dead) return Promise.reject(this.dead);
    let s = `*${args.length}\r\n`;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (typeof a === 'string') {
        s += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
      } else {
        s += `$${a.length}\r\n`;
        (this.parts ??= []).push(this.out + s, a);
        this.out = '';
        s = '\r\n';
      }
    }
    this.out += s;
    if (!this.scheduled) {
      this.scheduled = true;
      // nextTick runs once the microtask queue has drained, so every worker resumed by one
      // 'data' event has queued its next command first. Measured in the standalone bench
      // (2 cores, 200k ops): nextTick, queueMicrotask and setImmediate all wrote 50 commands per
      // write at 50 in flight and 220-500 at 500, with CPU per op equal within noise (0.7-0.9 µs
      // at 500); cork() + one write() per command + uncork() on nextTick cost ~1.5x the CPU per
      // op (a write request per command). nextTick: no extra loop phase, and it cannot fire
      // before a worker resumed in the same tick.
      process.nextTick(this.flushBound);
    }
    return new Promise((resolve, reject) => {
      if (this.count * 2 === this.ring.length) this.grow();
      const at = ((this.head + this.count) * 2) % this.ring.length;
      this.ring[at] = resolve;
      this.ring[at + 1] = reject;
      this.count++;
    });
  }

  /** Half-closes the socket once pending writes are out; resolves when the server closed it too. */
  close(): Promise<void> {
    if (this.scheduled) this.flush();
    this.socket.end();
    return this.closed;
  }

  private flush(): void {
    this.scheduled = false;
    const parts = this.parts;
    if (parts === undefined) {
      if (this.out !== '') this.socket.write(this.out);
    } else {
      this.parts = undefined;
      this.socket.cork();
      for (const p of parts) this.socket.write(p);
      if (this.out !== '') this.socket.write(this.out);
      this.socket.uncork();
    }
    this.out = '';
  }

  private reply(r: BareReply): void {
    if (this.count === 0) {
      this.fail(new Error('RESP: a reply with no command waiting for it'));
      this.socket.destroy();
      return;
    }
    const at = this.head * 2;
    const fn = this.ring[r instanceof Error ? at + 1 : at]!;
    this.ring[at] = this.ring[at + 1] = undefined;
    this.head = (this.head + 1) % (this.ring.length / 2);
    this.count--;
    fn(r as never);
  }

  private grow(): void {
    const old = this.ring;
    const ring: typeof old = new Array(old.length * 2);
    for (let i = 0; i < this.count * 2; i++) ring[i] = old[(this.head * 2 + i) % old.length];
    this.ring = ring;
    this.head = 0;
  }

  private fail(err: Error): void {
    this.dead ??= err;
    while (this.count > 0) {
      const at = this.head * 2;
      const reject = this.ring[at + 1]!;
      this.ring[at] = this.ring[at + 1] = undefined;
      this.head = (this.head + 1) % (this.ring.length / 2);
      this.count--;
      reject(err as never);
    }
  }
}

/** `connections` sockets to one server, commands dealt round-robin (default 1 socket). */
export class BareClient {
  private next = 0;
  private constructor(private readonly conns: BareConnection[]) {}

  static async connect(o: { host: string; port: number; connections?: number; tls?: tls.ConnectionOptions }): Promise<BareClient> {
    const n = o.connections ?? 1;
    return new BareClient(await Promise.all(Array.from({ length: n }, () => BareConnection.connect(o.host, o.port, o.tls))));
  }

  send(args: readonly BareArg[]): Promise<unknown> {
    const conns = this.conns;
    if (conns.length === 1) return conns[0]!.send(args);
    const c = conns[this.next]!;
    this.next = (this.next + 1) % conns.length;
    return c.send(args);
  }

  async close(): Promise<void> {
    await Promise.all(this.conns.map((c) => c.close()));
  }
}

/** One bare connection per master, commands routed by the CRC16 slot of their key (`args[1]`). */
export class BareCluster {
  private constructor(
    private readonly bySlot: Array<BareConnection | undefined>,
    private readonly conns: BareConnection[],
  ) {}

  /** Reads `CLUSTER SLOTS` from `seed` once, then connects to every master it lists. */
  static async connect(seed: { host: string; port: number }): Promise<BareCluster> {
    const first = await BareConnection.connect(seed.host, seed.port);
    let ranges: BareReply[];
    try {
      ranges = (await first.send(['CLUSTER', 'SLOTS'])) as BareReply[];
    } finally {
      await first.close();
    }
    const byAddr = new Map<string, Promise<BareConnection>>();
    const bySlot = new Array<Promise<BareConnection> | undefined>(SLOT_COUNT);
    for (const r of ranges as [number, number, [string, number, ...unknown[]], ...unknown[]][]) {
      const [from, to, [host, port]] = r;
      // An empty host means "the address you reached me on" (cluster-preferred-endpoint-type unknown-endpoint).
      const h = host === '' || host === '?' ? seed.host : host;
      const addr = `${h}:${port}`;
      let c = byAddr.get(addr);
      if (!c) byAddr.set(addr, (c = BareConnection.connect(h, port)));
      for (let s = from; s <= to; s++) bySlot[s] = c;
    }
    const conns = await Promise.all(byAddr.values());
    const resolved = await Promise.all(bySlot.map((p) => p));
    return new BareCluster(resolved, conns);
  }

  send(args: readonly BareArg[]): Promise<unknown> {
    const c = args.length > 1 ? this.bySlot[keySlot(args[1]!)] : this.conns[0];
    return c ? c.send(args) : Promise.reject(new Error(`slot ${keySlot(args[1]!)} not served`));
  }

  async close(): Promise<void> {
    await Promise.all(this.conns.map((c) => c.close()));
  }
}
