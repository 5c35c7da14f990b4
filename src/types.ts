/** A node as events, errors and `master()` report it. */
export interface NodeAddress {
  /** Host name or IP address (IPv6 without brackets). */
  host: string;
  /** TCP port. */
  port: number;
}

/**
 * Where to connect: `'host:port'`, a `redis://[user:pass@]host:port[/db]` or
 * `rediss://…` URL, or `{ host, port }`.
 */
export type Address = string | NodeAddress;

/** One argument of a command. Numbers and bigints are sent as their decimal text. */
export type Arg = string | Buffer | number | bigint;

/**
 * A decoded reply. RESP3 maps decode to `Map`, sets to `Set`; RESP2 arrays to arrays.
 * The typed helpers normalise these so they return the same shapes under RESP2 and RESP3.
 */
export type Reply =
  | string
  | Buffer
  | number
  | bigint
  | boolean
  | null
  | Reply[]
  | Map<Reply, Reply>
  | Set<Reply>;

/** Formats an address as `host:port` for messages and map keys. */
export function formatAddress(a: NodeAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
