import { formatAddress, type NodeAddress } from './types.js';

/**
 * An error reply from the server (`-ERR …`, `-WRONGTYPE …`, RESP3 bulk errors).
 * It is returned to the caller of that command only; the connection stays healthy.
 */
export class RedisError extends Error {
  /** `'RedisError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'RedisError';
  /** First word of the reply: `ERR`, `WRONGTYPE`, `MOVED`, `ASK`, `READONLY`, `NOSCRIPT`, … */
  readonly code: string;
  /** The node that replied, when known. */
  address?: NodeAddress;
  constructor(message: string, options?: { cause?: unknown; address?: NodeAddress }) {
    super(withoutEchoedArgs(message), options?.cause === undefined ? undefined : { cause: options.cause });
    const space = message.indexOf(' ');
    this.code = space === -1 ? message : message.slice(0, space);
    if (options?.address) this.address = options.address;
  }
}

const ECHO = ', with args beginning with: ';

/**
 * A server error without the argument values Redis echoes into it. `-ERR unknown command
 * 'x', with args beginning with: 'a' 'b'` quotes the first arguments of a mistyped command, and
 * those may be a password or personal data; like every message of this library, an error
 * names the command but never shows its arguments (the caller has them).
 */
export function withoutEchoedArgs(message: string): string {
  const at = message.indexOf(ECHO);
  return at === -1 ? message : `${message.slice(0, at)}, with arguments (not shown)`;
}

/** The connection to a node failed, closed, or could not be established. */
export class ConnectionError extends Error {
  /** `'ConnectionError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'ConnectionError';
  /** The node this connection pointed at. */
  readonly address: NodeAddress | undefined;
  constructor(message: string, options?: { cause?: unknown; address?: NodeAddress }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.address = options?.address;
  }
}

/**
 * The command was written to the socket but the connection broke before its reply arrived:
 * it may or may not have executed. It is never retried silently, unless the command is
 * read-only or the caller marked it `idempotent`.
 */
