import { AuthenticationError, ConnectionError, ProtocolError, RedisError, TimeoutError } from '../errors.js';
import type { Arg, NodeAddress } from '../types.js';
import type { Credentials } from './credentials.js';
import type { ResolvedConnectionOptions } from './options.js';
import { handshakeClosedMessage } from './tls-errors.js';
import { LIBRARY_NAME, PACKAGE_VERSION } from '../version.js';

/** One command of the handshake and how messages name it. */
export interface HandshakeStep {
  args: Arg[];
  what: string;
  /** An error reply to it is ignored (the `auto` opt-in to maintenance notifications). */
  optional?: boolean;
}

/** The `what` of the maintenance notifications opt-in. */
export const MAINT_STEP = 'CLIENT MAINT_NOTIFICATIONS';

/** The `what` of the library identification (`CLIENT SETINFO`, Redis >= 7.2 and Valkey). */
export const CLIENT_INFO_STEP = 'CLIENT SETINFO';

/** `redis-ha-pool`, or `redis-ha-pool(<tag>)` with `clientInfoTag` (the form node-redis uses). */
export function libraryName(tag: string | undefined): string {
  return tag ? `${LIBRARY_NAME}(${tag})` : LIBRARY_NAME;
}

/**
 * The commands that greet a node, in order: HELLO 3 (with AUTH and SETNAME) or AUTH and CLIENT
 * SETNAME, CLIENT SETINFO LIB-NAME and LIB-VER (unless `disableClientInfo`), the opt-in to maintenance notifications (RESP3, when `maintEndpoint` is given),
 * SELECT, the owner's extra commands (READONLY …) and, with `verify`, a PING that proves a
 * Redis answers (not some other service, nor one that wants a password we lack).
 */
export function handshakeSteps(o: ResolvedConnectionOptions, creds: Credentials | null, extra: readonly Arg[][], verify: boolean, maintEndpoint?: string): HandshakeStep[] {
  const steps: HandshakeStep[] = [];
  if (o.protocol === 3) {
    const hello: Arg[] = ['HELLO', '3'];
    if (creds) hello.push('AUTH', creds.username ?? 'default', creds.password);
    if (o.clientName) hello.push('SETNAME', o.clientName);
    steps.push({ args: hello, what: 'HELLO 3' });
    if (o.maint && maintEndpoint !== undefined) {
      steps.push({ args: ['CLIENT', 'MAINT_NOTIFICATIONS', 'ON', 'moving-endpoint-type', maintEndpoint], what: MAINT_STEP, optional: o.maint.mode === 'auto' });
    }
  } else {
    if (creds) steps.push({ args: authArgs(creds), what: 'AUTH' });
    if (o.clientName) steps.push({ args: ['CLIENT', 'SETNAME', o.clientName], what: 'CLIENT SETNAME' });
  }
  // Not on the links to sentinels: they are the pool's own plumbing, and their least-privilege
  // users would log a denial for every connection.
  if (!o.disableClientInfo && o.role !== 'sentinel') {
    // Pipelined with the rest, so no round trip is added. Optional: Redis 6.2 and 7.0 answer
    // "unknown subcommand", an ACL user may lack client|setinfo; neither should fail the connection.
    steps.push(
      { args: ['CLIENT', 'SETINFO', 'LIB-NAME', libraryName(o.clientInfoTag)], what: CLIENT_INFO_STEP, optional: true },
      { args: ['CLIENT', 'SETINFO', 'LIB-VER', PACKAGE_VERSION], what: CLIENT_INFO_STEP, optional: true },
    );
  }
  if (o.db) steps.push({ args: ['SELECT', o.db], what: `SELECT ${o.db}` });
  for (const args of extra) steps.push({ args: [...args], what: String(args[0]) });
  if (verify) steps.push({ args: ['PING'], what: 'PING' });
  return steps;
}

/** What a handshake failure is judged by. */
export interface HandshakeContext {
  label: string;
  address: NodeAddress;
  creds: Credentials | null;
  tls: boolean;
  /** Why the connection closed, when it did. */
  closedError: Error | undefined;
}

/**
 * What one step's outcome means: undefined to go on, else the error `connect()` rejects with.
 * A lost connection during the handshake is a failed connect, never an uncertain write (a TLS
 * alert such as "certificate required" arrives only after our first write under TLS 1.3).
 */
