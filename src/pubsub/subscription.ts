import { EventEmitter } from 'eventemitter3';
import { PoolClosedError, SlowConsumerError } from '../errors.js';
import type { ResolvedSubscriptionOptions, SubscriptionKind } from './frames.js';

/** One message as the async iterator yields it. */
export interface PubSubMessage<M extends string | Buffer = string | Buffer> {
  /** The channel it was published to. */
  channel: string;
  /** The pattern that matched, for `psubscribe`. */
  pattern?: string;
  /** The payload: a string, or a Buffer with `returnBuffers: true`. */
  message: M;
}

/** Called for every message: `(message, channel, pattern?)`. */
export type Listener<M extends string | Buffer = string | Buffer> = (message: M, channel: string, pattern?: string) => void;

/** What a {@link Subscription} reports. */
export interface SubscriptionEvents {
  /**
   * The names were subscribed again after their subscription stopped being trustworthy (a
   * dropped connection, a failover, a slot that moved). Redis pub/sub is at-most-once:
   * messages published during the `gapMs` before this event are lost.
   */
  resubscribed: [
    info: {
      /** The channels (or patterns) subscribed again. */
      channels: string[];
      /** What made the old subscription untrustworthy. */
      reason: string;
      /** Milliseconds without a subscription: messages published then were not received. */
      gapMs: number;
    },
  ];
  /** The async iterator's buffer overflowed and `count` of the oldest messages were dropped. */
  dropped: [
    info: {
      /** Messages dropped. */
      count: number;
    },
  ];
  /** A listener threw, or resubscribing keeps failing (it is retried with the reconnect backoff). */
  error: [error: Error];
}

/** What a subscription needs from the hub that serves it. */
export interface SubscriptionHost {
  remove(sub: Subscription, names: readonly string[]): Promise<void>;
}

/**
 * Messages for some channels, patterns or sharded channels, delivered to a listener and/or an
 * async iterator, for as long as it is open; the pool resubscribes it after every fault.
 *
 * `for await (const m of sub)` holds at most `highWaterMark` messages for a consumer that is
 * behind; leaving the loop (break, return, throw) closes the subscription.
 */
export class Subscription<M extends string | Buffer = string | Buffer> extends EventEmitter<SubscriptionEvents> implements AsyncIterable<PubSubMessage<M>> {
  /** Whether this subscription listens to channels, patterns or sharded channels. */
  readonly kind: SubscriptionKind;
  readonly #names: Set<string>;
  readonly #host: SubscriptionHost;
  readonly #listener: ((message: string | Buffer, channel: string, pattern?: string) => void) | undefined;
  /** @internal */
  readonly options: ResolvedSubscriptionOptions;
  #closed = false;
  #iterating = false;
  #buffer: PubSubMessage[] = [];
  #head = 0;
  #waiting: ((r: IteratorResult<PubSubMessage>) => void) | undefined;
  #failWaiting: ((e: Error) => void) | undefined;
  #failure: Error | undefined;

  /** @internal */
  constructor(host: SubscriptionHost, kind: SubscriptionKind, names: readonly string[], listener: Listener | undefined, options: ResolvedSubscriptionOptions) {
    super();
    this.#host = host;
    this.kind = kind;
    this.#names = new Set(names);
    this.#listener = listener;
    this.options = options;
  }

