/**
 * The errors a newcomer meets in the first hour, against real servers: each says what is wrong
 * and what to do, in the words a user acts on, and keeps the underlying error as `cause`.
 *
 * - a server that requires a client certificate (`tls-auth-clients yes`) and a pool without
 *   one: the server's TLS alert is read (TLS 1.3 sends it after the client's first write, so it
 *   used to lose the race to `write ECONNRESET`) and the message names tls.cert / tls.key;
 * - a port nothing listens on; TLS on a plain port; plain TCP on a TLS port;
 * - a wrong password, a password for a server without one, a wrong ACL user;
 * - an unknown master name, a data node given as a sentinel;
 * - a cluster seed that is not a cluster node (a plain server, a sentinel).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AllSentinelsDownError,
  AuthenticationError,
  ClusterPool,
  ConnectionError,
  MasterNotMonitoredError,
  SentinelPool,
  StandalonePool,
  TimeoutError,
  UncertainWriteError,
} from '../../src/index.js';
import {
  freePort,
  makeTestCerts,
  startSentinel,
  startStandalone,
  type SentinelTopology,
  type StandaloneTopology,
  type TestCerts,
} from '../support/topology.js';

const PASSWORD = 'first-hour-pass-9f2c';

let certs: TestCerts;
let plain: StandaloneTopology;
let secured: StandaloneTopology;
let mutual: StandaloneTopology;
let guarded: StandaloneTopology;
let sentinel: SentinelTopology;

const hostPort = (a: { host: string; port: number }) => `${a.host}:${a.port}`;

/** Every message and `code` along an error's cause chain, for assertion messages. */
function chain(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: unknown; message?: unknown; code?: unknown };
    parts.push(`${String(x.name ?? typeof e)}${x.code !== undefined ? `[${String(x.code)}]` : ''}: ${String(x.message ?? e)}`);
  }
  return parts.join(' <- ');
}

/** Expects `create` to reject and returns the error (closing a pool that was made by mistake). */
async function rejection(create: () => Promise<{ close(): Promise<void> }>): Promise<Error> {
  let pool: { close(): Promise<void> } | undefined;
  try {
    pool = await create();
  } catch (err) {
    return err as Error;
  }
  await pool.close();
  throw new Error('create() succeeded; expected it to reject');
}

beforeAll(async () => {
  certs = await makeTestCerts();
  [plain, secured, mutual, guarded, sentinel] = await Promise.all([
    startStandalone(),
    startStandalone({ tls: { certs } }),
    startStandalone({ tls: { certs, authClients: true } }),
    startStandalone({ password: PASSWORD, acl: [`user app on >${PASSWORD} ~* &* +@all`] }),
    startSentinel({ replicas: 0, sentinels: 1 }),
  ]);
});

afterAll(async () => {
  await Promise.all([plain, secured, mutual, guarded, sentinel].map((t) => t?.stop()));
});

