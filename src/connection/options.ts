import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { checkNumber, checkOneOf, checkString } from '../options.js';
import { Auth, redactableTls, type CredentialRole, type CredentialsProvider } from './credentials.js';
import { resolveNatMap, type NatMap } from '../nat-map.js';
import type { NodeAddress } from '../types.js';
import { DEFAULT_RELAXED_TIMEOUT, MAINT_ENDPOINT_TYPES, type MaintEndpointType, type MaintNotificationsMode } from './maintenance.js';

/** How one connection reaches and greets a node. Every timeout is in milliseconds. */
export interface ConnectionOptions {
  /** ACL user name (Redis 6+). */
  username?: string;
  /** Password for AUTH / HELLO AUTH. Never included in errors, events, stats, logs or `util.inspect`. */
  password?: string;
  /**
   * Credentials fetched for every new connection (and by `reauthenticate()`), instead of a
   * static `username`/`password`: for rotating passwords and short-lived tokens. Called with
   * the node's address and role; return `{ username?, password }`, or `null` for no AUTH.
   * A provider that throws, or answers later than `credentialsTimeout`, fails that connection
   * with `AuthenticationError` (its error as `cause`).
   */
  credentials?: CredentialsProvider;
  /** Longest one `credentials` call may take (and never beyond `connectTimeout`). Default 5000. */
  credentialsTimeout?: number;
  /** Database index selected after connecting (standalone and Sentinel only). Default 0. */
  db?: number;
  /** Sent with CLIENT SETNAME (or HELLO SETNAME) so the connection shows in CLIENT LIST. */
  clientName?: string;
  /** 2 (default) for RESP2 with AUTH/SELECT/CLIENT SETNAME, 3 for `HELLO 3`. */
  protocol?: 2 | 3;
  /**
   * `true` or Node's `tls.connect` options to connect over TLS (`ca`, `cert`, `key` are PEM
   * contents, not file paths). The certificate is verified and the host name checked by
   * default (`servername` is the host, unless it is an IP address, which must then be in
   * the certificate's IP SANs). A `rediss://` URL turns TLS on.
   */
  tls?: boolean | TlsConnectionOptions;
  /** Time allowed for TCP/TLS connect plus the handshake. Default 5000. */
  connectTimeout?: number;
  /** Default deadline of a command, from the call to its reply, covering retries. 0 disables. Default 5000. */
  commandTimeout?: number;
  /** A connection that receives no byte for this long while commands wait for replies is destroyed. 0 disables. Default 10000. */
  socketTimeout?: number;
  /** Largest bulk length or aggregate count accepted from the server. Default 512 MiB. */
  maxReplyBytes?: number;
  /**
   * Heartbeat: a connection with nothing in flight for this long sends PING, and one whose PING
   * gets no reply within another `pingInterval` is closed, so a dead peer that sent no RST (a
   * black hole) is found before a command hits it. 0 disables. Default 0.
   */
  pingInterval?: number;
  /** TCP keepalive: initial delay of the OS's probes on every socket. 0 turns keepalive off. Default 10000. */
  keepAlive?: number;
  /**
   * Most commands one connection holds (written and awaiting replies, plus queued); beyond it a
   * command rejects at once with `QueueFullError`, not sent. Default 100000.
   */
  maxPending?: number;
  /**
   * Most bytes of commands one connection holds unsent (queued, or in the socket's buffer while
   * the server reads slowly); beyond it a command rejects at once with `QueueFullError`, not sent.
   * A single command larger than this is still sent when nothing else waits. Default 128 MiB.
   */
  maxPendingBytes?: number;
  /**
   * Maintenance notifications of Redis Software (8.0.2+) and Redis Cloud: RESP3 pushes the
   * server sends ahead of planned work (an endpoint moving, a shard migrating or failing over,
   * slots moving), so that the pool hands connections over, relaxes its timeouts and updates
   * its slot map before anything fails. `'auto'` (default): opt in on every connection that
   * speaks RESP3 (`protocol: 3`) and carry on without them when the server refuses, as
   * open-source Redis does. `'enabled'`: a refusal fails the connection, and so `create()`,
   * with a `ConnectionError`; needs `protocol: 3`. `'disabled'`: never opt in. See
   * docs/managed-redis.md.
   */
  maintNotifications?: MaintNotificationsMode;
  /**
   * The form of the new address a MOVING notification carries: `'internal-ip'`,
   * `'internal-fqdn'`, `'external-ip'`, `'external-fqdn'`, or `'none'` (no address: reconnect
   * to the same name after half the notice). Default: inferred per connection, a name when it
   * reached the server over TLS by name (the certificate is checked against it), else an IP;
   * internal when the address reached is private, loopback or link-local, else external.
   */
  maintEndpointType?: MaintEndpointType;
  /**
   * While a notified maintenance is in progress on a connection, the command and socket
   * timeouts in force there (per-call ones included) are raised to at least this many ms,
   * never lowered, and restored when it ends. Default 10000.
   */
  maintRelaxedTimeout?: number;
}

