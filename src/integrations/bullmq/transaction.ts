/**
 * BullMQ's `IRedisTransaction` over a pool batch: `multi()` is the pool's MULTI/EXEC on one
 * connection (in a cluster: on the master of the keys' one slot, which BullMQ's `{hash-tag}`
 * prefix guarantees), `pipeline()` the pool's pipeline (split per node in a cluster).
 */
import type { IRedisTransaction } from 'bullmq';
import type { Arg, Batch, BatchResult, Reply } from '../../index.js';
import { checkOptions, cursorReply, flatRecord, members, scriptArgs } from './replies.js';
import type { ScriptRegistry } from './types.js';

/** Each entry as ioredis gives it: `[error, null]` or `[null, value]`. */
export type ExecEntry = [Error | null, unknown];

export class BullMQTransaction implements IRedisTransaction {
  /** Applied to each entry's value, in order (ioredis shapes). */
  private readonly shapes: Array<((v: Reply) => unknown) | undefined> = [];

  /** @internal */
  constructor(
    private readonly batch: Batch<BatchResult | null>,
    private readonly scripts: ScriptRegistry,
  ) {}

  private add(command: string, args: Arg[], shape?: (v: Reply) => unknown): this {
    this.batch.call(command, ...args);
    this.shapes.push(shape);
    return this;
  }

  hgetall(key: string): this {
    this.batch.hgetall(key);
    this.shapes.push(undefined);
    return this;
  }

  hset(key: string, data: Record<string, string | number>): this {
    return this.add('HSET', [key, ...flatRecord('hset', data)]);
  }

  hscan(key: string, cursor: string | number, options?: { COUNT?: number }): this {
    checkOptions('hscan', options, ['COUNT']);
    return this.add('HSCAN', [key, String(cursor), ...(options?.COUNT !== undefined ? ['COUNT', options.COUNT] : [])], cursorReply);
  }

  smembers(key: string): this {
    return this.add('SMEMBERS', [key], members);
  }

  sscan(key: string, cursor: string | number, options?: { COUNT?: number }): this {
    checkOptions('sscan', options, ['COUNT']);
    return this.add('SSCAN', [key, String(cursor), ...(options?.COUNT !== undefined ? ['COUNT', options.COUNT] : [])], cursorReply);
  }

  zrange(key: string, start: number, end: number): this {
    return this.add('ZRANGE', [key, start, end], members);
  }

  lrange(key: string, start: number, end: number): this {
    return this.add('LRANGE', [key, start, end]);
  }

  llen(key: string): this {
    return this.add('LLEN', [key]);
  }

  /** With no keys nothing is queued (as ioredis's adapter does). */
  del(...keys: string[]): this {
    if (keys.length === 0) return this;
    return this.add('DEL', keys);
  }

  /**
   * A script defined with `defineCommand`, queued as EVAL with its source: a batch cannot
   * resend one entry after NOSCRIPT without reordering the others.
   */
  runCommand(name: string, args: unknown[]): this {
    const s = this.scripts.get(name);
    if (!s) throw new Error(`BullMQ: unknown command "${name}"`);
    this.batch.runScript(s.script, ...scriptArgs(args));
    this.shapes.push(undefined);
    return this;
  }

  /** `[[error, value], …]` in order, or null when a WATCHed key changed. */
  async exec(): Promise<ExecEntry[] | null> {
    const results = await this.batch.exec();
    if (results === null) return null;
    return results.map((r, i): ExecEntry => {
      if (r instanceof Error) return [r, null];
      const shape = this.shapes[i];
      return [null, shape ? shape(r) : r];
    });
  }
}
