/**
 * What a command is, worked out once: read-only or a write, blocking (and where its timeout
 * is), what it does to the connection it runs on, its part in a transaction, what it means to
 * the client-side cache, and where its keys are. Everything that used to re-parse a command's
 * name (the surface, batches, leases, retries, durability, the cache, the key prefix, the
 * cluster router, the connection's MULTI tracking) reads these instead.
 *
 * Traits are memoised per command name as the caller spells it (and per subcommand of a
 * container command such as CLIENT or OBJECT), so a call costs one Map lookup. They are worked
 * out where a call enters (the surface's runSpec, a batch's queueSpec, a lease) and travel
 * with it: `ResolvedCall.traits` for one command, `ResolvedCall.batch` for a batch's commands.
 * Key positions depend on the arguments and are found per call ({@link keyPositions}); the
 * slot stays the cluster's business.
 */
import type { Arg } from '../types.js';
import { CommandRegistry, infoKeyPositions, movableKeys, type CommandInfo, type KeyExtractor } from './command-table.js';

/** How a command must be sent: over the shared lane, on an exclusive connection, or not through `call()` at all. */
export type CommandKind = 'plain' | 'blocking' | 'subscribe' | 'connection-state';

/**
 * What a command does to the connection it runs on (see {@link CONNECTION_STATE}):
 * `watch`/`unwatch` (a lease undoes a WATCH before reuse), `multi` (opens a transaction), `end`
 * (EXEC, DISCARD: end the transaction and every WATCH), `reset` (RESET: ends the transaction
 * and everything else) and `other` (the connection is unfit for another caller afterwards).
 */
export type StateEffect = 'watch' | 'unwatch' | 'multi' | 'end' | 'reset' | 'other';

/** A command's part in MULTI/EXEC as the connection tracks it: MULTI opens, EXEC/DISCARD/RESET close. */
export type TransactionRole = 'multi' | 'end';

/**
 * Where a blocking command's timeout is: the last argument in seconds (BLPOP) or in ms (WAIT,
 * WAITAOF), the first argument in seconds (BLMPOP, BZMPOP), or the value of a BLOCK option in
 * ms (XREAD, XREADGROUP: they block only with it).
 */
export type BlockRule = 'last-s' | 'last-ms' | 'first-s' | 'option-ms';

/** What a command means to the client-side cache: a cacheable read of one key, MGET, or a write that drops its keys' entries. */
export type CacheRole = 'read' | 'mget' | 'write';

/** A command's traits; see the module. Frozen and shared: never change one. */
export interface CommandTraits {
  /** Upper-case name, with the subcommand of a container command (`GET`, `CLIENT SETNAME`, `OBJECT ENCODING`). */
  readonly name: string;
  /** Lower-case command name without the subcommand (`get`, `client`): cache entry ids, cluster plans. */
  readonly lower: string;
  /** The command table's entry (of the subcommand when there is one); undefined for a command it does not know. */
  readonly info: CommandInfo | undefined;
  readonly kind: CommandKind;
  /** Flagged `readonly`: resending it cannot change data, and replicas may serve it. Unknown commands are not. */
  readonly readOnly: boolean;
  /** Flagged `write`. */
  readonly write: boolean;
  /**
   * Needs its WAIT under `durability`: writes, scripts and functions that may write (EVAL,
   * EVALSHA, FCALL; not their `_RO` forms), and commands the table does not know (a module's,
   * perhaps a write: a WAIT too many costs a round trip, one too few a lost write).
   */
  readonly durable: boolean;
  /** Where the timeout of a blocking command is; undefined when it never blocks. */
  readonly block: BlockRule | undefined;
  /** What it does to its connection (undefined: nothing); set exactly for the `connection-state` kind. */
  readonly state: StateEffect | undefined;
  readonly transaction: TransactionRole | undefined;
  readonly cache: CacheRole | undefined;
  /** Its key positions hold shard channels (SPUBLISH, SSUBSCRIBE): routed by slot like keys, never prefixed. */
  readonly channels: boolean;
  /** @internal The hand-written key extractor of a movable-keys command. */
  readonly movable: KeyExtractor | undefined;
  /** @internal A container command's traits per subcommand as callers spell it. */
  readonly subs: Map<string, CommandTraits> | undefined;
}

// ---------------------------------------------------------------------------------------
// The tables
// ---------------------------------------------------------------------------------------

