import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { checkFields, defineOptions, MAX_TIMER, optionNames, withDefaults } from '../options.js';
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
   * Do not identify the library to the server. By default every connection sends
   * `CLIENT SETINFO LIB-NAME redis-ha-pool` and `CLIENT SETINFO LIB-VER <version>`, pipelined
   * into the handshake, so operators see the pool in `CLIENT LIST` (Redis >= 7.2, Valkey); a
   * server without the command (Redis 6.2, 7.0) refuses it and the refusal is ignored. Default false.
   */
  disableClientInfo?: boolean;
  /**
   * Appended to the library name as `redis-ha-pool(<tag>)` in `CLIENT SETINFO LIB-NAME`, to say
   * which application or wrapper uses the pool. Printable ASCII without spaces or parentheses.
   */
  clientInfoTag?: string;
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
export interface ResolvedConnectionOptions extends Required<Omit<ConnectionOptions, 'username' | 'password' | 'credentials' | 'credentialsTimeout' | 'clientName' | 'tls' | 'maintNotifications' | 'maintEndpointType' | 'maintRelaxedTimeout' | 'disableClientInfo' | 'clientInfoTag'>> {
  /** Where AUTH credentials come from; the secret itself is never enumerable. */
  auth: Auth;
  /** What the credentials provider is told this connection is for. */
  role: CredentialRole;
  clientName: string | undefined;
  /** Absent on connections built without the option table (the sentinel links): false, identify. */
  disableClientInfo?: boolean;
  clientInfoTag?: string | undefined;
  tls: TlsConnectionOptions | undefined;
  /** Maintenance notifications; undefined when this connection does not opt in. */
  maint?: ResolvedMaint | undefined;
}

