import net from 'node:net';
import tls from 'node:tls';
import { inspect } from 'node:util';
import { EventEmitter } from 'eventemitter3';
import {
  AuthenticationError, ConnectionError, overloadError, PoolClosedError, ProtocolError, RedisError, TimeoutError, UncertainWriteError, type QueueFullError,
} from '../errors.js';
import { encodeCommand } from '../resp/encoder.js';
import { RespDecoder, type DecodedValue } from '../resp/decoder.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import { transactionRole, type TransactionRole } from '../commands/traits.js';
import { Fifo } from './queue.js';
import type { Credentials } from './credentials.js';
import { MAX_TIMER, type ResolvedConnectionOptions } from './options.js';
import { authArgs, clause, handshakeError, handshakeSteps, scrubSecret } from './handshake.js';
import { scheduleFlush, type Flushable } from './flush-scheduler.js';
import { handshakeClosedMessage, socketErrorMessage, tlsErrorSummary, tlsHint } from './tls-errors.js';
import { PROBE_LIMIT_MS, readTlsAlert, speaksTls, watchForPlainPort } from './diagnose.js';
import { Confirmations, type ConfirmationHost } from './confirmations.js';
import { Command, partsSize, QUEUED, SETTLED, WRITTEN, type SendOptions } from './command.js';
import { confirmationKind, entersSubscribed, isEnteringConfirmation, isResp2Push, pushConfirms } from './pubsub-replies.js';
import { inferEndpointType, notificationType, parseMaintenance, relaxedDeadline, relaxedIdleLimit, RelaxState, type MaintenanceReport } from './maintenance.js';
import { chunkEnd, skippedByFlush, writeOf } from './write-batch.js';

export type { SendOptions } from './command.js';

/** Events of one connection. */
export interface ConnectionEvents {
  /** The socket closed; `error` says why, undefined for a requested close. */
  close: [error: Error | undefined];
  /** A pub/sub message or other out-of-band push: `['message', channel, payload]`, `['pmessage', pattern, channel, payload]`. */
  push: [value: Reply[]];
  /** A maintenance notification (MOVING, MIGRATING …) was acted on, or ignored as malformed or unknown. */
  maintenance: [report: MaintenanceReport];
}

let nextId = 1;

/**
 * One socket to one node with a FIFO of in-flight commands.
 *
 * Commands sent during one event-loop turn are written with one socket write per connection,
 * all connections together at the end of the turn (automatic pipelining; see flush-scheduler.ts).
 * A connection never reconnects: when it breaks it rejects what it holds and closes, and
 * its owner (a pool or a lane) makes a new one. Commands that were never written reject
 * with `ConnectionError` (safe to retry); written ones with `UncertainWriteError`.
 */
export class Connection extends EventEmitter<ConnectionEvents> implements Flushable {
  /** Unique id, for logs and stats. */
  readonly id = nextId++;
  /** Set by the pool that owns it: the target generation it was made for. */
  generation = 0;
  /** Set when the owner must not reuse it (e.g. it entered pub/sub mode). */
  dirty = false;
  /** Set by the owner once it served as a multiplexed lane (the client-side cache flushes when one is lost). */
  lane = false;
  readonly address: NodeAddress;
  private readonly label: string;
  private readonly socket: net.Socket;
  private readonly decoder: RespDecoder;
  private readonly opts: ResolvedConnectionOptions;
  private toWrite: Command[] = [];
  private readonly inflight = new Fifo<Command>();
  private flushScheduled = false;
  private fullKey = '';
  private fullMessage = '';
  private closedError: Error | undefined;
  private isClosed = false;
  private isReady = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private lastActivity = 0;
  private blockingInflight = 0;
  private subscribed = false;
  private retiredBy: Error | undefined;
  private readonly usable = new AbortController();
  private secured = false;
  /** Set by close(): called when the last pending reply is in. */
  private drained: (() => void) | undefined;
  /** Bytes of commands queued and not yet handed to the socket. */
  private queuedBytes = 0;
  /** socket.write() said the kernel buffer is full: writes wait for 'drain'. */
  private awaitingDrain = false;
  /** A heartbeat PING is in flight. */
  private heartbeating = false;
  /** Between MULTI and EXEC/DISCARD: no heartbeat may slip into the transaction. */
  private inMulti = false;
  /** Set by the owner: the re-authentication round its credentials come from. */
  authEpoch = 0;
  /** The WAITs of durable writes (see confirmations.ts). */
  private readonly confirmations: Confirmations<Command>;
  /**
   * Decode every reply and push as Buffers (a subscriber connection whose messages must stay
   * binary-safe; channel names are then Buffers too).
   */
  pushBuffers = false;
  /** Open maintenances and the relaxed timeout; undefined when the connection did not opt in. */
  private readonly relax: RelaxState | undefined;

