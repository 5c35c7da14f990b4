/** `multi()` of the node-redis facade: camelCase commands queued, then MULTI/EXEC or a pipeline. */
import type { Arg, Batch, BatchResult } from '../../index.js';
import { COMMANDS, FACADE, rawCommand, type Step } from './commands.js';
import { closedError, MultiErrorReply, type AnyPool, type NodeRedisEvalOptions, type NodeRedisSetOptions, type NodeRedisXAddOptions, type Runner } from './types.js';

/** `multi()` of a `NodeRedisClient`: queue camelCase commands, then `exec()`. */
export class NodeRedisMulti {
  readonly #pool: AnyPool;
  readonly #isOpen: () => boolean;
  readonly #steps: Step[] = [];

  /** @internal */
  constructor(pool: AnyPool, isOpen: () => boolean) {
    this.#pool = pool;
    this.#isOpen = isOpen;
  }

  #queue(make: (...a: never[]) => Step, a: unknown[]): this {
    this.#steps.push((make as (...x: unknown[]) => Step)(...a));
    return this;
  }

  /** Queues any command: `addCommand(['SET', key, value])`. */
  addCommand(args: readonly Arg[]): this {
    this.#steps.push({ helper: 'call', args: rawCommand('addCommand', args) });
    return this;
  }

  /** Queues GET. */
  get(key: Arg): this {
    return this.#queue(COMMANDS.get, [key]);
  }

  /** Queues SET (the options of `NodeRedisClient.set`). */
  set(key: Arg, value: Arg, options?: NodeRedisSetOptions): this {
    return this.#queue(COMMANDS.set, [key, value, options]);
  }

  /** Queues MGET. */
  mGet(keys: Arg | Arg[]): this {
    return this.#queue(COMMANDS.mGet, [keys]);
  }

  /** Queues DEL. */
  del(keys: Arg | Arg[]): this {
    return this.#queue(COMMANDS.del, [keys]);
  }

  /** Queues UNLINK. */
  unlink(keys: Arg | Arg[]): this {
    return this.#queue(COMMANDS.unlink, [keys]);
  }

  /** Queues EXISTS. */
  exists(keys: Arg | Arg[]): this {
    return this.#queue(COMMANDS.exists, [keys]);
  }

  /** Queues EXPIRE. */
  expire(key: Arg, seconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): this {
    return this.#queue(COMMANDS.expire, [key, seconds, mode]);
  }

  /** Queues PEXPIRE. */
  pExpire(key: Arg, milliseconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): this {
    return this.#queue(COMMANDS.pExpire, [key, milliseconds, mode]);
  }

  /** Queues TTL. */
  ttl(key: Arg): this {
    return this.#queue(COMMANDS.ttl, [key]);
  }

  /** Queues PTTL. */
  pTTL(key: Arg): this {
    return this.#queue(COMMANDS.pTTL, [key]);
  }

  /** Queues INCRBY. */
  incrBy(key: Arg, increment: number): this {
    return this.#queue(COMMANDS.incrBy, [key, increment]);
  }

  /** Queues FLUSHDB. */
  flushDb(mode?: 'ASYNC' | 'SYNC'): this {
    return this.#queue(COMMANDS.flushDb, [mode]);
  }

  /** Queues XADD (the options of `NodeRedisClient.xAdd`). */
  xAdd(key: Arg, id: Arg, message: Record<string, Arg>, options?: NodeRedisXAddOptions): this {
    return this.#queue(COMMANDS.xAdd, [key, id, message, options]);
  }

  /** Queues XRANGE. */
  xRange(key: Arg, start: Arg, end: Arg, options?: { COUNT?: number }): this {
    return this.#queue(COMMANDS.xRange, [key, start, end, options]);
  }

  /** Queues EVAL with `{ keys, arguments }`. */
  eval(script: string, options?: NodeRedisEvalOptions): this {
    return this.#queue(COMMANDS.eval, [script, options]);
  }

  /** Queues EVALSHA with `{ keys, arguments }`. */
  evalSha(sha1: string, options?: NodeRedisEvalOptions): this {
    return this.#queue(COMMANDS.evalSha, [sha1, options]);
  }

  /** Queues PUBLISH. */
  publish(channel: Arg, message: Arg): this {
    return this.#queue(COMMANDS.publish, [channel, message]);
  }

  /** Queues SPUBLISH. */
  sPublish(channel: Arg, message: Arg): this {
    return this.#queue(COMMANDS.sPublish, [channel, message]);
  }

  /**
   * Runs the queue as MULTI/EXEC on one connection (one slot on a ClusterPool), or with
   * `execAsPipeline` true as a pipeline. Resolves to the replies in order; rejects with
   * {@link MultiErrorReply} when any command failed.
   */
  async exec(execAsPipeline = false): Promise<unknown[]> {
    if (!this.#isOpen()) throw closedError(this.#pool);
    if (execAsPipeline && this.#steps.length === 0) return [];
    const batch = (execAsPipeline ? this.#pool.pipeline() : this.#pool.multi()) as unknown as Runner & Batch<BatchResult | null>;
    for (const s of this.#steps) batch[s.helper]!(...s.args);
    const results = await batch.exec();
    if (results === null) throw new Error(`${FACADE}: the transaction was aborted by the server (EXEC answered null).`);
    const errorIndexes: number[] = [];
    const replies = results.map((r, i) => {
      if (r instanceof Error) {
        errorIndexes.push(i);
        return r;
      }
      const post = this.#steps[i]!.post;
      return post ? post(r) : r;
    });
    if (errorIndexes.length > 0) throw new MultiErrorReply(replies, errorIndexes);
    return replies;
  }

  /** Same as `exec(true)`. */
  execAsPipeline(): Promise<unknown[]> {
    return this.exec(true);
  }
}

