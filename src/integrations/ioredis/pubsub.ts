/**
 * Pub/sub of the ioredis facade: `subscribe`/`psubscribe` on the pool, messages re-emitted as
 * ioredis events (`message`, `messageBuffer`, `pmessage`, `pmessageBuffer`).
 */
import type { Listener, Subscription, SubscriptionOptions } from '../../index.js';

/** What the facade's pub/sub needs from the pool. */
export interface PubSubPool {
  subscribe(channels: string[], listener: Listener<Buffer>, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  psubscribe(patterns: string[], listener: Listener<Buffer>, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
}

/** Where the messages go: the handle, which is an EventEmitter. */
export interface PubSubSink {
  emit(event: string, ...args: unknown[]): boolean;
  listenerCount(event: string): number;
  /** A `message` listener threw. */
  listenerFailed(error: Error): void;
}

type Kind = 'channel' | 'pattern';

/**
 * The channels and patterns one handle listens to. Each `subscribe` call with new names opens
 * one pool subscription for them (the pool shares one subscriber connection per node among all
 * of them, and resubscribes after failovers); a name subscribed twice is held once, so a
 * message is emitted once per name, as on one ioredis connection.
 */
export class HandleSubscriptions {
  readonly #pool: PubSubPool;
  readonly #sink: PubSubSink;
  readonly #held: Record<Kind, Map<string, Promise<Subscription<Buffer>>>> = { channel: new Map(), pattern: new Map() };

  constructor(pool: PubSubPool, sink: PubSubSink) {
    this.#pool = pool;
    this.#sink = sink;
  }

  /** Channels plus patterns held: what ioredis resolves SUBSCRIBE/UNSUBSCRIBE with. */
  get count(): number {
    return this.#held.channel.size + this.#held.pattern.size;
  }

  /**
   * Subscribes the names this handle does not hold yet; resolves once every name is confirmed,
   * with `release`, which the caller calls once it has told its caller (the callback on a later
   * tick). Until then messages of the new names are held back: with ioredis a subscribe callback
   * runs before any message of its channels, and libraries count on it (graphql-redis-
   * subscriptions registers its listener in that callback and drops messages that come first).
   */
  async add(kind: Kind, names: string[]): Promise<{ count: number; release: () => void }> {
    const held = this.#held[kind];
    const fresh = [...new Set(names.filter((n) => !held.has(n)))];
    const waits: Array<Promise<unknown>> = names.filter((n) => !fresh.includes(n)).map((n) => held.get(n)!);
    let open = false;
    const queue: Array<() => void> = [];
    const release = (): void => {
      open = true;
      for (const deliver of queue) deliver();
      queue.length = 0;
    };
    if (fresh.length > 0) {
      const deliver = kind === 'channel' ? this.#onMessage : this.#onPMessage;
      const listener = (message: Buffer, channel: string, pattern?: string): void => {
        if (open) deliver(message, channel, pattern);
        else queue.push(() => deliver(message, channel, pattern));
      };
      const opening = kind === 'channel'
        ? this.#pool.subscribe(fresh, listener, { returnBuffers: true })
        : this.#pool.psubscribe(fresh, listener, { returnBuffers: true });
      for (const n of fresh) held.set(n, opening);
      opening.then(
        (sub) => sub.on('error', (e) => this.#sink.listenerFailed(e)),
        () => {
          for (const n of fresh) if (held.get(n) === opening) held.delete(n);
        },
      );
      waits.push(opening);
    }
    await Promise.all(waits);
    return { count: this.count, release };
  }

  /** Unsubscribes `names` (every name of that kind when empty); names not held are ignored, as Redis ignores them. */
  async remove(kind: Kind, names: string[]): Promise<number> {
    const held = this.#held[kind];
    const gone = names.length === 0 ? [...held.keys()] : names.filter((n) => held.has(n));
    const bySub = new Map<Promise<Subscription<Buffer>>, string[]>();
    for (const n of gone) {
      const p = held.get(n)!;
      held.delete(n);
      const list = bySub.get(p);
      if (list) list.push(n);
      else bySub.set(p, [n]);
    }
    await Promise.all([...bySub].map(async ([p, list]) => (await p).unsubscribe(...list)));
    return this.count;
  }

  /** Ends every subscription of this handle (quit/disconnect). */
  async closeAll(): Promise<void> {
    const subs = new Set([...this.#held.channel.values(), ...this.#held.pattern.values()]);
    this.#held.channel.clear();
    this.#held.pattern.clear();
    await Promise.all([...subs].map((p) => p.then((s) => s.close(), () => undefined)));
  }

  // ioredis's events: `message` (channel, text), `messageBuffer` (channel Buffer, payload Buffer),
  // `pmessage` (pattern, channel, text), `pmessageBuffer` (pattern, channel Buffer, payload Buffer).
  readonly #onMessage = (message: Buffer, channel: string): void => {
    const sink = this.#sink;
    if (sink.listenerCount('message') > 0) sink.emit('message', channel, message.toString());
    if (sink.listenerCount('messageBuffer') > 0) sink.emit('messageBuffer', Buffer.from(channel), message);
  };

  readonly #onPMessage = (message: Buffer, channel: string, pattern?: string): void => {
    const sink = this.#sink;
    if (sink.listenerCount('pmessage') > 0) sink.emit('pmessage', pattern, channel, message.toString());
    if (sink.listenerCount('pmessageBuffer') > 0) sink.emit('pmessageBuffer', pattern, Buffer.from(channel), message);
  };
}