/** One entry per connection option: its check, default and line of the reference page. */
export const CONNECTION_OPTIONS = defineOptions<ConnectionOptions>()({
  username: { kind: 'string', doc: 'ACL user (Redis 6+). Without `password` the pool logs in as that user with an empty password (what an ACL user with `nopass` accepts; any other user refuses it with `AuthenticationError`), never as `default`.' },
  password: { kind: 'string', allowEmpty: true, doc: 'AUTH password; never appears in errors, events, `stats()`, logs or `util.inspect`.' },
  credentials: {
    kind: 'custom', type: 'function',
    doc: '`async ({ address, role }) => ({ username?, password } | null)`: asked for every new connection and by `reauthenticate()`, for rotating passwords and short-lived tokens; not together with `username`/`password`. A provider that throws or is late fails that connection with `AuthenticationError`.',
    validate: (v, name) => {
      if (typeof v !== 'function') throw new TypeError(`Option ${name} must be a function ({ address, role }) => Promise<{ username?, password } | null> (got ${typeof v}).`);
    },
  },
  credentialsTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 5000, doc: 'Longest one `credentials` call may take (never beyond `connectTimeout`); beyond it the connection fails with `AuthenticationError`.' },
  db: { kind: 'integer', max: 1_000_000, default: 0, doc: 'SELECT after connecting; a `redis://host/2` URL sets it too. Standalone and Sentinel only: a cluster has only database 0 (`db: 0` is tolerated, another database refused, in a seed URL too).' },
  clientName: {
    kind: 'string', doc: 'CLIENT SETNAME (or HELLO SETNAME), so the connections show in CLIENT LIST.',
    check: (v, name) => {
      if (/\s/.test(v)) throw new TypeError(`Option ${name} must not contain spaces.`);
    },
  },
  disableClientInfo: { kind: 'boolean', default: false, doc: 'Do not send `CLIENT SETINFO LIB-NAME redis-ha-pool` / `LIB-VER <version>` in the handshake. By default they are pipelined with it so `CLIENT LIST` shows the pool (Redis >= 7.2, Valkey); servers without the command (6.2, 7.0) refuse it and the refusal is ignored.' },
  clientInfoTag: {
    kind: 'string', defaultDoc: 'none', doc: 'Sent as `LIB-NAME redis-ha-pool(<tag>)`: which application or wrapper uses the pool. Printable ASCII without spaces or parentheses.',
    // The server refuses spaces, newlines and other non-printable bytes in lib-name; parentheses
    // would make `redis-ha-pool(a(b))` ambiguous to whoever parses CLIENT LIST.
    check: (v, name) => {
      if (!/^[!-~]+$/.test(v) || /[()]/.test(v)) throw new TypeError(`Option ${name} must be printable ASCII without spaces, newlines or parentheses (got ${JSON.stringify(v)}).`);
    },
  },
  protocol: { kind: 'oneOf', values: [2, 3], default: 2, doc: '3 uses `HELLO 3` (maps decode to `Map`, sets to `Set`; typed helpers return the same shapes under both).' },
  tls: { kind: 'custom', type: '`true` or tls.connect options', validate: (v, name) => checkTlsOptions(name, v), defaultDoc: 'off', doc: '`true` or Node\'s `tls.connect` options (`ca`, `cert`, `key` are PEM contents, not paths); a `rediss://` URL turns it on. The certificate is verified and the host name checked (an IP address must be in the certificate\'s IP SANs).' },
  connectTimeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 5000, doc: 'TCP/TLS connect plus the handshake (which ends with a PING, so a server that is not Redis, or wants a password, is caught here); 0 disables.' },
  commandTimeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 5000, doc: 'Deadline of a call from the call to its reply, covering queueing and retries; 0 disables. Blocking commands get their server timeout added; one that blocks forever has no deadline.' },
  socketTimeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 10000, doc: 'A connection receiving nothing for this long while commands wait is destroyed, with every command it carries (keep it above your slowest command, or give slow calls their own `with({ timeout })`, which stretches it); blocking commands are exempt; 0 disables.' },
  maxReplyBytes: { kind: 'integer', unit: 'bytes', min: 1024, default: 512 * 1024 * 1024, doc: 'Largest bulk length or aggregate count accepted from the server (`ProtocolError` beyond).' },
  pingInterval: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 0, defaultDoc: '0; `ClusterPool`: 5000', doc: 'Heartbeat: a connection with nothing in flight for this long sends PING, and one whose PING gets no reply within another `pingInterval` is closed, so a peer that vanished without a RST is found before a command hits it. Never sent inside a MULTI. 0 disables. On by default in a cluster, where a node that vanished is otherwise found only when a command to it times out; the cost is one PING per idle connection per interval (docs/scale.md).' },
  keepAlive: {
    kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 10000, doc: 'TCP keepalive: initial delay of the OS\'s probes on every socket; 0 turns keepalive off, else at least 1000.',
    // Node rounds the delay down to whole seconds, and 0 s means the OS default (often 2 hours).
    check: (v, name) => {
      if (v > 0 && v < 1000) throw new TypeError(`Option ${name} must be 0 (off) or at least 1000 ms (got ${v}); the OS counts keepalive in whole seconds.`);
    },
  },
  maxPending: { kind: 'integer', min: 1, default: 100_000, doc: 'Most commands one connection holds (in flight plus queued), and most that may wait for a node\'s connection to (re)connect; beyond it a command rejects at once with `QueueFullError`, not sent.' },
  maxPendingBytes: { kind: 'integer', unit: 'bytes', min: 1024, max: 2 ** 32, default: 128 * 1024 * 1024, doc: 'Most bytes of unwritten commands per connection (queued, or in the socket buffer while the server reads slowly); beyond it `QueueFullError`, not sent. A single larger command still goes when nothing else waits.' },
  maintNotifications: { kind: 'oneOf', values: ['auto', 'enabled', 'disabled'], default: 'auto', doc: 'Maintenance notifications of Redis Software 8.0.2+ / Redis Cloud (MOVING, MIGRATING, FAILING_OVER, SMIGRATING pushes): `auto` opts in on RESP3 connections and ignores a refusal; `enabled` fails `create()` when refused (needs `protocol: 3`); `disabled` never opts in. See docs/managed-redis.md.' },
  maintEndpointType: { kind: 'oneOf', values: MAINT_ENDPOINT_TYPES, defaultDoc: 'inferred', doc: 'Form of the new address a MOVING carries (`none`: reconnect to the same name after half the notice). Default: a name over TLS by name, else an IP; internal for a private, loopback or link-local address reached, else external.' },
  maintRelaxedTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: DEFAULT_RELAXED_TIMEOUT, doc: 'While a notified maintenance is in progress on a connection, its command and socket timeouts (per-call ones included) are raised to at least this; never lowered.' },
});

