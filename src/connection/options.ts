import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { checkNumber, checkObject, checkOneOf, checkString } from '../options.js';

/** How one connection reaches and greets a node. Every timeout is in milliseconds. */
export interface ConnectionOptions {
  /** ACL user name (Redis 6+). */
  username?: string;
  /** Password for AUTH / HELLO AUTH. Never included in errors, events or logs. */
  password?: string;
  /** Database index selected after connecting (standalone and Sentinel only). Default 0. */
  db?: number;
  /** Sent with CLIENT SETNAME (or HELLO SETNAME) so the connection shows in CLIENT LIST. */
  clientName?: string;
  /** 2 (default) for RESP2 with AUTH/SELECT/CLIENT SETNAME, 3 for `HELLO 3`. */
  protocol?: 2 | 3;
  /** `true` or Node TLS options to connect over TLS. */
  tls?: boolean | TlsConnectionOptions;
  /** Time allowed for TCP/TLS connect plus the handshake. Default 5000. */
  connectTimeout?: number;
  /** Default deadline of a command, from the call to its reply, covering retries. 0 disables. Default 5000. */
  commandTimeout?: number;
  /** A connection that receives no byte for this long while commands wait for replies is destroyed. 0 disables. Default 10000. */
  socketTimeout?: number;
  /** Largest bulk length or aggregate count accepted from the server. Default 512 MiB. */
  maxReplyBytes?: number;
}

/** Connection options with every default applied. */
export interface ResolvedConnectionOptions extends Required<Omit<ConnectionOptions, 'username' | 'password' | 'clientName' | 'tls'>> {
  username: string | undefined;
  password: string | undefined;
  clientName: string | undefined;
  tls: TlsConnectionOptions | undefined;
}

export const CONNECTION_DEFAULTS = {
  db: 0,
  protocol: 2 as 2 | 3,
  connectTimeout: 5000,
  commandTimeout: 5000,
  socketTimeout: 10000,
  maxReplyBytes: 512 * 1024 * 1024,
};


/** Option names that belong to the connection (shared by every mode). */
export const CONNECTION_OPTION_NAMES = ['username', 'password', 'db', 'clientName', 'protocol', 'tls', 'connectTimeout', 'commandTimeout', 'socketTimeout', 'maxReplyBytes'] as const;

/**
 * Validates connection options (TypeError naming the option) and applies defaults.
 * `fromUrl` fills in what a redis:// URL carried, explicit options win.
 */
export function resolveConnectionOptions(
  o: ConnectionOptions,
  fromUrl: { username?: string; password?: string; db?: number; tls?: boolean } = {},
  prefix = '',
): ResolvedConnectionOptions {
  const n = (k: string) => prefix + k;
  checkString(n('username'), o.username);
  checkString(n('password'), o.password, true);
  checkNumber(n('db'), o.db, { max: 1_000_000 });
  checkString(n('clientName'), o.clientName);
  if (o.clientName !== undefined && /\s/.test(o.clientName)) throw new TypeError(`Option ${n('clientName')} must not contain spaces.`);
  checkOneOf(n('protocol'), o.protocol, [2, 3]);
  if (o.tls !== undefined && typeof o.tls !== 'boolean') checkObject(n('tls'), o.tls);
  checkNumber(n('connectTimeout'), o.connectTimeout);
  checkNumber(n('commandTimeout'), o.commandTimeout);
  checkNumber(n('socketTimeout'), o.socketTimeout);
  checkNumber(n('maxReplyBytes'), o.maxReplyBytes, { min: 1024 });
  const tlsOpt = o.tls ?? fromUrl.tls;
  return {
    username: o.username ?? fromUrl.username,
    password: o.password ?? fromUrl.password,
    db: o.db ?? fromUrl.db ?? CONNECTION_DEFAULTS.db,
    clientName: o.clientName,
    protocol: o.protocol ?? CONNECTION_DEFAULTS.protocol,
    tls: tlsOpt === true ? {} : tlsOpt === false ? undefined : tlsOpt,
    connectTimeout: o.connectTimeout ?? CONNECTION_DEFAULTS.connectTimeout,
    commandTimeout: o.commandTimeout ?? CONNECTION_DEFAULTS.commandTimeout,
    socketTimeout: o.socketTimeout ?? CONNECTION_DEFAULTS.socketTimeout,
    maxReplyBytes: o.maxReplyBytes ?? CONNECTION_DEFAULTS.maxReplyBytes,
  };
}

