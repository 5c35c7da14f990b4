import type { Address, NodeAddress } from './types.js';

/** An address with what a URL may carry besides host and port. */
export interface ParsedAddress extends NodeAddress {
  username?: string;
  password?: string;
  db?: number;
  tls?: boolean;
}

/**
 * Parses `'host:port'`, `'[::1]:6379'`, `redis://[user:pass@]host:port[/db]`, `rediss://…`
 * or `{ host, port }`. Throws a TypeError naming `what` (the option or argument) when invalid.
 * A URL's query string (`?timeout=…`, `?protocol=3`) is refused rather than ignored: each of
 * those settings is an option, and a silently dropped one would look applied.
 */
export function parseAddress(input: Address, what: string): ParsedAddress {
  if (typeof input === 'object' && input !== null) {
    const { host, port } = input as { host?: unknown; port?: unknown };
    if (typeof host !== 'string' || host === '') throw new TypeError(`${what}.host must be a non-empty string.`);
    checkPort(port, `${what}.port`);
    return { host, port: port as number };
  }
  if (typeof input !== 'string' || input === '') throw new TypeError(`${what} must be 'host:port', a redis:// URL or { host, port } (got ${input === '' ? 'an empty string' : typeof input}).`);
  if (/^rediss?:\/\//i.test(input)) {
    checkUrlShape(input, what);
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new TypeError(`${what} is not a valid URL (check the host, and that the port is a number from 1 to 65535).`);
    }
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (!host) throw new TypeError(`${what} has no host.`);
    const port = url.port === '' ? 6379 : Number(url.port);
    checkPort(port, `${what} port`);
    const out: ParsedAddress = { host, port };
    if (url.protocol.toLowerCase() === 'rediss:') out.tls = true;
    if (url.username) out.username = decodeURIComponent(url.username);
    if (url.password) out.password = decodeURIComponent(url.password);
    const path = url.pathname.replace(/^\//, '');
    if (path !== '') {
      const db = Number(path);
      if (!Number.isInteger(db) || db < 0) throw new TypeError(`${what} database must be a non-negative integer (the URL path).`);
      out.db = db;
    }
    return out;
  }
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(input) ?? /^([^:]+):(\d+)$/.exec(input);
  if (!m) {
    const hint = input.includes('@') ? "; to pass credentials use a redis:// URL (redis://user:pass@host:port) or the username and password options" : '';
    throw new TypeError(`${what} must look like 'host:port' or a redis:// URL (got '${redactAddress(input)}')${hint}.`);
  }
  const port = Number(m[2]);
  checkPort(port, `${what} port`);
  return { host: m[1]!, port };
}

/** What options replace the query parameters other clients read from a URL. */
const QUERY_HINTS: Record<string, string> = {
  timeout: 'connectTimeout or commandTimeout',
  connecttimeout: 'connectTimeout',
  commandtimeout: 'commandTimeout',
  sockettimeout: 'socketTimeout',
  protocol: 'protocol (2 or 3)',
  db: 'the URL path (redis://host:port/2) or the db option',
  password: 'the URL user info (redis://:password@host) or the password option',
  username: 'the URL user info (redis://user:password@host) or the username option',
  name: 'clientName',
  clientname: 'clientName',
  family: 'a host name or IP address of the family you want',
};

/**
 * Checks what `new URL()` would accept but we cannot use (a query string, a fragment) or would
 * reject with a message that does not say why (a port that is not a number from 1 to 65535).
 * Nothing from the user info is echoed.
 */
function checkUrlShape(input: string, what: string): void {
  const m = /^rediss?:\/\/(?:[^/?#]*@)?(\[[^\]]*\]|[^:/?#]*)(?::([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(input);
  if (!m) return; // new URL() reports it
  const [, host, port, path, query, fragment] = m;
  // An '@' past the user info means a password holding '/', '?' or '#': what follows is not a
  // port or a query, and must not be echoed.
  if ([host, port, path, query, fragment].some((part) => part?.includes('@'))) {
    throw new TypeError(`${what} is not a valid URL: characters such as / ? # @ in the user name or password must be percent-encoded (encodeURIComponent).`);
  }
  if (port !== undefined && port !== '' && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    throw new TypeError(`${what} port must be an integer from 1 to 65535 (got '${port}').`);
  }
  if (query !== undefined) {
    const names = [...new URLSearchParams(query).keys()];
    const hints = names.map((n) => `'${n}'${QUERY_HINTS[n.toLowerCase()] ? ` (use ${QUERY_HINTS[n.toLowerCase()]})` : ''}`);
    throw new TypeError(
      `${what} has URL query parameters ${hints.join(', ') || "'?'"}; they are not read from the URL: pass them as options of create() instead, so none is silently ignored.`,
    );
  }
  if (fragment !== undefined) throw new TypeError(`${what} has a URL fragment ('#…'); remove it.`);
}

function checkPort(port: unknown, what: string): void {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    const got = typeof port === 'string' ? `the string ${JSON.stringify(port)}` : typeof port === 'number' ? String(port) : typeof port;
    throw new TypeError(`${what} must be an integer from 1 to 65535 (got ${got}).`);
  }
}

/**
 * Removes `user:password@` from an address or URL given by a user, so a message about a bad
 * address never repeats a secret.
 */
export function redactAddress(input: string): string {
  return input.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^@/\s]*@/i, (_m, scheme: string | undefined) => `${scheme ?? ''}[redacted]@`);
}