/**
 * THE table of commands that change the state of the connection they run on. On a shared
 * lane other callers' commands would run inside that state, so `call()` and a pool's batches
 * refuse them (they belong on a lease), and a lease that ran one (other than WATCH/UNWATCH,
 * which it undoes, and a completed MULTI) closes its connection instead of lending it again.
 *
 * Left out on purpose: SWAPDB, FLUSHDB and the like change the data every connection sees,
 * not this connection's state (the connection still selects the same index afterwards), so
 * they run anywhere and leave a lease's connection fit for reuse; SUBSCRIBE and MONITOR have
 * their own kind.
 */
export const CONNECTION_STATE: ReadonlyMap<string, StateEffect> = new Map<string, StateEffect>([
  ['WATCH', 'watch'],
  ['UNWATCH', 'unwatch'],
  ['MULTI', 'multi'],
  ['EXEC', 'end'],
  ['DISCARD', 'end'],
  ['RESET', 'reset'],
  ['SELECT', 'other'],
  ['HELLO', 'other'],
  ['AUTH', 'other'],
  // The server closes the connection after replying: nobody else may be queued on it.
  ['QUIT', 'other'],
  ['READONLY', 'other'],
  ['READWRITE', 'other'],
  // REPLY OFF/SKIP makes the server skip replies (on a lane every later reply would answer the
  // wrong caller); TRACKING and CACHING change which invalidations it pushes; SETNAME/SETINFO
  // its identity; NO-EVICT and NO-TOUCH how the server treats it. Other CLIENT subcommands
  // (LIST, INFO, KILL, ID …) are plain requests.
  ['CLIENT REPLY', 'other'],
  ['CLIENT TRACKING', 'other'],
  ['CLIENT CACHING', 'other'],
  ['CLIENT SETNAME', 'other'],
  ['CLIENT SETINFO', 'other'],
  ['CLIENT NO-EVICT', 'other'],
  ['CLIENT NO-TOUCH', 'other'],
]);

/** Parents of subcommands in {@link CONNECTION_STATE}: decided per subcommand even where the command table has none. */
const STATE_PARENTS = new Set([...CONNECTION_STATE.keys()].filter((n) => n.includes(' ')).map((n) => n.slice(0, n.indexOf(' '))));

const BLOCKING: ReadonlyMap<string, BlockRule> = new Map<string, BlockRule>([
  ['BLPOP', 'last-s'], ['BRPOP', 'last-s'], ['BRPOPLPUSH', 'last-s'], ['BLMOVE', 'last-s'], ['BZPOPMIN', 'last-s'], ['BZPOPMAX', 'last-s'],
  ['BLMPOP', 'first-s'], ['BZMPOP', 'first-s'],
  ['WAIT', 'last-ms'], ['WAITAOF', 'last-ms'],
  ['XREAD', 'option-ms'], ['XREADGROUP', 'option-ms'],
]);

/** Commands that turn a connection into a pub/sub or monitor connection. */
const SUBSCRIBE = /^(p|s)?(un)?subscribe$|^monitor$/i;

/**
 * Read-only commands of one key whose reply depends only on the key's value and the
 * arguments: their replies can be kept until the server says the key changed. Left out on
 * purpose: commands that depend on the clock (TTL, PTTL, EXPIRETIME, OBJECT IDLETIME, GETEX,
 * which also writes), random ones (SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, RANDOMKEY), scans
 * (cursors), and anything that writes.
 */
export const CACHEABLE: ReadonlySet<string> = new Set([
  'get', 'strlen', 'getrange', 'getbit', 'bitcount', 'bitpos', 'exists', 'type',
  'hget', 'hmget', 'hgetall', 'hexists', 'hlen', 'hkeys', 'hvals', 'hstrlen',
  'smembers', 'sismember', 'smismember', 'scard',
  'zscore', 'zmscore', 'zrange', 'zrangebyscore', 'zrevrange', 'zrevrangebyscore', 'zrangebylex', 'zrevrangebylex', 'zcard', 'zcount', 'zlexcount', 'zrank', 'zrevrank',
  'lrange', 'lindex', 'llen', 'lpos',
]);

/** Shard channels sit at key positions (a cluster routes them by slot) but are channels, not keys. */
const CHANNEL_COMMANDS = new Set(['spublish', 'ssubscribe', 'sunsubscribe']);

// ---------------------------------------------------------------------------------------
// Working them out
// ---------------------------------------------------------------------------------------

