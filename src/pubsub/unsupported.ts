import { RedisError, UnsupportedCommandError } from '../errors.js';
import type { NodePool } from '../pool/node-pool.js';
import { formatAddress, type NodeAddress, type Reply } from '../types.js';

/** Whether a reply to `command` says the server does not know it at all (Redis 6.2 answering SSUBSCRIBE). */
export function isUnknownCommand(err: unknown): err is RedisError {
  return err instanceof RedisError && /^ERR unknown command/i.test(err.message);
}

/** `redis_version` / `valkey_version` and the server's name from an `INFO server` reply. */
export function serverVersionOf(info: Reply): string | undefined {
  const text = typeof info === 'string' ? info : Buffer.isBuffer(info) ? info.toString('utf8') : '';
  const valkey = /^valkey_version:(\S+)/m.exec(text);
  if (valkey) return `Valkey ${valkey[1]}`;
  const redis = /^redis_version:(\S+)/m.exec(text);
  return redis ? `Redis ${redis[1]}` : undefined;
}

/**
 * The error a sharded pub/sub command refused as unknown (Redis 6.2) becomes: it names the node,
 * the server's version (asked with `info`; left out when that fails too) and what to do instead.
 * Sharded pub/sub came with Redis 7.0; a bare "unknown command" would leave the user guessing
 * whether the library or the server is at fault.
 */
export async function shardedPubSubUnsupported(
  command: 'SSUBSCRIBE' | 'SPUBLISH',
  err: RedisError,
  info: () => Promise<Reply>,
  address: NodeAddress | undefined,
): Promise<UnsupportedCommandError> {
  let version: string | undefined;
  try {
    const reply = await info();
    // A cluster fans INFO out to every master (response_policy:special): any of them tells.
    version = serverVersionOf(Array.isArray(reply) ? reply[0] : reply);
  } catch {
    // The refusal is what matters; the version only makes it clearer.
  }
  const where = address ? formatAddress(address) : 'the server';
  const plain = command === 'SSUBSCRIBE' ? 'subscribe()' : 'publish()';
  return new UnsupportedCommandError(
    `Sharded pub/sub (${command}) is not supported by ${where}${version ? ` (${version})` : ''}: it needs Redis 7.0 or later, or Valkey 7.2 or later. ` +
      `Use ${plain} with plain channels on this server, or upgrade it.`,
    { command, serverVersion: version?.replace(/^\S+ /, ''), cause: err, ...(address ? { address } : {}) },
  );
}

/** The subscriber's node pool asked for its version, within `timeout`. */
export function infoOf(pool: NodePool, timeout: number): () => Promise<Reply> {
  return async () => (await pool.lane()).send(['INFO', 'server'], { timeout });
}
