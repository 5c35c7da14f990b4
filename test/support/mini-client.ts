/**
 * A one-shot RESP client for the harness's own polling (readiness, topology
 * queries). It opens a connection, optionally authenticates, pipelines the
 * commands, reads one reply per command and closes. Spawning `redis-cli` for
 * every 50 ms poll would cost far more, and the library under test must not be
 * used to test itself.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { NodeAddress } from '../../src/types.js';
import { decodeReply, encodeCommand, ReplyError, type RespValue } from './resp-wire.js';

export interface MiniClientOptions {
  /** Password for AUTH (default user unless `username` is set). */
  password?: string | undefined;
  username?: string | undefined;
  /** Whole-exchange deadline (connect + replies). Default 1000 ms. */
  timeoutMs?: number;
  /**
   * Node TLS options to connect over TLS, or `false` for plain TCP. Default: the options
   * registered for this address with `registerTlsAddress` (the harness registers every node
   * of a TLS topology), else plain TCP.
   */
  tls?: tls.ConnectionOptions | false | undefined;
}

// ------------------------------------------------------------------ TLS addresses

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);
const tlsKey = (a: NodeAddress): string => `${LOOPBACK.has(a.host) ? '127.0.0.1' : a.host}:${a.port}`;
const tlsAddresses = new Map<string, tls.ConnectionOptions>();

/**
 * Makes every harness query to `address` (mini-client, and so the readiness checks and the
 * helpers in `sentinel-helpers.ts`) use TLS with these options. The harness calls it for each
 * node of a TLS topology and `unregisterTlsAddress` when the topology stops. Ports are never
 * handed out twice in one process (`ports.ts`), so an entry cannot outlive its node's meaning.
 */
export function registerTlsAddress(address: NodeAddress, options: tls.ConnectionOptions): void {
  tlsAddresses.set(tlsKey(address), options);
}

export function unregisterTlsAddress(address: NodeAddress): void {
  tlsAddresses.delete(tlsKey(address));
}

/** The TLS options registered for `address`, if it is a node of a TLS topology. */
export function registeredTls(address: NodeAddress): tls.ConnectionOptions | undefined {
  return tlsAddresses.get(tlsKey(address));
}

/**
 * Sends several commands on one fresh connection and returns their replies
 * in order. Error replies are returned as `ReplyError` values, not thrown;
 * connection failures and timeouts reject.
 */
export function sendCommands(
  address: NodeAddress,
  commands: readonly (readonly (string | number)[])[],
  options: MiniClientOptions = {},
): Promise<RespValue[]> {
  const timeoutMs = options.timeoutMs ?? 1000;
  const auth: (string | number)[][] = [];
  if (options.password !== undefined) {
    auth.push(options.username ? ['AUTH', options.username, options.password] : ['AUTH', options.password]);
  }
  const all = [...auth, ...commands];
  const tlsOptions = options.tls === false ? undefined : (options.tls ?? registeredTls(address));
  return new Promise<RespValue[]>((resolve, reject) => {
    const socket = tlsOptions
      ? tls.connect({ ...tlsOptions, host: address.host, port: address.port })
      : net.connect({ host: address.host, port: address.port });
    let buf = Buffer.alloc(0);
    const replies: RespValue[] = [];
    let done = false;
    const finish = (err: Error | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) {
        reject(err);
        return;
      }
      const authReply = replies.slice(0, auth.length).find((r) => r instanceof ReplyError);
      if (authReply) reject(authReply);
      else resolve(replies.slice(auth.length));
    };
    const timer = setTimeout(
      () => finish(new Error(`no reply from ${address.host}:${address.port} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.setNoDelay(true);
    socket.on(tlsOptions ? 'secureConnect' : 'connect', () => socket.write(Buffer.concat(all.map((c) => encodeCommand(c)))));
    socket.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      let pos = 0;
      try {
        for (;;) {
          const r = decodeReply(buf, pos);
          if (!r) break;
          replies.push(r.value);
          pos = r.next;
        }
      } catch (err) {
        finish(err as Error);
        return;
      }
      buf = buf.subarray(pos);
      if (replies.length >= all.length) finish(undefined);
    });
    socket.on('error', (err) => finish(err));
    socket.on('close', () =>
      finish(new Error(`connection to ${address.host}:${address.port} closed after ${replies.length}/${all.length} replies`)),
    );
  });
}

/** Sends one command; an error reply rejects with the `ReplyError`. */
export async function sendCommand(
  address: NodeAddress,
  args: readonly (string | number)[],
  options: MiniClientOptions = {},
): Promise<RespValue> {
  const [reply] = await sendCommands(address, [args], options);
  if (reply instanceof ReplyError) throw reply;
  return reply as RespValue;
}

/** Parses `INFO` text into a field map (sections merged). */
export function parseInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

/** Turns a flat `[k1, v1, k2, v2, ...]` reply (e.g. `SENTINEL MASTER`) into a map. */
export function pairsToMap(reply: RespValue): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), String(reply[i + 1]));
  return out;
}