/** The traits of `name` (upper case, `PARENT SUB` for a subcommand) with its table entry. */
function derive(name: string, lower: string, info: CommandInfo | undefined, container: boolean): CommandTraits {
  const state = CONNECTION_STATE.get(name);
  const block = BLOCKING.get(name);
  const kind: CommandKind = SUBSCRIBE.test(lower) && !name.includes(' ') ? 'subscribe' : state !== undefined ? 'connection-state' : block !== undefined ? 'blocking' : 'plain';
  const readOnly = info?.flags.has('readonly') ?? false;
  const write = info?.flags.has('write') ?? false;
  const movable = movableKeys(lower);
  let cache: CacheRole | undefined;
  if (CACHEABLE.has(lower)) cache = 'read';
  else if (lower === 'mget') cache = 'mget';
  else if (info !== undefined && !readOnly && !(info.firstKey === 0 && info.keySpecs === undefined)) cache = 'write';
  return Object.freeze({
    name,
    lower,
    info,
    kind,
    readOnly,
    write,
    durable: needsWait(info),
    block,
    state,
    transaction: state === 'multi' ? 'multi' : state === 'end' || state === 'reset' ? 'end' : undefined,
    cache,
    channels: CHANNEL_COMMANDS.has(lower),
    movable,
    subs: container ? new Map<string, CommandTraits>() : undefined,
  } satisfies CommandTraits);
}

/**
 * Whether a command with this table entry needs its WAIT under `durability`: writes (flag
 * `write`), scripts and functions, which may write (EVAL, EVALSHA, FCALL; their `_RO` forms
 * are read-only), and commands the table does not know (see `durable`).
 */
export function needsWait(info: CommandInfo | undefined): boolean {
  if (info === undefined) return true;
  return info.flags.has('write') || info.name === 'eval' || info.name === 'evalsha' || info.name === 'fcall';
}

/** Traits of an empty argument vector: nothing to classify (the server will answer with an error). */
const NOTHING = derive('', '', undefined, false);

/** Bounds of the memos: the names a program uses are few; a flood of made-up names must not grow them forever. */
const MAX_NAMES = 4096;
const MAX_SUBS = 256;

/**
 * Works out and memoises traits from one command table. The built-in table has one
 * ({@link builtinClassifier}); a pool whose table is loaded from the server (a cluster's live
 * `COMMAND`) has its own ({@link classifierFor}), which starts over when the table changes.
 */
export class CommandClassifier {
  /** By the name as callers spell it (`GET`, `get`). */
  #names = new Map<string, CommandTraits>();
  /** By the upper-case name: one traits object per command, whatever the spelling. */
  #byUpper = new Map<string, CommandTraits>();

  constructor(readonly registry: CommandRegistry) {
    // A table loaded from the server replaces what was derived from the one before.
    registry.onLoad(() => {
      this.#names = new Map();
      this.#byUpper = new Map();
    });
  }

  /** The traits of a command, by its name and, for a container command, its subcommand: one Map lookup when known. */
  of(args: readonly Arg[]): CommandTraits {
    const t = this.ofName(args[0]);
    const subs = t.subs;
    if (subs === undefined || args.length < 2) return t;
    const sub = args[1];
    if (typeof sub === 'string') {
      const s = subs.get(sub);
      if (s !== undefined) return s;
    }
    const s = this.#sub(t, String(sub));
    if (typeof sub === 'string' && subs.size < MAX_SUBS) subs.set(sub, s);
    return s;
  }