export function handshakeError(step: HandshakeStep, outcome: unknown, c: HandshakeContext): Error | undefined {
  if (!(outcome instanceof Error)) return undefined;
  if (step.optional && outcome instanceof RedisError) return undefined;
  if (!(outcome instanceof RedisError)) {
    // Bytes that are not RESP surface as the protocol error itself, the clearest diagnosis.
    if (c.closedError instanceof ProtocolError || c.closedError instanceof TimeoutError) return c.closedError;
    const root = (c.closedError?.cause as Error | undefined) ?? c.closedError ?? outcome;
    return new ConnectionError(handshakeClosedMessage(c.label, step.what, root, c.tls), { cause: root, address: c.address });
  }
  // Old servers echo an unknown command's arguments ("HELLO 3 AUTH user <password>").
  const r = c.creds ? scrubSecret(outcome, c.creds.password) : outcome;
  if (step.what === MAINT_STEP) {
    return new ConnectionError(
      `${c.label} refused maintenance notifications (${step.args.join(' ')}: ${clause(r.message)}). maintNotifications: 'enabled' needs a server that sends them (Redis Software 8.0.2+, Redis Cloud); use maintNotifications: 'auto' to connect without them.`,
      { cause: r, address: c.address },
    );
  }
  // Any other error reply to PING still proves a RESP server answered.
  if (step.what === 'PING' && r.code !== 'NOAUTH') return undefined;
  // Before the AUTH heuristic: a server without HELLO echoes "… 'AUTH' 'user' …" in its refusal.
  if (step.what === 'HELLO 3' && (r.code === 'NOPROTO' || /unknown command/i.test(r.message))) {
    return new ConnectionError(`${c.label} does not support RESP3 (HELLO 3 failed: ${r.message}); use protocol: 2.`, { cause: r, address: c.address });
  }
  if (r.code === 'NOAUTH' && c.creds === null) {
    return new AuthenticationError(
      `${c.label} requires authentication (${clause(r.message)}) and no password was given; set the password option (and username for an ACL user).`,
      { cause: r, address: c.address },
    );
  }
  // Redis 6+ without requirepass refuses AUTH <password> for the default user.
  if (/without any password configured/i.test(r.message) && (step.what === 'AUTH' || step.what === 'HELLO 3')) {
    return new AuthenticationError(
      `${c.label} has no password set for user "default", but a password was given: remove the password option (or set requirepass on the server)${c.creds?.username ? '' : '; for an ACL user also set username'}.`,
      { cause: r, address: c.address },
    );
  }
  if (r.code === 'WRONGPASS' || r.code === 'NOAUTH' || /AUTH|password/i.test(r.message) && (step.what === 'AUTH' || step.what === 'HELLO 3')) {
    const user = c.creds?.username;
    return new AuthenticationError(
      `Authentication failed for user "${user ?? 'default'}" at ${c.label}: ${sentence(r.message)} ` +
        (user
          ? `Check the password option, and that the ACL user "${user}" exists and is on (ACL LIST on the server).`
          : 'Check the password option (for the default user it is the server\'s requirepass; for an ACL user also set username).'),
      { cause: r, address: c.address },
    );
  }
  return new ConnectionError(`Handshake with ${c.label} failed at ${step.what}: ${r.message}`, { cause: r, address: c.address });
}

/** AUTH with or without a user name. */
export function authArgs(creds: Credentials): Arg[] {
  return creds.username ? ['AUTH', creds.username, creds.password] : ['AUTH', creds.password];
}

/** The same server error without `secret` in its message (a reply that echoed our AUTH arguments). */
export function scrubSecret(err: RedisError, secret: string): RedisError {
  if (secret === '' || !err.message.includes(secret)) return err;
  return new RedisError(err.message.split(secret).join('[redacted]'), { address: err.address });
}

/** A message as a clause inside a longer sentence: without its final period. */
export function clause(message: string): string {
  const m = message.replace(/\s+/g, ' ').trim();
  return m.endsWith('.') ? m.slice(0, -1) : m;
}

/** A message as a sentence of its own: ends with exactly one stop. */
export function sentence(message: string): string {
  const m = clause(message);
  return /[?!]$/.test(m) ? m : `${m}.`;
}
