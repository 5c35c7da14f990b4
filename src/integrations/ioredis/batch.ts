/**
 * `pipeline()` and `multi()` of the ioredis facade: chainable command methods over a pool
 * batch, and `exec()` resolving ioredis's `[err, value]` tuples.
 */
import type { Batch, BatchResult, Reply } from '../../index.js';
import type { ScriptCall } from './scripts.js';
import { COMMAND_NAMES, flatten, shape, splitCallback, withCallback, type IoredisArgument, type IoredisCallback, type IoredisCommandName } from './commands.js';

/** One entry of what `exec()` resolves to: `[null, value]` or `[error, undefined]`, as ioredis gives them. */
export type IoredisExecEntry = [error: Error | null, value: unknown];

/** A command queued on a pipeline or transaction; returns the batch for chaining. */
export type IoredisBatchCommand = (...args: Array<IoredisArgument | IoredisCallback>) => IoredisPipeline;

/** What the facade's pipeline and transaction need from the handle that made them. */
export interface BatchOwner {
  /** Rejects (PoolClosedError, or the handle's own "closed" error) when the handle cannot send. */
  refusal(): Promise<never> | undefined;
  /** The scripts defined with `defineCommand`, by name. */
  readonly scripts: ReadonlyMap<string, ScriptCall>;
}

const QUEUE = Symbol('queue');

/**
 * A pipeline (`client.pipeline()`) or transaction (`client.multi()`) of the ioredis facade.
 * Command methods queue and return the batch; `exec()` sends everything in one write and
 * resolves one `[err, value]` tuple per command. A transaction whose WATCH aborted it resolves
 * null; one refused as a whole (EXECABORT, a cross-slot transaction) rejects.
 */
export class IoredisPipeline {
  readonly #batch: Batch<BatchResult | null>;
  readonly #owner: BatchOwner;
  readonly #names: string[] = [];
  readonly #callbacks: Array<IoredisCallback | undefined> = [];

  /** @internal */
  constructor(batch: Batch<BatchResult | null>, owner: BatchOwner, commands: unknown) {
    this.#batch = batch;
    this.#owner = owner;
    for (const [name, def] of owner.scripts) {
      Object.defineProperty(this, name, {
        value: (...a: unknown[]) => {
          const cb = splitCallback(a);
          const { script, args } = def(flatten(name, a));
          this.#batch.runScript(script, ...args);
          return this.#push(name, cb);
        },
        configurable: true,
        writable: true,
      });
    }
    if (commands === undefined) return;
    if (!Array.isArray(commands)) throw new TypeError(`asIoredis: pipeline(commands)/multi(commands) takes an array of [command, ...args] arrays (got ${typeof commands}).`);
    for (const c of commands) {
      if (!Array.isArray(c) || typeof c[0] !== 'string') throw new TypeError('asIoredis: pipeline(commands)/multi(commands): each entry must be [command, ...args].');
      const method = (this as unknown as Record<string, unknown>)[c[0]];
      if (typeof method !== 'function' || c[0] === 'exec') throw new TypeError(`asIoredis: pipeline(commands)/multi(commands): ${c[0]} is not a command of the facade; queue it as ['call', '${c[0]}', ...args].`);
      (method as (...a: unknown[]) => unknown).apply(this, c.slice(1));
    }
  }

  /** Number of queued commands. */
  get length(): number {
    return this.#names.length;
  }

  /** Queues any command: `pipeline.call('HINCRBY', key, field, 1)`. */
  call(command: string, ...args: Array<IoredisArgument | IoredisCallback>): this {
    if (typeof command !== 'string' || command === '') throw new TypeError('asIoredis: pipeline.call(command, ...args) needs the command name as a string.');
    const cb = splitCallback(args);
    const name = command.toLowerCase();
    this.#batch.call(command, ...flatten(name, args));
    return this.#push(name, cb);
  }

  /** @internal */
  [QUEUE](name: string, args: unknown[]): this {
    const cb = splitCallback(args);
    this.#batch.call(name, ...flatten(name, args));
    return this.#push(name, cb);
  }

  #push(name: string, cb: IoredisCallback | undefined): this {
    this.#names.push(name);
    this.#callbacks.push(cb);
    return this;
  }

  /**
   * Sends the queued commands. Resolves to `[[err, value], …]` in order (`null` when a WATCH
   * aborted a transaction); a command's own error is its entry, not a rejection. Per-command
   * callbacks and `callback` are called on a later tick. A non-function argument is ignored,
   * as ioredis ignores it (rate-limiter-flexible calls `exec(true)`).
   */
  exec(callback?: IoredisCallback<IoredisExecEntry[] | null> | boolean): Promise<IoredisExecEntry[] | null> {
    if (callback !== undefined && typeof callback !== 'function' && typeof callback !== 'boolean') {
      return Promise.reject(new TypeError(`asIoredis: exec() takes an optional callback (got ${typeof callback}).`));
    }
    const refused = this.#owner.refusal();
    const p = refused ?? this.#batch.exec().then((results) => {
      if (results === null) return null;
      return results.map((r, i): IoredisExecEntry => (r instanceof Error ? [r, undefined] : [null, shape(this.#names[i]!, r as Reply)]));
    });
    const callbacks = this.#callbacks;
    if (callbacks.some((c) => c !== undefined)) {
      p.then(
        (entries) => {
          for (let i = 0; i < callbacks.length; i++) {
            const cb = callbacks[i];
            if (cb === undefined) continue;
            const entry = entries?.[i];
            if (entry === undefined) setImmediate(cb, null, null);
            else if (entry[0] !== null) setImmediate(cb, entry[0]);
            else setImmediate(cb, null, entry[1]);
          }
        },
        (e: unknown) => {
          const err = e instanceof Error ? e : new Error(String(e));
          for (const cb of callbacks) if (cb !== undefined) setImmediate(cb, err);
        },
      );
    }
    return withCallback(p, typeof callback === 'function' ? callback : undefined);
  }
}

/** Chainable command methods of a pipeline or transaction, one per facade command. */
export type IoredisBatchCommands = { [K in IoredisCommandName]: IoredisBatchCommand };
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface IoredisPipeline extends IoredisBatchCommands {}

for (const name of COMMAND_NAMES) {
  Object.defineProperty(IoredisPipeline.prototype, name, {
    value(this: IoredisPipeline, ...args: unknown[]) {
      return this[QUEUE](name, args);
    },
    configurable: true,
    writable: true,
  });
}