  /** The traits of a command name alone (of the parent, for a container command). */
  ofName(name: Arg | undefined): CommandTraits {
    if (typeof name === 'string') {
      const t = this.#names.get(name);
      if (t !== undefined) return t;
    }
    if (name === undefined) return NOTHING;
    const given = typeof name === 'string' ? name : Buffer.isBuffer(name) ? name.toString('latin1') : String(name);
    const upper = given.toUpperCase();
    let t = this.#byUpper.get(upper);
    if (t === undefined) {
      const lower = given.toLowerCase();
      const info = this.registry.get(lower);
      t = derive(upper, lower, info, info?.subcommands !== undefined || STATE_PARENTS.has(upper));
      if (this.#byUpper.size < MAX_NAMES) this.#byUpper.set(upper, t);
    }
    if (typeof name === 'string' && this.#names.size < MAX_NAMES) this.#names.set(name, t);
    return t;
  }

  #sub(parent: CommandTraits, sub: string): CommandTraits {
    const info = parent.info?.subcommands?.get(sub.toLowerCase()) ?? parent.info;
    return derive(`${parent.name} ${sub.toUpperCase()}`, parent.lower, info, false);
  }
}

const classifiers = new WeakMap<CommandRegistry, CommandClassifier>();

/** The classifier of a command table (one per table: its memo is shared by everything that reads the table). */
export function classifierFor(registry: CommandRegistry): CommandClassifier {
  let c = classifiers.get(registry);
  if (c === undefined) classifiers.set(registry, (c = new CommandClassifier(registry)));
  return c;
}

let builtin: CommandClassifier | undefined;

/**
 * The classifier of the built-in command table: every pool without a table of its own. Made
 * on first use, so that importing the package does not build the table.
 */
export function builtinClassifier(): CommandClassifier {
  return (builtin ??= classifierFor(new CommandRegistry()));
}

/** The traits of `args` by the built-in command table. */
export function traitsOf(args: readonly Arg[]): CommandTraits {
  return (builtin ?? builtinClassifier()).of(args);
}

/**
 * The traits a call carries, or (a caller that has none, such as a pool's own internal
 * request) those of `args` by the built-in table.
 */
export function carried(traits: CommandTraits | undefined, args: readonly Arg[]): CommandTraits {
  return traits !== undefined ? traits : (builtin ?? builtinClassifier()).of(args);
}

/**
 * The transaction role of a command the connection is sent without traits (a batch's command,
 * the pool's own requests). The length test first: only names of 4, 5 or 7 characters
 * (EXEC, MULTI, RESET, DISCARD) can have one, and most commands are not looked up at all.
 */
export function transactionRole(name: string): TransactionRole | undefined {
  const n = name.length;
  return n === 4 || n === 5 || n === 7 ? (builtin ?? builtinClassifier()).ofName(name).transaction : undefined;
}

// ---------------------------------------------------------------------------------------
// Per call: timeouts and keys
// ---------------------------------------------------------------------------------------

/**
 * How long a command may block on the server, in seconds (0 = forever), or undefined when it
 * does not block (XREAD without BLOCK). Blocking commands must not share a multiplexed
 * connection: they would hold up every command queued behind them.
 */
export function blockingSeconds(t: CommandTraits, args: readonly Arg[]): number | undefined {
  switch (t.block) {
    case undefined:
      return undefined;
    case 'last-s':
      return timeoutArg(t.name, args[args.length - 1]);
    case 'last-ms':
      return timeoutArg(t.name, args[args.length - 1]) / 1000;
    case 'first-s':
      return timeoutArg(t.name, args[1]);
    case 'option-ms':
      for (let i = 1; i < args.length - 1; i++) {
        const a = String(args[i]).toUpperCase();
        if (a === 'STREAMS') break;
        if (a === 'BLOCK') return timeoutArg(`${t.name} BLOCK`, args[i + 1]) / 1000;
      }
      return undefined;
  }
}

/**
 * A blocking command's timeout argument as a number. Anything else is refused before sending:
 * the server would reject it anyway, and taking it for "block forever" would give the call no
 * deadline at all.
 */
function timeoutArg(what: string, arg: Arg | undefined): number {
  const t = typeof arg === 'number' ? arg : typeof arg === 'bigint' ? Number(arg) : Number(String(arg ?? ''));
  if (arg === undefined || String(arg).trim() === '' || !Number.isFinite(t) || t < 0) {
    throw new TypeError(`${what} needs a timeout that is a non-negative number (got ${arg === undefined ? 'none' : JSON.stringify(String(arg))}); it was not sent.`);
  }
  return t;
}

/**
 * The positions of the key arguments of `args`, whose traits are `t` (see
 * `commandKeyPositions` in command-table.ts for the rules): what the cluster router reads to
 * pick a slot, and what `keyPrefix` prefixes. Shard channels are included (see `channels`).
 */
export function keyPositions(t: CommandTraits, args: readonly Arg[]): number[] {
  if (args.length === 0) return [];
  if (t.movable !== undefined) return t.movable(args);
  return t.info === undefined ? [] : infoKeyPositions(t.info, args);
}

/** The key arguments of `args`, in order (the arguments at {@link keyPositions}). */
export function keysOf(t: CommandTraits, args: readonly Arg[]): Arg[] {
  return keyPositions(t, args).map((i) => args[i]!);
}

/** How a refusal names a command: with its subcommand for CLIENT (`CLIENT REPLY`), as the caller spelled it. */
export function shownName(args: readonly Arg[]): string {
  const name = String(args[0]);
  return args.length > 1 && name.toUpperCase() === 'CLIENT' ? `${name} ${String(args[1])}` : name;
}
