import { RedisError, UnsupportedCommandError } from '../errors.js';
import type { NodePool } from '../pool/node-pool.js';
import { formatAddress, type Reply } from '../types.js';

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
 * The error a SSUBSCRIBE refused as unknown becomes: it names the server's version (asked with
 * INFO on the node's shared connection, within `timeout`; left out when that fails too) and what
 * to do instead. Sharded pub/sub came with Redis 7.0; a generic "unknown command" would leave the
 * user guessing whether the library or the server is at fault.
 */
export async function shardedPubSubUnsupported(err: RedisError, pool: NodePool, timeout: number): Promise<UnsupportedCommandError> {
  let version: string | undefined;
  try {
    const lane = await pool.lane();
    version = serverVersionOf(await lane.send(['INFO', 'server'], { timeout }));
  } catch {
    // The refusal is what matters; the version only makes it clearer.
  }
  const addr = formatAddress(pool.target);
  return new UnsupportedCommandError(
    `Sharded pub/sub (SSUBSCRIBE) is not supported by ${addr}${version ? ` (${version})` : ''}: it needs Redis 7.0 or later, or Valkey 7.2 or later. ` +
      'Use subscribe() with plain channels on this server, or upgrade it.',
    { command: 'SSUBSCRIBE', serverVersion: version?.replace(/^\S+ /, ''), cause: err, address: pool.target },
  );
}
