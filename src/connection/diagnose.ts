/**
 * A second look when a connection fails in a way that has several explanations: one short,
 * read-only probe on a fresh socket turns a guess ("check the server's log") into a statement
 * of what the server wants. Only failures pay for it, each bounded by the connect budget.
 *
 * - A TLS connection the server cut right after the handshake: under TLS 1.3 the client's
 *   handshake completes before the server checks the client certificate, so the server's alert
 *   ("certificate required", "unknown ca") arrives after our first write and loses the race to
 *   the reset that write provokes (`write ECONNRESET`). A probe that completes the handshake and
 *   writes nothing receives the alert itself.
 * - A plain connection the server cut during the handshake: a probe that completes a TLS
 *   handshake proves the port speaks TLS.
 * - A TLS handshake that gets no answer: a plain `PING` answered in RESP proves a plain port.
 */
import net from 'node:net';
import tls from 'node:tls';
import { ConnectionError } from '../errors.js';
import type { NodeAddress } from '../types.js';
import { tlsHint } from './tls-errors.js';

/** Longest any one probe waits, also when more of the connect budget is left. */
export const PROBE_LIMIT_MS = 2000;

function budget(ms: number): number {
  return Math.max(0, Math.min(PROBE_LIMIT_MS, ms));
}

function tlsOptions(address: NodeAddress, options: tls.ConnectionOptions): tls.ConnectionOptions {
  return { ...options, host: address.host, port: address.port, servername: options.servername ?? (net.isIP(address.host) ? undefined : address.host) };
}

/**
 * Connects with the same TLS options, writes nothing, and resolves with the TLS error the server
 * sends (an alert such as "certificate required"), or undefined when none comes within `ms`.
 */
export function readTlsAlert(address: NodeAddress, options: tls.ConnectionOptions, ms: number): Promise<Error | undefined> {
  const limit = budget(ms);
  if (limit === 0) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const socket = tls.connect(tlsOptions(address, options));
    const done = (err: Error | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(err);
    };
    const timer = setTimeout(() => done(undefined), limit);
    socket.on('error', (err) => done(tlsHint(err) !== undefined ? err : undefined));
    socket.on('close', () => done(undefined));
    // Reading is what delivers the alert: the server has nothing else to send us.
    socket.on('data', () => done(undefined));
  });
}

/** True when `address` completes a TLS handshake (its certificate is not checked: only the protocol is). */
export function speaksTls(address: NodeAddress, ms: number): Promise<boolean> {
  const limit = budget(ms);
  if (limit === 0) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = tls.connect({ host: address.host, port: address.port, rejectUnauthorized: false, servername: net.isIP(address.host) ? undefined : address.host });
    const done = (yes: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(yes);
    };
    const timer = setTimeout(() => done(false), limit);
    socket.once('secureConnect', () => done(true));
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

/**
 * Sends a plain `PING` and resolves with the first line of the reply when it is RESP (`+PONG`,
 * `-NOAUTH …`), or undefined.
 */
export function plainRespReply(address: NodeAddress, ms: number, signal?: AbortSignal): Promise<string | undefined> {
  const limit = budget(ms);
  if (limit === 0 || signal?.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const socket = net.connect({ host: address.host, port: address.port });
    let got = '';
    const done = (line: string | undefined) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(line);
    };
    const onAbort = () => done(undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => done(undefined), limit);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const end = got.indexOf('\r\n');
      if (end < 0 && got.length < 256) return;
      const line = end < 0 ? got : got.slice(0, end);
      done(/^[+-]/.test(line) ? line : undefined);
    });
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
  });
}

/** How long a TLS handshake may go unanswered before the port is asked in plain RESP (ms). */
export const PLAIN_CHECK_AFTER_MS = 1000;

/**
 * While a TLS connect runs: once its handshake has gone unanswered for a second (or half of
 * connectTimeout), asks the port in plain RESP, and calls `found` with the error to fail the
 * connect with when a plain Redis answers. A plain Redis waits silently for the end of a line the
 * TLS greeting never sends, so without this the caller would only learn "no answer" when
 * connectTimeout ends. Returns the function that stops the check (timer and probe).
 */
export function watchForPlainPort(address: NodeAddress, label: string, connectDeadline: number, settled: () => boolean, found: (err: ConnectionError) => void): () => void {
  const probe = new AbortController();
  const after = connectDeadline > 0 ? Math.min(PLAIN_CHECK_AFTER_MS, (connectDeadline - Date.now()) / 2) : PLAIN_CHECK_AFTER_MS;
  const timer = setTimeout(() => {
    const left = connectDeadline > 0 ? connectDeadline - Date.now() : PROBE_LIMIT_MS;
    void plainRespReply(address, left, probe.signal).then((line) => {
      if (line === undefined || settled()) return;
      const reply = JSON.stringify(line.slice(0, 40));
      found(new ConnectionError(
        `${label} is a plain-TCP port: it answered a plain PING (${reply}) and not the TLS handshake. Remove the tls option (use redis://, not rediss://), or connect to the server's tls-port.`,
        { cause: new Error(`The TLS handshake with ${label} got no answer; a plain PING got ${reply}`), address },
      ));
    });
  }, after);
  return () => {
    clearTimeout(timer);
    probe.abort();
  };
}