/** Maintenance notification settings of a connection that opts in. */
export interface ResolvedMaint {
  /** `auto` ignores a refusal of the opt-in, `enabled` fails the connection. */
  mode: 'auto' | 'enabled';
  /** undefined: inferred per connection (see `inferEndpointType`). */
  endpointType: MaintEndpointType | undefined;
  relaxedTimeout: number;
  /** The pool's `natMap`, for the addresses MOVING and SMIGRATED name. */
  mapAddress: (a: NodeAddress) => NodeAddress;
}

/** Connection options with every default applied. */
export interface ResolvedConnectionOptions extends Required<Omit<ConnectionOptions, 'username' | 'password' | 'credentials' | 'credentialsTimeout' | 'clientName' | 'tls' | 'maintNotifications' | 'maintEndpointType' | 'maintRelaxedTimeout'>> {
  /** Where AUTH credentials come from; the secret itself is never enumerable. */
  auth: Auth;
  /** What the credentials provider is told this connection is for. */
  role: CredentialRole;
  clientName: string | undefined;
  tls: TlsConnectionOptions | undefined;
  /** Maintenance notifications; undefined when this connection does not opt in. */
  maint?: ResolvedMaint | undefined;
}

export const CONNECTION_DEFAULTS = {
  db: 0,
  protocol: 2 as 2 | 3,
  connectTimeout: 5000,
  commandTimeout: 5000,
  socketTimeout: 10000,
  maxReplyBytes: 512 * 1024 * 1024,
  credentialsTimeout: 5000,
  pingInterval: 0,
  keepAlive: 10000,
  maxPending: 100_000,
  maxPendingBytes: 128 * 1024 * 1024,
};


/** Option names that belong to the connection (shared by every mode). */
export const CONNECTION_OPTION_NAMES = ['username', 'password', 'credentials', 'credentialsTimeout', 'db', 'clientName', 'protocol', 'tls', 'connectTimeout', 'commandTimeout', 'socketTimeout', 'maxReplyBytes', 'pingInterval', 'keepAlive', 'maxPending', 'maxPendingBytes', 'maintNotifications', 'maintEndpointType', 'maintRelaxedTimeout'] as const;

/**
 * Validates connection options (TypeError naming the option) and applies defaults.
 * `fromUrl` fills in what a redis:// URL carried, explicit options win.
 */
