import type { Arg } from '../types.js';

const ALWAYS_BLOCKING = new Set(['BLPOP', 'BRPOP', 'BRPOPLPUSH', 'BLMOVE', 'BLMPOP', 'BZPOPMIN', 'BZPOPMAX', 'BZMPOP', 'WAIT', 'WAITAOF']);
const TIMEOUT_LAST = new Set(['BLPOP', 'BRPOP', 'BRPOPLPUSH', 'BLMOVE', 'BZPOPMIN', 'BZPOPMAX', 'WAIT']);

/**
 * How long a command may block on the server, in seconds (0 = forever), or undefined when it
 * does not block. Blocking commands must not share a multiplexed connection: they would
 * hold up every command queued behind them.
 */
export function blockingSeconds(args: readonly Arg[]): number | undefined {
  const name = String(args[0]).toUpperCase();
  if (ALWAYS_BLOCKING.has(name)) {
    if (TIMEOUT_LAST.has(name)) {
      // WAIT takes milliseconds, the list/zset commands take seconds.
      const t = timeoutArg(name, args[args.length - 1]);
      return name === 'WAIT' ? t / 1000 : t;
    }
    if (name === 'BLMPOP' || name === 'BZMPOP') return timeoutArg(name, args[1]);
    return 0;
  }
  if (name === 'XREAD' || name === 'XREADGROUP') {
    for (let i = 1; i < args.length - 1; i++) {
      const a = String(args[i]).toUpperCase();
      if (a === 'STREAMS') break;
      if (a === 'BLOCK') return timeoutArg(`${name} BLOCK`, args[i + 1]) / 1000;
    }
  }
  return undefined;
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

const PUBSUB = /^(p|s)?(un)?subscribe$|^monitor$/i;

/** Commands that turn a connection into a pub/sub or monitor connection. */
export function isSubscribeCommand(args: readonly Arg[]): boolean {
  return PUBSUB.test(String(args[0]));
}

/** How a command must be sent: over the shared lane, on an exclusive connection, or not through `call()` at all. */
export type CommandKind = 'plain' | 'blocking' | 'subscribe' | 'connection-state';

/**
 * Commands whose effect is the state of the connection they run on (a transaction, a WATCH, the
 * selected database, the login, the protocol): on a lane other callers' commands would run
 * inside that state, so they belong on a leased connection.
 */
const CONNECTION_STATE = new Set(['WATCH', 'UNWATCH', 'MULTI', 'EXEC', 'DISCARD', 'SELECT', 'RESET', 'HELLO', 'AUTH', 'QUIT', 'READONLY', 'READWRITE']);

/**
 * CLIENT subcommands that change the connection they run on: REPLY OFF/SKIP makes the server
 * skip replies (on a lane every later reply would answer the wrong caller), TRACKING and
 * CACHING change which invalidations it pushes, SETNAME/SETINFO its identity, NO-EVICT and
 * NO-TOUCH how the server treats it. Other CLIENT subcommands (LIST, INFO, KILL, ID …) are
 * plain requests.
 */
const CLIENT_STATE = new Set(['REPLY', 'TRACKING', 'CACHING', 'SETNAME', 'SETINFO', 'NO-EVICT', 'NO-TOUCH']);

/** A name's kind, with CLIENT left to its subcommand. */
type NameKind = CommandKind | 'client';

const KINDS = new Map<string, NameKind>();

/**
 * The kind of a command, from its name (cached: this runs on every `call()`, and upper-casing
 * plus set lookups per call showed up in profiles) and, for CLIENT, its subcommand. XREAD
 * counts as 'blocking' (it blocks only with BLOCK; `blockingSeconds` decides per call).
 */
export function commandKind(args: readonly Arg[]): CommandKind {
  const name = args[0]!;
  let k: NameKind | undefined;
  if (typeof name !== 'string') k = kindOf(String(name));
  else {
    k = KINDS.get(name);
    if (k === undefined) {
      k = kindOf(name);
      if (KINDS.size < 4096) KINDS.set(name, k);
    }
  }
  if (k !== 'client') return k;
  return args.length > 1 && CLIENT_STATE.has(String(args[1]).toUpperCase()) ? 'connection-state' : 'plain';
}

/** How a refusal names a command: with its subcommand for CLIENT (`CLIENT REPLY`). */
export function shownName(args: readonly Arg[]): string {
  const name = String(args[0]);
  return args.length > 1 && name.toUpperCase() === 'CLIENT' ? `${name} ${String(args[1])}` : name;
}

function kindOf(name: string): NameKind {
  if (PUBSUB.test(name)) return 'subscribe';
  const upper = name.toUpperCase();
  if (CONNECTION_STATE.has(upper)) return 'connection-state';
  if (upper === 'CLIENT') return 'client';
  return ALWAYS_BLOCKING.has(upper) || upper === 'XREAD' || upper === 'XREADGROUP' ? 'blocking' : 'plain';
}