  private constructor(address: NodeAddress, opts: ResolvedConnectionOptions, socket: net.Socket) {
    super();
    this.address = address;
    this.label = formatAddress(address);
    this.opts = opts;
    this.socket = socket;
    this.relax = opts.maint ? new RelaxState(opts.maint.relaxedTimeout) : undefined;
    this.confirmations = new Confirmations<Command>(this.confirmationHost());
    this.decoder = new RespDecoder({
      maxReplyBytes: opts.maxReplyBytes,
      onReply: (v, attrs) => this.onReply(v, attrs),
      onPush: (v) => this.onPush(v),
      onProtocolError: (e) => this.refuseReply(e),
      wantBuffers: () => this.pushBuffers || (this.inflight.peek()?.buffers ?? false),
    });
    socket.on('data', (chunk: Buffer) => {
      this.lastActivity = Date.now();
      this.decoder.feed(chunk);
    });
    socket.on('error', (err) => {
      const hint = opts.tls ? tlsHint(err) : undefined;
      this.destroy(new ConnectionError(
        hint ? `The TLS connection to ${this.label} failed (${tlsErrorSummary(err)}): ${hint}.` : socketErrorMessage(this.label, err),
        { cause: err, address },
      ));
    });
    socket.on('close', () => this.destroy(new ConnectionError(`Connection to ${this.label} was closed by the server or the network`, { address })));
  }