export class UncertainWriteError extends ConnectionError {
  /** `'UncertainWriteError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'UncertainWriteError';
}

/**
 * Not sent: the node is known to be unreachable (its last connection attempt failed) and the
 * pool was created with `offlineQueue: false`, so the call fails at once instead of waiting
 * for the node within its deadline. `cause` is the last connection error.
 */
export class NodeUnreachableError extends ConnectionError {
  /** `'NodeUnreachableError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'NodeUnreachableError';
}

/** The server refused the credentials (WRONGPASS, NOAUTH). The message never contains the password. */
export class AuthenticationError extends ConnectionError {
  /** `'AuthenticationError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'AuthenticationError';
}

/**
 * A write ran on the master but was not confirmed by enough replicas (`durability` is on): the
 * master's `WAIT` answered that only {@link replicas} replicas had it when `durability.timeout`
 * passed, or `WAIT` itself failed (then `cause` is its error and `replicas` is 0). The write is
 * applied on the master and may be read there, but a crash of that master now could lose it.
 * It is never re-sent: decide yourself whether to write again, read it back, or alert.
 */
export class DurabilityError extends Error {
  /** `'DurabilityError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'DurabilityError';
  /** Replicas that confirmed the write (the reply of `WAIT`; 0 when `WAIT` failed). */
  readonly replicas: number;
  /** Replicas that `durability.replicas` asked for. */
  readonly required: number;
  /** The master that applied the write. */
  readonly address: NodeAddress | undefined;
  constructor(message: string, options: { replicas: number; required: number; address?: NodeAddress; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.replicas = options.replicas;
    this.required = options.required;
    this.address = options.address;
  }
}

/** A deadline passed: a command timeout, a connect timeout, a socket inactivity timeout. */
export class TimeoutError extends Error {
  /** `'TimeoutError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'TimeoutError';
  /** The node the command or connection was waiting for, when there was one. */
  readonly address: NodeAddress | undefined;
  /** Whether the command had been written to a socket when the time ran out. */
  readonly sent: boolean;
  constructor(message: string, options?: { cause?: unknown; address?: NodeAddress; sent?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.address = options?.address;
    this.sent = options?.sent ?? false;
  }
}

/** The server sent bytes that are not valid RESP, or a length over `maxReplyBytes`. */
export class ProtocolError extends Error {
  /** `'ProtocolError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'ProtocolError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The pool was closed: no new work is accepted. */
export class PoolClosedError extends Error {
  /** `'PoolClosedError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'PoolClosedError';
  constructor(message = 'The pool is closed; create a new pool to send more commands.', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A refusal made in bulk (a flood against a slow node rejects thousands of commands per
 * millisecond): built without a stack trace, whose capture costs more than the rest of the
 * refusal together. The message says which node and which limit.
 */
export function overloadError(message: string): QueueFullError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new QueueFullError(message);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** A bounded queue (commands held during a failover) is full, or a command waited in it too long. */
export class QueueFullError extends Error {
  /** `'QueueFullError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'QueueFullError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A subscription's async iterator held `highWaterMark` unread messages with `overflow: 'error'`:
 * the iteration ends with this error and the subscription is closed.
 */
export class SlowConsumerError extends Error {
  /** `'SlowConsumerError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'SlowConsumerError';
}

/** Some sentinel answered, but none monitors a master of that name. */
export class MasterNotMonitoredError extends Error {
  /** `'MasterNotMonitoredError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'MasterNotMonitoredError';
  /** The master name that was asked for. */
  readonly masterName: string;
  constructor(masterName: string, message?: string, options?: { cause?: unknown }) {
    super(message ?? `No sentinel monitors a master named "${masterName}"; check the name (SENTINEL MASTERS lists them).`, options);
    this.masterName = masterName;
  }
}

/** No sentinel could be reached. `errors` holds each sentinel's own error, in the order tried. */
export class AllSentinelsDownError extends AggregateError {
  /** `'AllSentinelsDownError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'AllSentinelsDownError';
  /** The sentinels tried, in order. */
  readonly tried: NodeAddress[];
  constructor(errors: unknown[], tried: NodeAddress[], masterName: string) {
    const allAuth = errors.length > 0 && errors.every((e) => e instanceof AuthenticationError);
    // A data node given where a sentinel belongs answers, but knows no SENTINEL command.
    const noSentinel = errors.length > 0 && errors.every((e) => e instanceof RedisError && /unknown command .?sentinel/i.test(e.message));
    const last = errors[errors.length - 1];
    const hint = allAuth
      ? 'authentication failed on every sentinel: check sentinelUsername / sentinelPassword (the sentinels\' own credentials).'
      : noSentinel
        ? 'they answered but know no SENTINEL command, so they are Redis servers, not sentinels. SentinelPool.create() takes the addresses of the sentinels (redis-sentinel, port 26379 by default); for one server without Sentinel use StandalonePool.'
        : `check that the sentinels are running and reachable (last error: ${last instanceof Error ? last.message.replace(/\.$/, '') : String(last)}).`;
    super(errors, `Could not use any sentinel for master "${masterName}" (tried ${tried.map(formatAddress).join(', ')}); ${hint}`, { cause: last });
    this.tried = tried;
  }
}

/** One step of a cluster command's journey, as `MaxRedirectionsError` reports it. */
export interface RedirectAttempt {
  /** The node this attempt went to. */
  node: NodeAddress;
  /** What ended the attempt: a redirection, a retryable refusal, a connection failure, a timeout, or another error. */
  kind: 'moved' | 'ask' | 'tryagain' | 'clusterdown' | 'connection' | 'timeout' | 'error';
  /** The command's hash slot (undefined for keyless commands). */
  slot: number | undefined;
  /** The error this attempt ended with. */
  error: Error;
  /** Milliseconds since the command started. */
  elapsed: number;
}

/** A cluster command used up its redirection/retry budget. `cause` is the last underlying error. */
export class MaxRedirectionsError extends Error {
  /** `'MaxRedirectionsError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'MaxRedirectionsError';
  /** Every attempt, in order (the message lists them too). */
  readonly attempts: RedirectAttempt[];
  constructor(command: string, attempts: RedirectAttempt[], limit: number) {
    const lines = attempts.map(
      (a, i) =>
        `  #${i + 1} ${formatAddress(a.node)} ${a.kind}${a.slot === undefined ? '' : ` slot ${a.slot}`} after ${a.elapsed} ms: ${a.error.message}`,
    );
    super(
      `${command} gave up after ${attempts.length} attempts (maxRedirections ${limit}):\n${lines.join('\n')}\n` +
        'The last error is the cause; raise maxRedirections only if the cluster is resharding.',
      { cause: attempts[attempts.length - 1]?.error },
    );
    this.attempts = attempts;
  }
}

/** The keys of a command (or of a MULTI) hash to different slots, and the command cannot be split safely. */
export class CrossSlotError extends Error {
  /** `'CrossSlotError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'CrossSlotError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The server lacks a command the call needs: an older version (sharded pub/sub before Redis 7.0).
 * The message names the server and its version and says what to do; `cause` is the server's own
 * refusal. Nothing was executed, and retrying on the same server cannot help.
 */
export class UnsupportedCommandError extends Error {
  /** `'UnsupportedCommandError'`, for logs and for checks that cannot use `instanceof` (two copies of the package). */
  override name = 'UnsupportedCommandError';
  /** The command the server refused, e.g. `SSUBSCRIBE`. */
  readonly command: string;
  /** The server's version as it reports it (`6.2.16`), when it could be read. */
  readonly serverVersion: string | undefined;
  /** The node that refused it. */
  address?: NodeAddress;
  constructor(message: string, options: { command: string; serverVersion?: string | undefined; cause?: unknown; address?: NodeAddress }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.command = options.command;
    this.serverVersion = options.serverVersion;
    if (options.address) this.address = options.address;
  }
}

/**
 * Whether a failed attempt may have reached the server: its reply was lost after the write
 * (`UncertainWriteError`, a `TimeoutError` marked `sent`), or the caller knows it was (`sent`).
 * A plain `ConnectionError` and an unsent `TimeoutError` prove it never left. The one "was it
 * written" rule: the retry rules (retry.ts, which re-exports it) and {@link isNotExecuted} use it.
 */
export function wasWritten(err: unknown, sent = false): boolean {
  return sent || err instanceof UncertainWriteError || (err instanceof TimeoutError && err.sent);
}

/**
 * True when the error proves the command was not executed by the server (safe to retry):
 * redirections and refusals (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY, LOADING, MASTERDOWN,
 * NOREPLICAS), connection failures before the write, unsent timeouts, and refusals by the pool.
 */
export function isNotExecuted(err: unknown): boolean {
  if (err instanceof RedisError) {
    switch (err.code) {
      case 'MOVED': case 'ASK': case 'TRYAGAIN': case 'CLUSTERDOWN': case 'READONLY':
      case 'LOADING': case 'MASTERDOWN': case 'NOREPLICAS':
        return true;
    }
    return false;
  }
  // A connection failure or a timeout: not executed when it was never written (the one rule, wasWritten).
  if (err instanceof ConnectionError || err instanceof TimeoutError) return !wasWritten(err);
  // Refused before anything was written.
  if (err instanceof PoolClosedError || err instanceof QueueFullError || err instanceof CrossSlotError) return true;
  // Every attempt was refused or redirected before running: none executed.
  if (err instanceof MaxRedirectionsError) return err.attempts.length > 0 && err.attempts.every((a) => isNotExecuted(a.error));
  return false;
}
