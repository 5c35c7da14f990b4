import { inspect } from 'node:util';
import { AuthenticationError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What kind of node a connection is for, as told to a credentials provider. */
export type CredentialRole = 'master' | 'replica' | 'sentinel' | 'node';

/** What a credentials provider is asked for. */
export interface CredentialContext {
  /** The node the connection is for. */
  address: NodeAddress;
  /**
   * `'master'` (a standalone server, a Sentinel-managed master), `'replica'` (Sentinel replica
   * reads), `'sentinel'` (a sentinel) or `'node'` (any Redis Cluster node: its role may change
   * at a failover without the connection changing).
   */
  role: CredentialRole;
}

/** The credentials of one connection. `username` defaults to `default`. */
export interface Credentials {
  /** ACL user; omitted means the `default` user. */
  username?: string;
  /** Sent with AUTH / HELLO only; never shown in errors, events, stats or `util.inspect`. */
  password: string;
}

/**
 * Returns the credentials for a new connection (or for `reauthenticate()`). Return `null` for a
 * node that needs no AUTH (for instance sentinels without a password).
 */
export type CredentialsProvider = (context: CredentialContext) => Promise<Credentials | null> | Credentials | null;

const REDACTED = '[redacted]';

/**
 * Where a connection's credentials come from: nothing, a static user and password, or a
 * provider called for every new connection.
 *
 * The secret lives in a private field, so it is never part of the enumerable state of an
 * options object, a pool or a connection: `util.inspect`, console output and `JSON.stringify`
 * of anything holding this show `[redacted]`.
 */
export class Auth {
  readonly #username: string | undefined;
  readonly #password: string | undefined;
  readonly #provider: CredentialsProvider | undefined;
  /** Longest a provider call may take (ms). */
  readonly timeout: number;

  private constructor(username: string | undefined, password: string | undefined, provider: CredentialsProvider | undefined, timeout: number) {
    this.#username = username;
    this.#password = password;
    this.#provider = provider;
    this.timeout = timeout;
  }

  /** No credentials (the server has none) or a static pair. */
  static of(username: string | undefined, password: string | undefined): Auth {
    return new Auth(username, password, undefined, 0);
  }

  /** Credentials fetched from `provider` for every connection, within `timeout` ms. */
  static from(provider: CredentialsProvider, timeout: number): Auth {
    return new Auth(undefined, undefined, provider, timeout);
  }

  /** True when credentials come from a provider. */
  get dynamic(): boolean {
    return this.#provider !== undefined;
  }

  /** True when a static password was given (a provider may or may not return one). */
  get hasPassword(): boolean {
    return this.#password !== undefined;
  }

  /** The user name for messages (never the password): the static one, else `default`. */
  get username(): string | undefined {
    return this.#username;
  }

  /**
   * The credentials for one connection, or null when none are configured. A provider that
   * throws, returns something else or takes longer than `min(timeout, deadline)` rejects with
   * `AuthenticationError` (its error as `cause`).
   */
  async resolve(context: CredentialContext, deadline = 0): Promise<Credentials | null> {
    const provider = this.#provider;
    if (provider === undefined) {
      // A user name alone logs in as that user with an empty password: right for an ACL user
      // with `nopass`, and WRONGPASS (an AuthenticationError) for one with a password. Dropping
      // it would run as `default`, with other rights than the caller asked for.
      if (this.#password === undefined) return this.#username === undefined ? null : { username: this.#username, password: '' };
      return { username: this.#username, password: this.#password };
    }
    const label = formatAddress(context.address);
    const left = deadline > 0 ? Math.max(1, deadline - Date.now()) : Infinity;
    const limit = Math.min(this.timeout > 0 ? this.timeout : Infinity, left);
    let timer: NodeJS.Timeout | undefined;
    try {
      const call = Promise.resolve().then(() => provider({ address: { host: context.address.host, port: context.address.port }, role: context.role }));
      const result = limit === Infinity
        ? await call
        : await Promise.race([
            call,
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error(`the credentials provider did not answer within ${Math.round(limit)} ms (credentialsTimeout ${this.timeout} ms)`)), limit);
            }),
          ]);
      return checkCredentials(result, label);
    } catch (err) {
      if (err instanceof AuthenticationError) throw err;
      throw new AuthenticationError(
        `The credentials provider failed for ${label} (role ${context.role}): ${(err as Error)?.message ?? String(err)}. No connection was made.`,
        { cause: err, address: context.address },
      );
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  [inspect.custom](): string {
    if (this.#provider) return `Auth { provider: [Function], timeout: ${this.timeout} }`;
    if (this.#password === undefined) return this.#username === undefined ? 'Auth { none }' : `Auth { username: ${JSON.stringify(this.#username)}, password: none }`;
    return `Auth { username: ${JSON.stringify(this.#username ?? 'default')}, password: ${REDACTED} }`;
  }

  toJSON(): string {
    return REDACTED;
  }
}

function checkCredentials(c: unknown, label: string): Credentials | null {
  if (c === null || c === undefined) return null;
  const { username, password } = c as { username?: unknown; password?: unknown };
  if (typeof c !== 'object' || typeof password !== 'string' || (username !== undefined && (typeof username !== 'string' || username === ''))) {
    throw new AuthenticationError(`The credentials provider returned something other than { username?: string, password: string } or null for ${label}; no connection was made.`);
  }
  return { username: username as string | undefined, password };
}

/** TLS option names whose values are secrets (private keys and their passphrases). */
const SECRET_TLS_KEYS = new Set(['key', 'passphrase', 'pfx', 'psk', 'pskCallback', 'secureContext', 'ticketKeys', 'sigalgs_private']);

/**
 * A copy of Node TLS options that prints without its private key material: `key`,
 * `passphrase`, `pfx` show as `[redacted]` in `util.inspect` and `JSON.stringify`.
 */
export function redactableTls<T extends object>(tls: T): T {
  const copy = { ...tls } as T & Record<PropertyKey, unknown>;
  const shown = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(copy)) {
      if (k === 'toJSON') continue;
      out[k] = SECRET_TLS_KEYS.has(k) && v !== undefined ? REDACTED : typeof v === 'string' && v.length > 80 ? `${v.slice(0, 27)}…(${v.length} chars)` : Buffer.isBuffer(v) ? `<Buffer ${v.length} bytes>` : v;
    }
    return out;
  };
  Object.defineProperty(copy, inspect.custom, { value: (_d: number, o: object) => `TlsOptions ${inspect(shown(), o)}`, enumerable: false });
  Object.defineProperty(copy, 'toJSON', { value: shown, enumerable: false });
  return copy;
}