describe('a server that requires a client certificate, and a pool without one', () => {
  it('says a client certificate is required (tls.cert / tls.key), with the server\'s alert as cause, every time', async () => {
    // Once was luck: the alert used to win the race against `write ECONNRESET` about 1 time in 20.
    for (let i = 0; i < 8; i++) {
      const err = await rejection(() => StandalonePool.create(hostPort(mutual.address), { tls: { ca: certs.ca.cert }, connectTimeout: 10_000 }));
      expect(err, chain(err)).toBeInstanceOf(ConnectionError);
      expect(err, chain(err)).not.toBeInstanceOf(UncertainWriteError);
      expect(err.message, chain(err)).toContain('the server\'s TLS alert "certificate required"');
      expect(err.message, chain(err)).toContain('requires a client certificate (tls-auth-clients yes) and none was sent: pass tls.cert and tls.key');
      expect(err.message, chain(err)).not.toMatch(/ECONNRESET|Check the server's log/);
      expect((err.cause as { code?: string }).code, chain(err)).toBe('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED');
    }
  });

  it('says the same when the first exchange is a cluster map request rather than the handshake', async () => {
    const err = await rejection(() => ClusterPool.create([hostPort(mutual.address)], { tls: { ca: certs.ca.cert }, connectTimeout: 10_000 }));
    expect(err.message, chain(err)).toContain('requires a client certificate (tls-auth-clients yes) and none was sent: pass tls.cert and tls.key');
  });

  it('with the certificate and key it connects (the message pointed at the fix)', async () => {
    const pool = await StandalonePool.create(hostPort(mutual.address), { tls: { ca: certs.ca.cert, cert: certs.client.cert, key: certs.client.key } });
    try {
      expect(await pool.call('PING')).toBe('PONG');
    } finally {
      await pool.close();
    }
  });
});

describe('the wrong port', () => {
  it('nothing listens: the connection was refused, check host, port and that the server runs', async () => {
    const port = await freePort();
    const err = await rejection(() => StandalonePool.create(`127.0.0.1:${port}`));
    expect(err, chain(err)).toBeInstanceOf(ConnectionError);
    expect(err.message).toBe(
      `Connection to 127.0.0.1:${port} refused (connect ECONNREFUSED 127.0.0.1:${port}): no server accepts connections on that port. Check the host and port, and that the server is running.`,
    );
    expect((err.cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it('TLS on a plain port: says it is a plain-TCP port (it answered a plain PING) instead of waiting out connectTimeout', async () => {
    const err = await rejection(() => StandalonePool.create(hostPort(plain.address), { tls: { ca: certs.ca.cert }, connectTimeout: 30_000, commandTimeout: 30_000 }));
    // A ConnectionError, not the TimeoutError of a handshake left to run out its 30 s.
    expect(err, chain(err)).toBeInstanceOf(ConnectionError);
    expect(err, chain(err)).not.toBeInstanceOf(TimeoutError);
    expect(err.message).toContain(`${hostPort(plain.address)} is a plain-TCP port: it answered a plain PING ("+PONG") and not the TLS handshake.`);
    expect(err.message).toContain('Remove the tls option (use redis://, not rediss://), or connect to the server\'s tls-port.');
    expect(err.cause, chain(err)).toBeInstanceOf(Error);
  });

  it('plain TCP on a TLS port: says the port speaks TLS and to set tls', async () => {
    const err = await rejection(() => StandalonePool.create(hostPort(secured.address)));
    expect(err, chain(err)).toBeInstanceOf(ConnectionError);
    expect(err, chain(err)).not.toBeInstanceOf(UncertainWriteError);
    expect(err.message).toContain(`${hostPort(secured.address)} speaks TLS`);
    expect(err.message).toContain('set the tls option (with the server\'s CA as tls.ca) or use a rediss:// URL.');
    expect(err.cause, chain(err)).toBeInstanceOf(Error);
  });

  it('a data node given where the sentinels belong: says it is not a sentinel, and which pool takes what', async () => {
    const err = await rejection(() => SentinelPool.create('mymaster', [hostPort(plain.address)]));
    expect(err, chain(err)).toBeInstanceOf(AllSentinelsDownError);
    expect(err.message).toContain('know no SENTINEL command, so they are Redis servers, not sentinels');
    expect(err.message).toContain('SentinelPool.create() takes the addresses of the sentinels');
    expect(err.message).not.toContain('running and reachable');
  });
});

describe('credentials', () => {
  it('a wrong password: AuthenticationError saying to check the password option, without the password', async () => {
    const wrong = 'not-the-password-41d7';
    const err = await rejection(() => StandalonePool.create(hostPort(guarded.address), { password: wrong }));
    expect(err, chain(err)).toBeInstanceOf(AuthenticationError);
    expect(err.message).toContain(`Authentication failed for user "default" at ${hostPort(guarded.address)}: WRONGPASS`);
    expect(err.message).toContain('Check the password option (for the default user it is the server\'s requirepass; for an ACL user also set username).');
    expect(chain(err)).not.toContain(wrong);
    expect(chain(err)).not.toContain(PASSWORD);
    expect((err.cause as { code?: string }).code).toBe('WRONGPASS');
  });

  it('an ACL user that does not exist: says to check that the user exists and is on', async () => {
    const err = await rejection(() => StandalonePool.create(hostPort(guarded.address), { username: 'nobody', password: PASSWORD }));
    expect(err, chain(err)).toBeInstanceOf(AuthenticationError);
    expect(err.message).toContain('Check the password option, and that the ACL user "nobody" exists and is on (ACL LIST on the server).');
    expect(chain(err)).not.toContain(PASSWORD);
  });

  it('no password for a server that wants one: says to set the password option', async () => {
    const err = await rejection(() => StandalonePool.create(hostPort(guarded.address)));
    expect(err, chain(err)).toBeInstanceOf(AuthenticationError);
    expect(err.message).toContain('requires authentication');
    expect(err.message).toContain('set the password option');
  });

  it('a password for a server that has none: says so, rather than "authentication failed"', async () => {
    const err = await rejection(() => StandalonePool.create(hostPort(plain.address), { password: 'unneeded-7c1e' }));
    expect(err, chain(err)).toBeInstanceOf(AuthenticationError);
    expect(err.message).toBe(
      `${hostPort(plain.address)} has no password set for user "default", but a password was given: remove the password option (or set requirepass on the server); for an ACL user also set username.`,
    );
    expect(chain(err)).not.toContain('unneeded-7c1e');
  });
});

describe('the wrong name or the wrong kind of server', () => {
  it('an unknown master name: MasterNotMonitoredError naming it and how to list the names', async () => {
    const err = await rejection(() => SentinelPool.create('no-such-master', sentinel.sentinelAddresses.map(hostPort)));
    expect(err, chain(err)).toBeInstanceOf(MasterNotMonitoredError);
    expect(err.message).toContain('No sentinel monitors a master named "no-such-master"');
    // It lists the names the sentinels do monitor (SENTINEL MASTERS), and what to do with them.
    expect(err.message).toContain(`they monitor "${sentinel.masterName}"`);
    expect(err.message).toContain('Pass one of these names to SentinelPool.create()');
    // With the right name it connects: the error was about the name alone.
    const pool = await SentinelPool.create(sentinel.masterName, sentinel.sentinelAddresses.map(hostPort));
    await pool.close();
  });

  it('a cluster seed that is a plain server: says it is no cluster node, and which pool to use', async () => {
    const err = await rejection(() => ClusterPool.create([hostPort(plain.address)]));
    expect(err, chain(err)).toBeInstanceOf(ConnectionError);
    expect(err.message).toContain(`No seed is a cluster node (${hostPort(plain.address)} is a Redis server with cluster support disabled (cluster-enabled no)`);
    expect(err.message).toContain('For one server use StandalonePool; for a master behind Sentinel use SentinelPool');
    expect(err.cause, chain(err)).toBeInstanceOf(AggregateError);
  });

  it('a cluster seed that is a sentinel: says it knows no CLUSTER command', async () => {
    const seed = hostPort(sentinel.sentinelAddresses[0]!);
    const err = await rejection(() => ClusterPool.create([seed]));
    expect(err.message).toContain(`No seed is a cluster node (${seed} is a server that knows no CLUSTER command (a sentinel?)`);
  });
});
