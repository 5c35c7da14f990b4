/**
 * A stand-in for `Connection` in unit tests of the node pool's units (lanes, exclusive pool,
 * re-authentication, the node pool itself): it records what the pool does to it (commands,
 * AUTHs, retire, close, destroy) and lets the test decide when replies and logins complete.
 * It follows the real connection's contract where the pool relies on it: `ready` stays true
 * after `retire()`, `destroy()` ends written commands as UncertainWriteError and emits
 * `close`, `close(ms)` waits for the replies due (at most `ms`), then destroys.
 */
import { EventEmitter } from 'node:events';
import type { Connection } from '../../src/connection/connection.js';
import type { Credentials } from '../../src/connection/credentials.js';
import type { ResolvedConnectionOptions } from '../../src/connection/options.js';
import { ConnectionError, UncertainWriteError } from '../../src/errors.js';
import type { Connector } from '../../src/pool/node-pool.js';
import { formatAddress, type Arg, type NodeAddress } from '../../src/types.js';
import { deferred, type Deferred } from './deferred.js';


let nextId = 1;

export class FakeConnection extends EventEmitter {
  readonly id = nextId++;
  generation = 0;
  authEpoch = 0;
  dirty = false;
  lane = false;
  subscribedResp2 = false;
  isBlocked = false;
  relaxed = false;
  /** Commands sent and not answered yet, in order. */
  readonly inflight: Array<{ args: Arg[]; reply: Deferred<unknown> }> = [];
  /** Every command sent, in order. */
  readonly sent: Arg[][] = [];
  /** Credentials each AUTH carried, in order. */
  readonly auths: Array<Credentials | null> = [];
  /** When set, AUTH waits for it; else it succeeds at once. */
  authGate: Deferred<void> | undefined;
  retiredBy: Error | undefined;
  closeReason: Error | undefined;
  closing = false;
  private closed = false;

  constructor(readonly address: NodeAddress) {
    super();
  }

  get ready(): boolean {
    return !this.closed;
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  get pending(): number {
    return this.inflight.length;
  }

  /** A command: it waits until the test answers it with {@link answer}. */
  send(args: Arg[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new ConnectionError(`${String(args[0])} was not sent: closed`, { address: this.address }));
    if (this.retiredBy) return Promise.reject(new ConnectionError(`${String(args[0])} was not sent: ${this.retiredBy.message}`, { cause: this.retiredBy, address: this.address }));
    this.sent.push(args);
    const reply = deferred<unknown>();
    this.inflight.push({ args, reply });
    return reply.promise;
  }

  /** Answers the oldest command in flight. */
  answer(value: unknown = 'OK'): void {
    const c = this.inflight.shift();
    if (!c) throw new Error(`no command in flight on ${formatAddress(this.address)}`);
    c.reply.resolve(value);
    if (this.closing && this.inflight.length === 0) this.destroy();
  }

  async reauthenticate(creds: Credentials | null): Promise<void> {
    if (this.closed) throw new ConnectionError('AUTH was not sent: closed', { address: this.address });
    if (this.retiredBy) throw new ConnectionError(`AUTH was not sent: ${this.retiredBy.message}`, { address: this.address });
    this.auths.push(creds);
    this.sent.push(['AUTH']);
    if (this.authGate) await this.authGate.promise;
  }

  retire(reason: Error): void {
    this.retiredBy ??= reason;
  }

  async close(timeoutMs = 0): Promise<void> {
    this.closing = true;
    if (this.inflight.length === 0) {
      this.destroy();
      return;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.destroy();
        resolve();
      }, timeoutMs);
      this.once('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  destroy(error?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.closeReason = error;
    for (const c of this.inflight.splice(0)) {
      c.reply.reject(new UncertainWriteError(`${String(c.args[0])} was sent but the connection closed before its reply`, { cause: error, address: this.address }));
    }
    this.emit('close', error);
  }
}

/** A connector for NodePool that hands out FakeConnections, at once or when the test says. */
export class FakeNet {
  /** Every connection opened, in order. */
  readonly opened: FakeConnection[] = [];
  /** Connects waiting for the test (manual mode), in order. */
  readonly waiting: Array<{ target: NodeAddress; complete(): FakeConnection; fail(err?: Error): void }> = [];
  /** 'auto' opens at once; 'manual' waits for complete()/fail(); 'refuse' fails at once. */
  mode: 'auto' | 'manual' | 'refuse' = 'auto';
  /** Targets of every attempt, in order. */
  readonly attempts: NodeAddress[] = [];

  readonly connect: Connector = (target: NodeAddress, _o: ResolvedConnectionOptions, _h: Arg[][] | undefined, signal: AbortSignal) => {
    this.attempts.push({ ...target });
    const open = () => {
      const c = new FakeConnection({ ...target });
      this.opened.push(c);
      return c as unknown as Connection;
    };
    const refused = () => new ConnectionError(`connect ECONNREFUSED ${formatAddress(target)}`, { address: target });
    if (this.mode === 'auto') return Promise.resolve().then(open);
    if (this.mode === 'refuse') return Promise.reject(refused());
    const d = deferred<Connection>();
    signal.addEventListener('abort', () => d.reject(new ConnectionError('connect aborted', { address: target })), { once: true });
    this.waiting.push({
      target: { ...target },
      complete: () => {
        const c = open();
        d.resolve(c);
        return c as unknown as FakeConnection;
      },
      fail: (err) => d.reject(err ?? refused()),
    });
    return d.promise;
  };
}
