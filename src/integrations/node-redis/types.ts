/** Shapes and errors of the node-redis facade, shared by its handle and its `multi()`. */
import { PoolClosedError, type Arg, type ClusterPool, type SentinelPool, type StandalonePool } from '../../index.js';

/** Any pool of this package. */
export type AnyPool = StandalonePool | SentinelPool | ClusterPool;

/** A command on a handle that was closed (`quit`, `close`, `destroy`, `disconnect`) while its pool is still open; `connect()` opens it again. */
export class ClientClosedError extends Error {
  /** `'ClientClosedError'`, as node-redis names it. */
  override name = 'ClientClosedError';
  constructor() {
    super('The client is closed (quit, close, destroy or disconnect was called on this asNodeRedis handle; the pool is still open). Call connect() to use it again, or duplicate() another handle.');
  }
}

/** A `multi().exec()` in which some commands failed: every reply, and which ones are errors (node-redis's shape). */
export class MultiErrorReply extends Error {
  /** `'MultiErrorReply'`, as node-redis names it. */
  override name = 'MultiErrorReply';
  /** One entry per queued command: its reply, or its error. */
  readonly replies: unknown[];
  /** The positions in `replies` that are errors. */
  readonly errorIndexes: number[];
  constructor(replies: unknown[], errorIndexes: number[]) {
    super(`${errorIndexes.length} commands failed, see .replies and .errorIndexes for more information`, { cause: replies[errorIndexes[0]!] });
    this.replies = replies;
    this.errorIndexes = errorIndexes;
  }
}

/** A pool, view or batch read as its helpers by name (a translation names the helper). */
export type Runner = Record<string, (...a: unknown[]) => unknown>;

/** True once `pool.close()` was called (the pool's calls already reject then; this serves calls that reach no command). */
export function poolClosed(pool: AnyPool): boolean {
  return (pool.stats() as { closed?: boolean }).closed === true;
}

/** Why a call on a closed handle fails: PoolClosedError once the pool is closed, ClientClosedError while only the handle is. */
export function closedError(pool: AnyPool): Error {
  return poolClosed(pool) ? new PoolClosedError() : new ClientClosedError();
}

/** SET options as node-redis v5 takes them (and the older flat keys). */
export interface NodeRedisSetOptions {
  /** Expiry: `{ type: 'EX' | 'PX' | 'EXAT' | 'PXAT', value }`, `{ type: 'KEEPTTL' }` or `'KEEPTTL'`. */
  expiration?: { type: 'EX' | 'PX' | 'EXAT' | 'PXAT'; value: number } | { type: 'KEEPTTL' } | 'KEEPTTL';
  /** Set only if the key does not exist (NX) or exists (XX). */
  condition?: 'NX' | 'XX';
  /** Seconds (older form of `expiration`). */
  EX?: number;
  /** Milliseconds (older form of `expiration`). */
  PX?: number;
  /** Unix time in seconds (older form of `expiration`). */
  EXAT?: number;
  /** Unix time in milliseconds (older form of `expiration`). */
  PXAT?: number;
  /** Keep the key's time to live (older form of `expiration`). */
  KEEPTTL?: boolean;
  /** Only if the key does not exist (older form of `condition`). */
  NX?: boolean;
  /** Only if the key exists (older form of `condition`). */
  XX?: boolean;
  /** Resolve the old value. */
  GET?: boolean;
}

/** XADD options as node-redis v5 takes them. */
export interface NodeRedisXAddOptions {
  /** Trim the stream while adding. */
  TRIM?: {
    /** By length or by lowest ID. */
    strategy: 'MAXLEN' | 'MINID';
    /** Exact ('=', the default) or approximate ('~'). */
    strategyModifier?: '=' | '~';
    /** The length, or the lowest ID to keep. */
    threshold: number | string;
    /** With '~': evict at most this many entries. */
    limit?: number;
  };
}

/** One stream to read and the ID to read after. */
export interface NodeRedisXReadStream {
  /** The stream's key. */
  key: Arg;
  /** Read entries after this ID (`'$'`: only new ones). */
  id: Arg;
}

/** EVAL/EVALSHA options as node-redis takes them. */
export interface NodeRedisEvalOptions {
  /** KEYS[…] of the script. */
  keys?: Arg | Arg[];
  /** ARGV[…] of the script. */
  arguments?: Arg | Arg[];
}

/** SCAN options as node-redis takes them. */
export interface NodeRedisScanOptions {
  /** A glob-style pattern. */
  MATCH?: string;
  /** A hint of how many keys one step looks at; also the most keys `scanIterator` yields at a time. */
  COUNT?: number;
  /** Only keys of this type. */
  TYPE?: string;
}