export function resolveConnectionOptions(
  o: ConnectionOptions,
  fromUrl: { username?: string; password?: string; db?: number; tls?: boolean } = {},
  prefix = '',
  role: CredentialRole = 'master',
): ResolvedConnectionOptions {
  const n = (k: string) => prefix + k;
  checkString(n('username'), o.username);
  checkString(n('password'), o.password, true);
  if (o.credentials !== undefined && typeof o.credentials !== 'function') throw new TypeError(`Option ${n('credentials')} must be a function ({ address, role }) => Promise<{ username?, password } | null> (got ${typeof o.credentials}).`);
  if (o.credentials !== undefined && (o.password !== undefined || o.username !== undefined || fromUrl.password !== undefined || fromUrl.username !== undefined)) {
    throw new TypeError(`Option ${n('credentials')} cannot be combined with ${n('username')}/${n('password')} (or credentials in the URL): the provider supplies both.`);
  }
  checkNumber(n('credentialsTimeout'), o.credentialsTimeout, { min: 1, max: MAX_TIMER });
  checkNumber(n('db'), o.db, { max: 1_000_000 });
  checkString(n('clientName'), o.clientName);
  if (o.clientName !== undefined && /\s/.test(o.clientName)) throw new TypeError(`Option ${n('clientName')} must not contain spaces.`);
  checkOneOf(n('protocol'), o.protocol, [2, 3]);
  checkTlsOptions(n('tls'), o.tls);
  checkNumber(n('connectTimeout'), o.connectTimeout, { max: MAX_TIMER });
  checkNumber(n('commandTimeout'), o.commandTimeout, { max: MAX_TIMER });
  checkNumber(n('socketTimeout'), o.socketTimeout, { max: MAX_TIMER });
  checkNumber(n('maxReplyBytes'), o.maxReplyBytes, { min: 1024 });
  checkNumber(n('pingInterval'), o.pingInterval, { max: MAX_TIMER });
  checkNumber(n('keepAlive'), o.keepAlive, { max: MAX_TIMER });
  // Node rounds the delay down to whole seconds, and 0 s means the OS default (often 2 hours).
  if (o.keepAlive !== undefined && o.keepAlive > 0 && o.keepAlive < 1000) throw new TypeError(`Option ${n('keepAlive')} must be 0 (off) or at least 1000 ms (got ${o.keepAlive}); the OS counts keepalive in whole seconds.`);
  checkNumber(n('maxPending'), o.maxPending, { min: 1 });
  checkNumber(n('maxPendingBytes'), o.maxPendingBytes, { min: 1024, max: 2 ** 32 });
  checkOneOf(n('maintNotifications'), o.maintNotifications, ['auto', 'enabled', 'disabled']);
  checkOneOf(n('maintEndpointType'), o.maintEndpointType, MAINT_ENDPOINT_TYPES);
  checkNumber(n('maintRelaxedTimeout'), o.maintRelaxedTimeout, { min: 1, max: MAX_TIMER });
  const protocol = o.protocol ?? CONNECTION_DEFAULTS.protocol;
  const tlsOpt = o.tls ?? fromUrl.tls;
  return {
    auth: o.credentials
      ? Auth.from(o.credentials, o.credentialsTimeout ?? CONNECTION_DEFAULTS.credentialsTimeout)
      : Auth.of(o.username ?? fromUrl.username, o.password ?? fromUrl.password),
    role,
    db: o.db ?? fromUrl.db ?? CONNECTION_DEFAULTS.db,
    clientName: o.clientName,
    protocol,
    tls: resolveTls(tlsOpt),
    connectTimeout: o.connectTimeout ?? CONNECTION_DEFAULTS.connectTimeout,
    commandTimeout: o.commandTimeout ?? CONNECTION_DEFAULTS.commandTimeout,
    socketTimeout: o.socketTimeout ?? CONNECTION_DEFAULTS.socketTimeout,
    maxReplyBytes: o.maxReplyBytes ?? CONNECTION_DEFAULTS.maxReplyBytes,
    pingInterval: o.pingInterval ?? CONNECTION_DEFAULTS.pingInterval,
    keepAlive: o.keepAlive ?? CONNECTION_DEFAULTS.keepAlive,
    maxPending: o.maxPending ?? CONNECTION_DEFAULTS.maxPending,
    maxPendingBytes: o.maxPendingBytes ?? CONNECTION_DEFAULTS.maxPendingBytes,
    maint: resolveMaint(o, protocol, n),
  };
}

/**
 * The maintenance notification settings; undefined when connections do not opt in (`disabled`,
 * or `auto` under RESP2, which cannot carry pushes). The `natMap` of a Sentinel or Cluster pool
 * is read from the same options object (standalone has none).
 */