/** The defaults of {@link CONNECTION_OPTIONS}. */
export const CONNECTION_DEFAULTS = withDefaults(CONNECTION_OPTIONS, {} as ConnectionOptions);

/** Option names that belong to the connection (shared by every mode). */
export const CONNECTION_OPTION_NAMES = optionNames(CONNECTION_OPTIONS);

/**
 * Validates connection options (TypeError naming the option) and applies defaults.
 * `fromUrl` fills in what a redis:// URL carried, explicit options win.
 */
export function resolveConnectionOptions(
  o: ConnectionOptions,
  fromUrl: UrlOptions = {},
  prefix = '',
  role: CredentialRole = 'master',
): ResolvedConnectionOptions {
  checkFields(CONNECTION_OPTIONS, o, prefix.replace(/\.$/, ''));
  return connectionFrom(o, fromUrl, role, prefix);
}

/** What a redis:// URL may carry. */
export type UrlOptions = { username?: string; password?: string; db?: number; tls?: boolean };

/** Connection options from checked ones: the URL fills in what the options leave out, then the defaults. */
export function connectionFrom(o: ConnectionOptions, fromUrl: UrlOptions = {}, role: CredentialRole = 'master', prefix = ''): ResolvedConnectionOptions {
  const n = (k: string) => prefix + k;
  if (o.credentials !== undefined && (o.password !== undefined || o.username !== undefined || fromUrl.password !== undefined || fromUrl.username !== undefined)) {
    throw new TypeError(`Option ${n('credentials')} cannot be combined with ${n('username')}/${n('password')} (or credentials in the URL): the provider supplies both.`);
  }
  const d = withDefaults(CONNECTION_OPTIONS, o);
  const { username: _u, password: _p, credentials: _c, credentialsTimeout: _t, maintNotifications: _m, maintEndpointType: _e, maintRelaxedTimeout: _r, ...rest } = d;
  return {
    ...rest,
    maint: resolveMaint(o, d.protocol, n),
    auth: o.credentials
      ? Auth.from(o.credentials, d.credentialsTimeout)
      : Auth.of(o.username ?? fromUrl.username, o.password ?? fromUrl.password),
    role,
    db: o.db ?? fromUrl.db ?? CONNECTION_DEFAULTS.db,
    tls: resolveTls(o.tls ?? fromUrl.tls),
  };
}

/**
 * The maintenance notification settings; undefined when connections do not opt in (`disabled`,
 * or `auto` under RESP2, which cannot carry pushes). The `natMap` of a Sentinel or Cluster pool
 * is read from the same options object (standalone has none).
 */
function resolveMaint(o: ConnectionOptions, protocol: 2 | 3, n: (k: string) => string): ResolvedMaint | undefined {
  const mode = o.maintNotifications ?? CONNECTION_DEFAULTS.maintNotifications;
  if (mode === 'enabled' && protocol !== 3) {
    throw new TypeError(`Option ${n('maintNotifications')}: 'enabled' needs ${n('protocol')}: 3 (maintenance notifications are RESP3 push messages); set ${n('protocol')}: 3, or use ${n('maintNotifications')}: 'auto'.`);
  }
  if (mode === 'disabled' || protocol !== 3) return undefined;
  const natMap = (o as { natMap?: NatMap }).natMap;
  return {
    mode,
    endpointType: o.maintEndpointType,
    relaxedTimeout: o.maintRelaxedTimeout ?? CONNECTION_DEFAULTS.maintRelaxedTimeout,
    mapAddress: natMap === undefined ? (a) => a : resolveNatMap(natMap),
  };
}

/** The bound of every time option (declared in ../options.ts; re-exported for the modules that read it here). */
export { MAX_TIMER };


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