  /**
   * Opens a connection and runs the handshake (HELLO or AUTH/SELECT/CLIENT SETNAME, then
   * `extraHandshake`, e.g. READONLY, then with `verify` a PING), all within `connectTimeout`.
   */
  static async connect(address: NodeAddress, opts: ResolvedConnectionOptions, extraHandshake: Arg[][] = [], verify = false, signal?: AbortSignal): Promise<Connection> {
    const label = formatAddress(address);
    const connectDeadline = opts.connectTimeout > 0 ? Date.now() + opts.connectTimeout : 0;
    // The provider runs while TCP and TLS connect: a token fetch costs no extra round trip.
    const credentials = opts.auth.resolve({ address, role: opts.role }, connectDeadline);
    credentials.catch(() => {});
    const socket = opts.tls
      ? tls.connect({ ...opts.tls, host: address.host, port: address.port, servername: opts.tls.servername ?? (net.isIP(address.host) ? undefined : address.host) })
      : net.connect({ host: address.host, port: address.port });
    socket.setNoDelay(true);
    if (opts.keepAlive > 0) socket.setKeepAlive(true, opts.keepAlive);
    const conn = new Connection(address, opts, socket);
    // The owner closing (signal) cuts a connect short instead of waiting out connectTimeout.
    const onAbort = () => conn.destroy(signal?.reason instanceof Error ? signal.reason : new PoolClosedError());
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const deadline = opts.connectTimeout > 0
      ? new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const err = opts.tls && !conn.secured
              ? new TimeoutError(
                  `The TLS handshake with ${label} got no answer within connectTimeout (${opts.connectTimeout} ms). Does this port speak TLS? A plain-TCP Redis waits silently for a line the TLS greeting does not contain; use its tls-port.`,
                  { address },
                )
              : new TimeoutError(`Connecting to ${label} took longer than connectTimeout (${opts.connectTimeout} ms).`, { address });
            conn.destroy(err);
            reject(err);
          }, opts.connectTimeout);
        })
      : undefined;
    // A TLS handshake still unanswered after a second: is this a plain port? (see diagnose.ts)
    let plainPortError: ((err: Error) => void) | undefined;
    const plainPort = opts.tls ? new Promise<never>((_, reject) => (plainPortError = reject)) : undefined;
    plainPort?.catch(() => {});
    const stopPlainCheck = opts.tls
      ? watchForPlainPort(address, label, connectDeadline, () => conn.secured || conn.isClosed, (err) => {
          conn.destroy(err);
          plainPortError!(err);
        })
      : () => {};
    try {
      const work = (async () => {
        await new Promise<void>((resolve, reject) => {
          if (conn.isClosed) return reject(conn.closedError);
          socket.once(opts.tls ? 'secureConnect' : 'connect', () => {
            conn.secured = true;
            resolve();
          });
          conn.once('close', (e) => reject(e));
        });
        stopPlainCheck();
        await conn.handshake(await credentials, extraHandshake, verify, connectDeadline);
      })();
      await Promise.race([work, ...(deadline ? [deadline] : []), ...(plainPort ? [plainPort] : [])]);
      conn.isReady = true;
      conn.lastActivity = Date.now();
      if (opts.pingInterval > 0) conn.arm(conn.lastActivity + opts.pingInterval);
      return conn;
    } catch (err) {
      conn.destroy(err as Error);
      throw err;
    } finally {
      if (timer) clearTimeout(timer);
      stopPlainCheck();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async handshake(creds: Credentials | null, extra: Arg[][], verify: boolean, connectDeadline: number): Promise<void> {
    const maint = this.opts.maint;
    const endpoint = maint ? (maint.endpointType ?? inferEndpointType(this.address.host, this.opts.tls !== undefined, this.socket.remoteAddress)) : undefined;
    const steps = handshakeSteps(this.opts, creds, extra, verify, endpoint);
    if (steps.length === 0) return;
    // One write for the whole handshake; the first failure is the one reported.
    const results = await Promise.all(steps.map((s) => this.send(s.args, { timeout: 0 }).then((v) => v, (e: Error) => e)));
    const context = { label: this.label, address: this.address, creds, tls: this.opts.tls !== undefined, closedError: this.closedError };
    for (let i = 0; i < steps.length; i++) {
      const err = handshakeError(steps[i]!, results[i], context);
      if (!err) continue;
      // Cut off rather than refused: find out why before saying so.
      if (results[i] instanceof RedisError || !(err instanceof ConnectionError)) throw err;
      throw await this.diagnoseClosed(err, steps[i]!.what, connectDeadline > 0 ? connectDeadline - Date.now() : this.opts.connectTimeout || PROBE_LIMIT_MS);
    }
  }

  /**
   * Sends AUTH with `creds` on this live connection (pipelined after what it already carries,
   * so no command is interrupted). A refusal rejects with `AuthenticationError` and leaves the
   * connection authenticated as before. A RESP2 connection in subscribed mode cannot take AUTH
   * (Redis refuses it there): its owner replaces it instead.
   */
  async reauthenticate(creds: Credentials | null, deadline = 0): Promise<void> {
    if (creds === null || this.isClosed) return;
    if (this.subscribed && this.opts.protocol === 2) {
      throw new ConnectionError(`${this.label}: a RESP2 subscriber connection cannot be re-authenticated in place; reconnect it.`, { address: this.address });
    }
    try {
      await this.send(authArgs(creds), deadline > 0 ? { deadline } : { timeout: this.opts.connectTimeout });
    } catch (err) {
      if (err instanceof RedisError) {
        const refusal = scrubSecret(err, creds.password);
        throw new AuthenticationError(
          `Re-authentication of user "${creds.username ?? 'default'}" at ${this.label} failed: ${clause(refusal.message)}. The connection keeps its former authentication.`,
          { cause: refusal, address: this.address },
        );
      }
      throw err;
    }
  }

  /**
   * A read-only question on a fresh connection (ROLE, SENTINEL …, CLUSTER SHARDS): a connection
   * lost before the reply is a failed connect, worded like a handshake failure (TLS or not TLS,
   * what to set), never an uncertain write.
   */
  async ask(args: readonly Arg[]): Promise<Reply> {
    try {
      return await this.send(args);
    } catch (err) {
      if (!(err instanceof ConnectionError) || err instanceof AuthenticationError) throw err;
      const root = (this.closedError?.cause as Error | undefined) ?? this.closedError ?? err;
      const closed = new ConnectionError(handshakeClosedMessage(this.label, String(args[0]), root, this.opts.tls !== undefined), { cause: root, address: this.address });
      throw await this.diagnoseClosed(closed, String(args[0]), this.opts.connectTimeout || PROBE_LIMIT_MS);
    }
  }

  /**
   * A connection cut during its first exchange has several explanations; one read-only probe
   * (diagnose.ts) names the one that holds: the TLS alert the server sent (a client certificate
   * it requires), or a TLS port reached in plain TCP. Otherwise `closed` stands as it is.
   */
  private async diagnoseClosed(closed: ConnectionError, step: string, budgetMs: number): Promise<ConnectionError> {
    if (tlsHint(closed.cause) !== undefined) return closed; // the alert won the race: nothing to add
    // Only a server that cut us off has something to tell (not a timeout, nor our own close).
    const code = (closed.cause as { code?: unknown } | undefined)?.code;
    const cut = code === 'ECONNRESET' || code === 'EPIPE' || (closed.cause instanceof ConnectionError && closed.cause.cause === undefined && /closed by the server/.test(closed.cause.message));
    if (!cut) return closed;
    if (this.opts.tls) {
      const alert = await readTlsAlert(this.address, this.opts.tls, budgetMs);
      return alert ? new ConnectionError(handshakeClosedMessage(this.label, step, alert, true), { cause: alert, address: this.address }) : closed;
    }
    if (await speaksTls(this.address, budgetMs)) {
      return new ConnectionError(
        `${this.label} speaks TLS: it closed this plain-TCP connection during the handshake (${step}), and a TLS handshake with it succeeds: set the tls option (with the server's CA as tls.ca) or use a rediss:// URL.`,
        { cause: closed.cause, address: this.address },
      );
    }
    return closed;
  }

  /** True while the connection is in RESP2 subscribed mode (only (P|S)SUBSCRIBE, PING … allowed). */
  get subscribedResp2(): boolean {
    return this.subscribed && this.opts.protocol === 2;
  }

  /** A summary without buffers, queued command bytes (an AUTH carries a password) or socket internals. */
  [inspect.custom](): string {
    return `Connection { id: ${this.id}, address: '${this.label}', ready: ${this.ready}, pending: ${this.pending}${this.opts.tls ? ', tls: true' : ''} }`;
  }

  /** An already-closed connection (see NodePool.create): it never opens a socket. */
  static closedPlaceholder(address: NodeAddress, opts: ResolvedConnectionOptions): Connection {
    const conn = new Connection(address, opts, new net.Socket());
    conn.destroy(new PoolClosedError());
    return conn;
  }

  /**
   * Stops taking commands (they reject with a not-sent `ConnectionError` whose cause is
   * `reason`) while replies already due still arrive. Used when the pool moves to another node.
   */
  retire(reason: Error): void {
    if (this.retiredBy !== undefined || this.isClosed) return;
    this.retiredBy = reason;
    // Commands queued this tick but not yet written must not reach the old node after the
    // switch: they leave now, provably unsent, for the caller to send to the new one.
    this.dropQueued((cmd) => new ConnectionError(`${cmd.name} was not sent: ${reason.message}`, { cause: reason, address: this.address }));
    this.usable.abort(reason);
  }

  /** Aborts (with the reason) when this connection stops taking commands: closed, or retired. */
  get signal(): AbortSignal {
    return this.usable.signal;
  }

  /** True until the socket closes. */
  get isOpen(): boolean {
    return !this.isClosed;
  }

  /** True once the handshake passed and the socket is still open. */
  get ready(): boolean {
    return this.isReady && !this.isClosed;
  }

  /** Commands written and waiting for a reply, plus commands not yet written. */
  get pending(): number {
    return this.inflight.length + this.toWrite.length;
  }

  /** True while a notified maintenance is in progress here: timeouts are relaxed (`maintRelaxedTimeout`). */
  get relaxed(): boolean {
    return this.relax?.relaxed ?? false;
  }

  /** True while a blocking command (BLPOP, XREAD BLOCK …) waits on the server. */
  get isBlocked(): boolean {
    return this.blockingInflight > 0;
  }

  /** Why it closed, if it did. */
  get closeReason(): Error | undefined {
    return this.closedError;
  }

  /**
   * Sends one command. Resolves with its reply; a server error reply rejects with
   * `RedisError`; a connection failure with `ConnectionError` / `UncertainWriteError`.
   */
  send(args: readonly Arg[], options?: SendOptions): Promise<Reply> {
    // Refusals come first, outside the promise executor: a refused command's arguments are
    // not kept alive by anything the caller holds (a flood refuses millions of them).
    if (this.isClosed) {
      return Promise.reject(new ConnectionError(`Connection to ${this.label} is closed; the command was not sent.`, { cause: this.closedError, address: this.address }));
    }
    if (this.retiredBy !== undefined) {
      return Promise.reject(new ConnectionError(`${String(args[0])} was not sent: ${this.retiredBy.message}`, { cause: this.retiredBy, address: this.address }));
    }
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    // Full by count: refused before anything is encoded, so a burst against a stopped node
    // costs little per refused command (the byte bound needs the encoding, below).
    if (this.inflight.length + this.toWrite.length >= this.opts.maxPending) return Promise.reject(this.overLimit(String(args[0]), 0)!);
    let encoded: string | Array<string | Buffer>;
    try {
      encoded = encodeCommand(args);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const name = typeof args[0] === 'string' ? args[0] : String(args[0]);
    const size = typeof encoded === 'string' ? encoded.length : partsSize(encoded);
    const refusal = this.overLimit(name, size);
    if (refusal !== undefined) return Promise.reject(refusal);
    return new Promise<Reply>((resolve, reject) => {
      const pubsub = confirmationKind(name);
      const subscribe = pubsub !== undefined && entersSubscribed(pubsub);
      const cmd = new Command(name, encoded, resolve, reject, options?.returnBuffers ?? false, options?.blocking ?? false, subscribe, signal, options?.onAttributes);
      if (pubsub !== undefined) {
        cmd.confirm = pubsub;
        if (args.length > 1) cmd.confirmName = String(args[1]);
      }
      cmd.size = size;
      const patience = options?.patience;
      if (patience !== undefined && this.opts.socketTimeout > 0 && patience > this.opts.socketTimeout) cmd.idleLimit = patience;
      const t = options?.traits;
      const role = t !== undefined ? t.transaction : transactionRole(name);
      if (role !== undefined) this.trackTransaction(role);
      let deadline = options?.deadline;
      if (deadline === undefined) {
        const timeout = options?.timeout ?? this.opts.commandTimeout;
        deadline = timeout > 0 ? Date.now() + timeout : 0;
      }
      if (deadline > 0 && this.relax?.relaxed) deadline = relaxedDeadline(deadline, Date.now(), this.relax.relaxedMs);
      if (deadline > 0) {
        cmd.timer = deadline;
        this.arm(deadline);
      }
      if (signal) {
        const onAbort = () => this.expire(cmd, signal.reason as Error);
        signal.addEventListener('abort', onAbort, { once: true });
        cmd.abort = () => signal.removeEventListener('abort', onAbort);
      }
      const durable = options?.durable;
      if (durable !== undefined) {
        cmd.durable = durable;
        this.confirmations.add(cmd);
      }
      this.toWrite.push(cmd);
      this.queuedBytes += size;
      if (pubsub !== undefined) {
        cmd.extras = Math.max(0, args.length - 2);
        // One confirmation arrives per channel; the extra entries absorb them in order.
        for (let i = 2; i < args.length; i++) {
          const extra = new Command(name, '', () => {}, () => {}, false, false, subscribe, undefined, undefined);
          extra.state = QUEUED;
          extra.placeholder = true;
          extra.confirm = pubsub;
          extra.confirmName = String(args[i]);
          this.toWrite.push(extra);
        }
        if (subscribe) this.dirty = true;
      }
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        scheduleFlush(this);
      }
    });
  }

  /** A QueueFullError when this command would exceed maxPending or maxPendingBytes, else undefined. */
  private overLimit(name: string, size: number): QueueFullError | undefined {
    const held = this.inflight.length + this.toWrite.length;
    if (held >= this.opts.maxPending) {
      // One message string for a run of refusals (a burst refuses thousands alike).
      const key = `${name}\0${held}`;
      if (this.fullKey !== key) {
        this.fullKey = key;
        this.fullMessage = `${name} was not sent: ${this.label} already holds ${held} commands (maxPending ${this.opts.maxPending}); the node is slow or unreachable.`;
      }
      return overloadError(this.fullMessage);
    }
    const unsent = this.queuedBytes + this.socket.writableLength;
    if (unsent > 0 && unsent + size > this.opts.maxPendingBytes) {
      return overloadError(`${name} was not sent: ${unsent} bytes of commands to ${this.label} are not written yet (maxPendingBytes ${this.opts.maxPendingBytes}); the node reads slowly or is unreachable.`);
    }
    return undefined;
  }

  private trackTransaction(role: TransactionRole): void {
    if (role === 'multi') {
      this.confirmations.beforeMulti();
      this.inMulti = true;
    } else this.inMulti = false;
  }

  /** @internal Called by the flush scheduler. */
  flushQueued(): void {
    this.flush();
  }

  private flush(): void {
    this.flushScheduled = false;
    // Backpressure: while the socket's buffer is full, commands wait here (bounded by maxPending*).
    if (this.isClosed || this.toWrite.length === 0 || this.awaitingDrain) return;
    this.confirmations.beforeFlush();
    const queue = this.toWrite;
    if (this.inflight.length === 0) this.lastActivity = Date.now();
    // Chunks of about FLUSH_CHUNK_BYTES while the socket takes them (write-batch.ts); the rest
    // stays queued, unsent, until it drains. The bytes of a chunk first (pure), then the same
    // commands go in flight: a second pass costs less than a callback per command.
    let start = 0;
    let ok = true;
    while (ok && start < queue.length) {
      const end = chunkEnd(queue, start);
      const batch = start === 0 && end === queue.length ? queue : queue.slice(start, end);
      const write = writeOf(batch);
      for (const cmd of batch) {
        this.queuedBytes -= cmd.size;
        if (skippedByFlush(cmd)) continue; // timed out or aborted before the write: never sent
        cmd.state = cmd.state === SETTLED ? SETTLED : WRITTEN;
        // The socket holds these bytes now; the command need not hold them too.
        cmd.encoded = '';
        if (cmd.blocking) this.blockingInflight++;
        this.inflight.push(cmd);
      }
      ok = this.writeOut(write);
      start = end;
    }
    this.toWrite = start === queue.length ? [] : queue.slice(start);
    if (this.toWrite.length === 0) this.queuedBytes = 0;
    if (!ok) {
      this.awaitingDrain = true;
      this.socket.once('drain', () => {
        this.awaitingDrain = false;
        this.flush();
      });
    }
    if (this.opts.socketTimeout > 0) this.arm(this.lastActivity + this.opts.socketTimeout);
  }

  /** Hands one chunk to the socket; false when its buffer is full (wait for 'drain'). */
  private writeOut(write: string | Array<string | Buffer>): boolean {
    if (typeof write === 'string') return write ? this.socket.write(write) : true;
    let ok = true;
    this.socket.cork();
    for (const p of write) ok = this.socket.write(p) && ok;
    process.nextTick(() => this.socket.uncork());
    return ok;
  }

  private onReply(value: DecodedValue, attrs: Map<Reply, Reply> | undefined): void {
    // RESP2 pub/sub: messages arrive as ordinary arrays in the reply stream (RESP3 sends them
    // as pushes), and so does an unsubscribe the server decides on (a sharded channel's slot
    // moved away): neither answers the command at the head.
    if (this.subscribed && this.opts.protocol === 2 && Array.isArray(value) && isResp2Push(value, this.inflight.peek())) {
      this.deliverPush(value);
      return;
    }
    const cmd = this.inflight.shift();
    if (cmd === undefined) {
      this.destroy(new ProtocolError(`${this.label} sent a reply that no command was waiting for; the connection was dropped.`));
      return;
    }
    if (cmd.blocking) this.blockingInflight--;
    // A refused SUBSCRIBE (e.g. NOPERM) sends one error, not one reply per channel: drop the placeholders.
    if (cmd.extras > 0 && value instanceof RedisError) for (let i = 0; i < cmd.extras; i++) this.inflight.shift();
    if (cmd.subscribe && isEnteringConfirmation(value)) this.subscribed = true;
    if (this.pending === 0) {
      if (this.drained !== undefined) this.drained();
      else if (this.opts.pingInterval > 0) this.arm(this.lastActivity + this.opts.pingInterval);
    }
    if (cmd.state === SETTLED) return; // its caller gave up (timeout or abort); the late reply is dropped
    // A durable write ran on this node; it resolves when its WAIT says enough replicas have it.
    if (cmd.durable !== undefined && this.confirmations.hold(cmd, value, attrs)) return;
    this.settle(cmd);
    if (value instanceof RedisError) {
      value.address = this.address;
      cmd.reject(value);
    } else {
      if (attrs && cmd.onAttributes) {
        try {
          cmd.onAttributes(attrs);
        } catch (e) {
          rethrowLater(e);
        }
      }
      cmd.resolve(value);
    }
  }

  private onPush(value: Reply[]): void {
    if (this.relax !== undefined && notificationType(value) !== undefined) {
      this.onMaintenance(value);
      return;
    }
    // RESP3: subscribe confirmations are pushes, and they complete the SUBSCRIBE command.
    const head = this.inflight.peek();
    if (head !== undefined && pushConfirms(head, value)) {
      if (head.subscribe) this.subscribed = true;
      this.inflight.shift();
      if (head.state !== SETTLED) {
        this.settle(head);
        head.resolve(value);
      }
      return;
    }
    this.deliverPush(value);
  }

  /**
   * A maintenance notification: the timeouts of this connection follow it (see
   * maintenance.ts), its owner acts on the rest (hand-over, slot map). A malformed or unknown
   * one is reported as ignored and changes nothing: never fatal.
   */
  private onMaintenance(value: Reply[]): void {
    const parsed = parseMaintenance(value, this.opts.maint!.mapAddress);
    if (!parsed.ok) {
      this.emitMaintenance({ ignored: { kind: parsed.kind, reason: parsed.reason } });
      return;
    }
    if (this.relax!.apply(parsed.notice)) this.relaxPending();
    this.emitMaintenance({ notice: parsed.notice });
  }

  private emitMaintenance(report: MaintenanceReport): void {
    try {
      this.emit('maintenance', report);
    } catch (e) {
      rethrowLater(e);
    }
  }

  /** Relaxation starts: the deadlines of commands already here are raised as well. */
  private relaxPending(): void {
    const now = Date.now();
    const ms = this.relax!.relaxedMs;
    let earliest = Infinity;
    const raise = (cmd: Command) => {
      if (cmd.state === SETTLED || cmd.timer === 0) return;
      cmd.timer = relaxedDeadline(cmd.timer, now, ms);
      if (cmd.timer < earliest) earliest = cmd.timer;
    };
    for (const cmd of this.inflight) raise(cmd);
    for (const cmd of this.toWrite) raise(cmd);
    if (earliest !== Infinity) this.arm(earliest);
  }

  /**
   * The reply being decoded is malformed or over `maxReplyBytes`. It belongs to the oldest
   * command in flight: that command rejects with the `ProtocolError` itself (it executed, its
   * reply cannot be read, so it is never re-sent); the stream cannot be trusted past this
   * point, so the connection is dropped and the others fail as in any drop (written ones
   * `UncertainWriteError`, unwritten ones `ConnectionError`, retried where safe).
   */
  private refuseReply(e: Error): void {
    const head = this.inflight.peek();
    if (head !== undefined && head.state !== SETTLED && !head.placeholder) {
      this.inflight.shift();
      if (head.blocking) this.blockingInflight--;
      this.settle(head);
      head.reject(new ProtocolError(`The reply to ${head.name} from ${this.label} was refused: ${clause(e.message)}. The command ran on the server; its reply was discarded and the connection dropped.`, { cause: e }));
    }
    this.destroy(new ProtocolError(`${clause(e.message)} (from ${this.label}); the connection was dropped`, { cause: e }));
  }

  /** A listener that throws must not be mistaken for a decoding failure and take the connection down. */
  private deliverPush(value: Reply[]): void {
    try {
      this.emit('push', value);
    } catch (e) {
      rethrowLater(e);
    }
  }

  /** Rejects every command not yet written (provably unsent) with `why(cmd)`. */
  private dropQueued(why: (cmd: Command) => Error): void {
    const queued = this.toWrite;
    this.toWrite = [];
    this.queuedBytes = 0;
    this.confirmations.dropUnsent();
    for (const cmd of queued) {
      if (cmd.state === SETTLED) continue;
      this.settle(cmd);
      cmd.reject(why(cmd));
    }
  }

  private settle(cmd: Command): void {
    cmd.state = SETTLED;
    if (cmd.abort) cmd.abort();
  }

  /** A command's caller gives up on it (deadline or abort). */
  private expire(cmd: Command, err: Error): void {
    if (cmd.state === SETTLED) return;
    const wasWritten = cmd.state === WRITTEN;
    this.settle(cmd);
    if (!wasWritten) {
      const i = this.toWrite.indexOf(cmd);
      if (i !== -1) {
        this.toWrite.splice(i, 1 + cmd.extras);
        this.queuedBytes -= cmd.size;
      }
    }
    cmd.reject(err);
  }

  private arm(at: number): void {
    if (this.timer !== undefined && at >= this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    // Node fires a delay above 2^31-1 ms after 1 ms (with a warning), and onTimer would re-arm
    // at once: a deadline weeks away (a long BLPOP) spun the connection. Wake at the cap instead.
    this.timer = setTimeout(() => this.onTimer(), Math.min(MAX_TIMER, Math.max(0, at - Date.now())));
  }

  /** One timer per connection serves every command deadline and the socket inactivity check. */
  private onTimer(): void {
    this.timer = undefined;
    if (this.isClosed) return;
    const now = Date.now();
    let next = Infinity;
    const check = (cmd: Command) => {
      if (cmd.state === SETTLED || cmd.timer === 0) return;
      if (cmd.timer <= now) {
        const sent = cmd.state === WRITTEN;
        this.expire(cmd, new TimeoutError(
          cmd.confirming
            ? `${cmd.name} ran on ${this.label}, but the WAIT confirming its replication did not answer within its timeout; it was not re-sent.`
            : `${cmd.name} to ${this.label} got no reply within its timeout; ${sent ? 'it was sent and may have executed' : 'it was not sent'}.`,
          { address: this.address, sent },
        ));
      } else if (cmd.timer < next) next = cmd.timer;
    };
    for (const cmd of this.inflight) check(cmd);
    for (const cmd of [...this.toWrite]) check(cmd);
    this.confirmations.forEachHeld(check);
    const st = this.opts.socketTimeout;
    if (st > 0 && this.inflight.length > 0 && this.blockingInflight === 0) {
      const idleSince = this.lastActivity;
      const head = this.inflight.peek()!;
      let limit = head.idleLimit > st ? head.idleLimit : st;
      if (this.relax?.relaxed) limit = relaxedIdleLimit(limit, this.relax.relaxedMs);
      if (now - idleSince >= limit) {
        const cause = new TimeoutError(`No data from ${this.label} for ${now - idleSince} ms (socketTimeout ${limit === st ? `${st} ms` : limit === head.idleLimit ? `stretched to the call's ${limit} ms` : `relaxed to ${limit} ms during a maintenance`}) while ${this.inflight.length} commands waited.`, { address: this.address, sent: true });
        this.destroy(cause);
        return;
      }
      next = Math.min(next, idleSince + limit);
    }
    const pi = this.opts.pingInterval;
    if (pi > 0 && this.isReady && !this.heartbeating && this.pending === 0 && !this.inMulti) {
      if (now - this.lastActivity >= pi) this.heartbeat(pi);
      else next = Math.min(next, this.lastActivity + pi);
    }
    if (next !== Infinity) this.arm(next);
  }

  /** What confirmations.ts may do to this connection. */
  private confirmationHost(): ConfirmationHost<Command> {
    return {
      label: this.label,
      address: this.address,
      isClosed: () => this.isClosed,
      settled: (c: Command) => c.state === SETTLED,
      written: (c: Command) => c.state === WRITTEN,
      settle: (c: Command) => this.settle(c),
      queueWait: (args: Arg[], timeout: number, onReply: (v: Reply) => void, onError: (e: Error) => void) => {
        const encoded = encodeCommand(args);
        const wait = new Command('WAIT', encoded, onReply, onError, false, false, false, undefined, undefined);
        wait.size = typeof encoded === 'string' ? encoded.length : partsSize(encoded);
        // The server holds the reply up to `timeout`: that silence is not a dead socket.
        if (this.opts.socketTimeout > 0) wait.idleLimit = this.opts.socketTimeout + timeout;
        this.toWrite.push(wait);
        this.queuedBytes += wait.size;
      },
      flushSoon: () => {
        if (!this.flushScheduled && this.toWrite.length > 0) {
          this.flushScheduled = true;
          scheduleFlush(this);
        }
      },
      rethrow: rethrowLater,
    };
  }

  /** Sends the heartbeat PING; no reply within `pingInterval` closes the connection. */
  private heartbeat(pi: number): void {
    this.heartbeating = true;
    this.send(['PING'], { timeout: pi }).then(
      () => {
        this.heartbeating = false;
      },
      (e: Error) => {
        this.heartbeating = false;
        // An error reply (an ACL user without +ping) still proves the peer alive.
        if (e instanceof TimeoutError) {
          this.destroy(new ConnectionError(`${this.label} did not answer a heartbeat PING within pingInterval (${pi} ms); the connection was closed.`, { cause: e, address: this.address }));
        }
      },
    );
  }

  /**
   * Closes the socket now. Unwritten commands reject with `ConnectionError`, written ones
   * with `UncertainWriteError`; both carry `error` as their cause.
   */
  destroy(error?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closedError = error;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.socket.destroy();
    const label = this.label;
    const why = error ? `: ${clause(error.message)}` : '';
    for (const cmd of this.inflight.drain()) {
      if (cmd.state === SETTLED) continue;
      this.settle(cmd);
      cmd.reject(new UncertainWriteError(`${cmd.name} was sent to ${label} but the connection closed before its reply${why}; it may have executed.`, { cause: error, address: this.address }));
    }
    this.confirmations.closed(why, error);
    this.dropQueued((cmd) => new ConnectionError(`${cmd.name} was not sent: the connection to ${label} closed${why}.`, { cause: error, address: this.address }));
    if (!this.usable.signal.aborted) this.usable.abort(error ?? new ConnectionError(`Connection to ${this.label} was closed.`, { address: this.address }));
    this.emit('close', error);
    this.removeAllListeners('push');
  }

  /** Waits for every pending reply (bounded by `timeoutMs`), then closes. */
  async close(timeoutMs = 0): Promise<void> {
    if (this.isClosed) return;
    const until = Date.now() + timeoutMs;
    // Again while something is pending: a WAIT's reply can queue the next WAIT (durability).
    while (this.pending > 0 && timeoutMs > 0 && !this.isClosed && Date.now() < until) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        this.once('close', () => resolve());
        timer = setTimeout(resolve, Math.max(0, until - Date.now()));
      });
      clearTimeout(timer);
      this.drained = undefined;
    }
    this.destroy(undefined);
  }
}

/** Surfaces a user callback's exception as an uncaught error, outside the decoder. */
function rethrowLater(e: unknown): void {
  process.nextTick(() => {
    throw e;
  });
}