function resolveMaint(o: ConnectionOptions, protocol: 2 | 3, n: (k: string) => string): ResolvedMaint | undefined {
  const mode = o.maintNotifications ?? 'auto';
  if (mode === 'enabled' && protocol !== 3) {
    throw new TypeError(`Option ${n('maintNotifications')}: 'enabled' needs ${n('protocol')}: 3 (maintenance notifications are RESP3 push messages); set ${n('protocol')}: 3, or use ${n('maintNotifications')}: 'auto'.`);
  }
  if (mode === 'disabled' || protocol !== 3) return undefined;
  const natMap = (o as { natMap?: NatMap }).natMap;
  return {
    mode,
    endpointType: o.maintEndpointType,
    relaxedTimeout: o.maintRelaxedTimeout ?? DEFAULT_RELAXED_TIMEOUT,
    mapAddress: natMap === undefined ? (a) => a : resolveNatMap(natMap),
  };
}


/** Node's timers fire at once for delays above 2^31-1 ms. */
export const MAX_TIMER = 2 ** 31 - 1;

/** `true` -> `{}`, `false`/undefined -> no TLS, options -> a copy that prints without key material. */
export function resolveTls(tls: boolean | TlsConnectionOptions | undefined): TlsConnectionOptions | undefined {
  if (tls === undefined || tls === false) return undefined;
  return redactableTls(tls === true ? {} : tls);
}

const PEM_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'crl'] as const;

/**
 * Checks the TLS options this library reads or that users most often get wrong: PEM material
 * must be contents (string or Buffer, or arrays of them), not anything else.
 */
export function checkTlsOptions(name: string, tls: unknown): void {
  if (tls === undefined || typeof tls === 'boolean') return;
  if (typeof tls !== 'object' || tls === null || Array.isArray(tls)) throw new TypeError(`Option ${name} must be true, false or an object of Node tls.connect options (got ${Array.isArray(tls) ? 'an array' : typeof tls}).`);
  const t = tls as Record<string, unknown>;
  const pem = (v: unknown) => typeof v === 'string' || Buffer.isBuffer(v) || v instanceof Uint8Array;
  for (const k of PEM_OPTIONS) {
    const v = t[k];
    if (v === undefined) continue;
    const ok = pem(v) || (Array.isArray(v) && v.every((x) => pem(x) || (k === 'key' || k === 'pfx') && typeof x === 'object' && x !== null));
    if (!ok) throw new TypeError(`Option ${name}.${k} must be PEM contents (a string or Buffer, or an array of them), not ${typeof v}; read files yourself, e.g. fs.readFileSync(path).`);
    // A string with no PEM header is almost always a file path given where contents belong.
    const strings = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
    if (k !== 'pfx' && strings.some((x) => !x.includes('-----BEGIN'))) {
      throw new TypeError(`Option ${name}.${k} is a string without a PEM header (-----BEGIN …): it looks like a file path; pass the contents, e.g. fs.readFileSync(path).`);
    }
  }
  for (const k of ['servername', 'passphrase', 'minVersion', 'maxVersion', 'ciphers', 'ecdhCurve'] as const) {
    if (t[k] !== undefined && typeof t[k] !== 'string') throw new TypeError(`Option ${name}.${k} must be a string (got ${typeof t[k]}).`);
  }
  if (t['rejectUnauthorized'] !== undefined && typeof t['rejectUnauthorized'] !== 'boolean') throw new TypeError(`Option ${name}.rejectUnauthorized must be a boolean (got ${typeof t['rejectUnauthorized']}).`);
  if (t['checkServerIdentity'] !== undefined && typeof t['checkServerIdentity'] !== 'function') throw new TypeError(`Option ${name}.checkServerIdentity must be a function (got ${typeof t['checkServerIdentity']}).`);
  for (const k of ['host', 'port', 'path', 'socket']) {
    if (t[k] !== undefined) throw new TypeError(`Option ${name}.${k} is not used: the pool connects to each node's own address; remove it (use natMap to rewrite addresses).`);
  }
}
