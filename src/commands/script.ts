import { createHash } from 'node:crypto';
import { RedisError } from '../errors.js';
import type { Arg, Reply } from '../types.js';
import { describe, isArg } from './helper-args.js';
import type { CommandSpec } from './helpers.js';

/** Options of `pool.script(source, options)`. */
export interface ScriptOptions {
  /** How many of the call's arguments are keys (they come first); the rest are ARGV. */
  keys: number;
  /**
   * The script only reads (it must be declared so: `#!lua flags=no-writes` on Redis 7, or the
   * server refuses EVALSHA_RO). Sent as EVALSHA_RO / EVAL_RO, which a cluster may send to a
   * replica with `readFrom`. Default false.
   */
  readOnly?: boolean;
}

/**
 * A Lua script bound to a pool, a view or a lease: call it with its keys, then its arguments.
 * It sends EVALSHA, and when the server answers NOSCRIPT (a restarted server, a promoted
 * replica, SCRIPT FLUSH: the script cache is empty) EVAL with the source, which runs the script
 * and caches it again. NOSCRIPT means the script did not run, so the second send cannot run
 * it twice. In a cluster the call is routed by its keys (all in one slot, or CrossSlotError).
 */
export interface Script {
  (...keysAndArgs: Arg[]): Promise<Reply>;
  /** SHA1 of the source, computed locally. */
  readonly sha: string;
  /** The Lua source, sent by EVAL after NOSCRIPT and by `batch.runScript()`. */
  readonly source: string;
  /** How many leading arguments are keys. */
  readonly keys: number;
  /** Sent as EVALSHA_RO / EVAL_RO. */
  readonly readOnly: boolean;
}

/** `script()`, on pools, views and leases. */
export interface Scripting {
  /**
   * A Lua script as a function: `const s = pool.script(lua, { keys: 1 }); await s(key, arg)`.
   * Each call sends EVALSHA (SHA1 computed locally) and, when the server has lost the script
   * (NOSCRIPT: a restart, a failover to a replica, SCRIPT FLUSH), EVAL with the source, within
   * the same deadline: NOSCRIPT means it did not run, so it never runs twice. In a cluster it
   * is routed by its keys (which must share a slot). In a pipeline or transaction, queue it
   * with `batch.runScript(s, …)`, which sends EVAL. The ioredis `defineCommand`.
   */
  script(source: string, options: ScriptOptions): Script;
}

/** What a bound script needs: its source, SHA1 and key count, and the specs of both sends. */
export class ScriptDefinition {
  readonly sha: string;

  constructor(
    readonly source: string,
    readonly keys: number,
    readonly readOnly: boolean,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Validates a call's arguments: at least `keys` of them, each sendable. */
  check(args: readonly unknown[]): Arg[] {
    if (args.length < this.keys) throw new TypeError(`This script takes ${this.keys} key${this.keys === 1 ? '' : 's'} first, then its arguments; it was called with ${args.length} argument${args.length === 1 ? '' : 's'}.`);
    for (let i = 0; i < args.length; i++) {
      if (!isArg(args[i])) throw new TypeError(`Script argument ${i + 1} must be a string, Buffer, number or bigint (got ${describe(args[i])}); pass keys, then arguments, one by one.`);
    }
    return args as Arg[];
  }

  /** EVALSHA[_RO] sha numkeys …: what a call sends first. */
  evalsha(args: readonly Arg[], deadline?: number): CommandSpec {
    return { args: [this.readOnly ? 'EVALSHA_RO' : 'EVALSHA', this.sha, this.keys, ...args], deadline };
  }

  /** EVAL[_RO] source numkeys …: the fallback after NOSCRIPT, and what batches send. */
  eval(args: readonly Arg[], deadline?: number): CommandSpec {
    return { args: [this.readOnly ? 'EVAL_RO' : 'EVAL', this.source, this.keys, ...args], deadline };
  }
}

/** Validates `script(source, options)`. */
export function defineScript(source: unknown, options: unknown): ScriptDefinition {
  if (typeof source !== 'string' || source === '') throw new TypeError('script(source, { keys }) needs the Lua source as a non-empty string.');
  if (typeof options !== 'object' || options === null) throw new TypeError('script(source, { keys }) needs options with keys: how many of its arguments are keys.');
  const o = options as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'keys' && k !== 'readOnly') throw new TypeError(`Unknown option script.${k}; known options are: keys, readOnly.`);
  if (typeof o.keys !== 'number' || !Number.isInteger(o.keys) || o.keys < 0) throw new TypeError(`Option script.keys must be an integer >= 0 (got ${describe(o.keys)}).`);
  if (o.readOnly !== undefined && typeof o.readOnly !== 'boolean') throw new TypeError(`Option script.readOnly must be a boolean (got ${typeof o.readOnly}).`);
  return new ScriptDefinition(source, o.keys, o.readOnly === true);
}

/** Whether a call failed because the server does not have the script cached (so it did not run). */
export function isNoScript(err: unknown): boolean {
  return err instanceof RedisError && err.code === 'NOSCRIPT';
}

/**
 * The callable of a definition: `run` sends a spec (a pool's, view's or lease's runSpec) and
 * `deadline` gives the call's deadline, shared by the EVALSHA and its EVAL fallback.
 */
export function bindScript(def: ScriptDefinition, run: (spec: CommandSpec) => Promise<unknown>, deadline: () => number | undefined): Script {
  const fn = (...a: unknown[]): Promise<Reply> => {
    let args: Arg[];
    try {
      args = def.check(a);
    } catch (e) {
      return Promise.reject(e);
    }
    const until = deadline();
    return run(def.evalsha(args, until)).catch((err: unknown) => (isNoScript(err) ? run(def.eval(args, until)) : Promise.reject(err))) as Promise<Reply>;
  };
  return Object.defineProperties(fn, {
    sha: { value: def.sha, enumerable: true },
    source: { value: def.source, enumerable: true },
    keys: { value: def.keys, enumerable: true },
    readOnly: { value: def.readOnly, enumerable: true },
  }) as unknown as Script;
}