  /** The channels (or patterns) this subscription currently listens to. */
  get channels(): string[] {
    return [...this.#names];
  }

  /** True once closed (by close(), by leaving a `for await` loop, or by the pool closing). */
  get closed(): boolean {
    return this.#closed;
  }

  /** @internal Delivers one message; the hub has already checked it belongs here. */
  deliver(channel: string, pattern: string | undefined, payload: string | Buffer): void {
    if (this.#closed) return;
    const message = this.options.returnBuffers
      ? (typeof payload === 'string' ? Buffer.from(payload) : payload)
      : (typeof payload === 'string' ? payload : payload.toString());
    if (this.#listener !== undefined) {
      try {
        this.#listener(message, channel, pattern);
      } catch (e) {
        // One failing listener must not stop delivery to the others, nor this one's next message.
        this.emit('error', e instanceof Error ? e : new Error(String(e)));
      }
    }
    if (!this.#iterating) return;
    const m: PubSubMessage = pattern === undefined ? { channel, message } : { channel, pattern, message };
    const w = this.#waiting;
    if (w !== undefined) {
      this.#waiting = undefined;
      this.#failWaiting = undefined;
      w({ value: m, done: false });
      return;
    }
    if (this.#buffer.length - this.#head >= this.options.highWaterMark) {
      if (this.options.overflow === 'error') {
        this.#fail(new SlowConsumerError(`The subscription to ${this.channels.join(', ')} held ${this.options.highWaterMark} unread messages (highWaterMark) and was closed (overflow: 'error'); read faster, raise highWaterMark or use overflow: 'drop-oldest'.`));
        return;
      }
      this.#head++;
      this.emit('dropped', { count: 1 });
    }
    this.#buffer.push(m);
    // Compact now and then instead of shifting each time.
    if (this.#head > 1024 && this.#head * 2 > this.#buffer.length) {
      this.#buffer = this.#buffer.slice(this.#head);
      this.#head = 0;
    }
  }

  #fail(e: Error): void {
    this.#failure = e;
    this.#buffer = [];
    this.#head = 0;
    const f = this.#failWaiting;
    this.#waiting = undefined;
    this.#failWaiting = undefined;
    f?.(e);
    void this.close();
  }

  /** @internal The names this subscription holds (the hub's view). */
  has(name: string): boolean {
    return this.#names.has(name);
  }

  /**
   * Stops listening to some names (all of them when called without arguments, which closes the
   * subscription). Resolves once the servers confirmed.
   */
  async unsubscribe(...names: string[]): Promise<void> {
    if (this.#closed) throw new PoolClosedError('This subscription is closed; subscribe again for new messages.');
    const gone = new Set(names.length === 0 ? this.#names : names.filter((n) => this.#names.has(n)));
    // The last names go through close(), which hands the hub every name still held: removed
    // here first, they would stay subscribed on the server with no subscription to deliver to.
    if (gone.size === this.#names.size) {
      await this.close();
      return;
    }
    for (const n of gone) this.#names.delete(n);
    await this.#host.remove(this, [...gone]);
  }

  /** Stops every name and ends the iterator (messages already held are still read). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const names = [...this.#names];
    const w = this.#waiting;
    this.#waiting = undefined;
    this.#failWaiting = undefined;
    w?.({ value: undefined, done: true });
    await this.#host.remove(this, names);
  }

  /** @internal The pool closed: end without talking to servers. */
  end(): void {
    this.#closed = true;
    const w = this.#waiting;
    this.#waiting = undefined;
    this.#failWaiting = undefined;
    w?.({ value: undefined, done: true });
  }

  /** Same as {@link close}, for `await using sub = …` (TypeScript, or Node 24+). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Messages as they arrive; leaving the loop closes the subscription. */
  [Symbol.asyncIterator](): AsyncIterator<PubSubMessage<M>> {
    this.#iterating = true;
    // Its messages are Buffers exactly when this subscription asked for them (M); the fields
    // stay untyped so that a Subscription<string> is a Subscription.
    return this.#iterator() as AsyncIterator<PubSubMessage<M>>;
  }

  #iterator(): AsyncIterator<PubSubMessage> {
    return {
      next: () => {
        if (this.#head < this.#buffer.length) {
          const value = this.#buffer[this.#head]!;
          this.#buffer[this.#head++] = undefined as unknown as PubSubMessage;
          if (this.#head === this.#buffer.length) {
            this.#buffer = [];
            this.#head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.#failure !== undefined) {
          const e = this.#failure;
          this.#failure = undefined;
          return Promise.reject(e);
        }
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise<IteratorResult<PubSubMessage>>((resolve, reject) => {
          this.#waiting = resolve;
          this.#failWaiting = reject;
        });
      },
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }
}
