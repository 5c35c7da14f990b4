/**
 * Security decisions without sockets: what a TLS error means, how addresses with credentials
 * are redacted, which options are refused, and that credential holders never print secrets.
 */
import util from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAddress, redactAddress } from '../../src/address.js';
import { Auth } from '../../src/connection/credentials.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { handshakeError, handshakeSteps } from '../../src/connection/handshake.js';
import { PACKAGE_VERSION } from '../../src/version.js';
import { handshakeClosedMessage, tlsHint } from '../../src/connection/tls-errors.js';
import { resolveClusterOptions } from '../../src/cluster/options.js';
import { resolveSentinelOptions } from '../../src/sentinel/options.js';
import { AuthenticationError, ConnectionError, RedisError, UncertainWriteError } from '../../src/index.js';

const SECRET = 'CANARY-s3cr3t-7f1d';

const tlsError = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('tlsHint: what a TLS failure means and what to do', () => {
  it.each([
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', /tls\.ca/],
    ['SELF_SIGNED_CERT_IN_CHAIN', /tls\.ca/],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', /tls\.ca/],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', /tls\.ca/],
    ['ERR_TLS_CERT_ALTNAME_INVALID', /servername|subjectAltName/],
    ['CERT_HAS_EXPIRED', /expired/],
    ['CERT_NOT_YET_VALID', /clocks/],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', /client certificate.*tls\.cert and tls\.key/],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', /refused our client certificate/],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', /refused our client certificate/],
    ['ERR_SSL_WRONG_VERSION_NUMBER', /speak TLS/],
    ['ERR_SSL_SOMETHING_ELSE', /TLS handshake failed/],
  ])('%s -> %s', (code, hint) => {
    expect(tlsHint(tlsError(code))).toMatch(hint);
  });

  it('is undefined for errors that are not about TLS', () => {
    expect(tlsHint(tlsError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'))).toBeUndefined();
    expect(tlsHint(tlsError('ECONNRESET', 'read ECONNRESET'))).toBeUndefined();
    expect(tlsHint(undefined)).toBeUndefined();
    expect(tlsHint('a string')).toBeUndefined();
  });

  it('recognises a "certificate required" alert by its message alone', () => {
    expect(tlsHint(new Error('error:0A00045C:SSL routines::tlsv13 alert certificate required'))).toMatch(/client certificate/);
  });
});

describe('handshakeClosedMessage', () => {
  it('names the handshake and the certificate when a TLS alert closed it', () => {
    const m = handshakeClosedMessage('127.0.0.1:6380', 'PING', tlsError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'tlsv13 alert certificate required'), true);
    expect(m).toMatch(/TLS handshake with 127\.0\.0\.1:6380 failed/);
    expect(m).toMatch(/certificate/);
  });

  it('suggests TLS when a plain connection was closed during the handshake', () => {
    const m = handshakeClosedMessage('127.0.0.1:6380', 'PING', new Error('Connection to 127.0.0.1:6380 was closed by the server or the network'), false);
    expect(m).toMatch(/during the handshake \(PING\)/);
    expect(m).toMatch(/set the tls option or use a rediss:\/\/ URL/);
  });
});

describe('redactAddress: credentials never reach a message about an address', () => {
  it.each([
    [`user:${SECRET}@127.0.0.1:6379`, '[redacted]@127.0.0.1:6379'],
    [`:${SECRET}@host:1`, '[redacted]@host:1'],
    [`redis://u:${SECRET}@h:1/0`, 'redis://[redacted]@h:1/0'],
    [`rediss://${SECRET}@h`, 'rediss://[redacted]@h'],
    ['127.0.0.1:6379', '127.0.0.1:6379'],
    ['redis://h:1', 'redis://h:1'],
  ])('%s -> %s', (input, out) => {
    expect(redactAddress(input)).toBe(out);
  });

  it.each([
    `user:${SECRET}@127.0.0.1:6379`,
    `user:${SECRET}@127.0.0.1`,
    `redis://user:${SECRET}@127.0.0.1:99999`,
    `redis://user:${SECRET}@[bad`,
    `redis://user:${SECRET}@127.0.0.1:6379/notadb`,
    `rediss://:${SECRET}@:6379`,
  ])('a bad address %s fails with a TypeError that does not repeat the secret', (input) => {
    let err: unknown;
    try {
      parseAddress(input, 'address');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TypeError);
    expect(String((err as Error).message)).toMatch(/^address/);
    expect(util.inspect(err, { depth: 10 })).not.toContain(SECRET);
  });
});

describe('option checks (TypeError naming the option)', () => {
  const provider = async () => ({ password: 'x' });
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['credentials not a function', { credentials: 'token' }, /Option credentials must be a function/],
    ['credentials with password', { credentials: provider, password: 'p' }, /Option credentials cannot be combined/],
    ['credentials with username', { credentials: provider, username: 'u' }, /Option credentials cannot be combined/],
    ['credentialsTimeout 0', { credentials: provider, credentialsTimeout: 0 }, /Option credentialsTimeout/],
    ['credentialsTimeout beyond a timer', { credentialsTimeout: 2 ** 31 }, /Option credentialsTimeout/],
    ['commandTimeout beyond a timer', { commandTimeout: 2 ** 31 }, /Option commandTimeout/],
    ['connectTimeout beyond a timer', { connectTimeout: 2 ** 32 }, /Option connectTimeout/],
    ['tls a string', { tls: 'yes' }, /Option tls must be true, false or an object/],
    ['tls an array', { tls: [] }, /Option tls must be/],
    ['tls.ca a number', { tls: { ca: 5 } }, /Option tls\.ca must be PEM contents/],
    ['tls.cert an object', { tls: { cert: { path: '/x' } } }, /Option tls\.cert must be PEM contents/],
    ['tls.key a number', { tls: { key: 1 } }, /Option tls\.key must be PEM contents/],
    ['tls.servername a number', { tls: { servername: 1 } }, /Option tls\.servername must be a string/],
    ['tls.rejectUnauthorized a string', { tls: { rejectUnauthorized: 'false' } }, /Option tls\.rejectUnauthorized must be a boolean/],
    ['tls.checkServerIdentity a string', { tls: { checkServerIdentity: 'no' } }, /Option tls\.checkServerIdentity must be a function/],
    ['tls.host given', { tls: { host: 'x' } }, /Option tls\.host is not used/],
    ['tls.ca a file path', { tls: { ca: '/etc/redis/ca.crt' } }, /Option tls\.ca is a string without a PEM header .* looks like a file path/],
    ['tls.key a file path in an array', { tls: { key: ['/etc/redis/client.key'] } }, /Option tls\.key is a string without a PEM header/],
  ])('%s', (_name, options, message) => {
    expect(() => resolveConnectionOptions(options as never)).toThrow(TypeError);
    expect(() => resolveConnectionOptions(options as never)).toThrow(message);
  });

  it('refuses credentials beside a password from the URL', () => {
    expect(() => resolveConnectionOptions({ credentials: provider }, { password: SECRET })).toThrow(/cannot be combined/);
  });

  it('checks sentinelTls like tls, and accepts certificate contents as strings, Buffers and arrays', () => {
    expect(() => resolveSentinelOptions('m', ['127.0.0.1:26379'], { sentinelTls: { ca: 3 } as never })).toThrow(/Option sentinelTls\.ca/);
    expect(() => resolveSentinelOptions('m', ['127.0.0.1:26379'], { sentinelTls: 'on' as never })).toThrow(/Option sentinelTls must be/);
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(() => resolveConnectionOptions({ tls: { ca: [pem, Buffer.from('b')], cert: Buffer.from('c'), key: pem } })).not.toThrow();
  });

  it('takes the sentinels\' TLS and credentials from sentinel URLs unless sentinel options say otherwise', async () => {
    const s = resolveSentinelOptions('m', ['rediss://sent:pw@127.0.0.1:26379', '127.0.0.1:26380'], {});
    expect(s.sentinel.tls).toBeDefined();
    expect(s.data.tls).toBeUndefined();
    await expect(s.sentinel.auth.resolve({ address: { host: 'h', port: 1 }, role: 'sentinel' })).resolves.toEqual({ username: 'sent', password: 'pw' });
    const own = resolveSentinelOptions('m', ['rediss://sent:pw@127.0.0.1:26379'], { sentinelTls: false, sentinelPassword: 'other' });
    expect(own.sentinel.tls).toBeUndefined();
    await expect(own.sentinel.auth.resolve({ address: { host: 'h', port: 1 }, role: 'sentinel' })).resolves.toEqual({ username: undefined, password: 'other' });
    expect(() => resolveSentinelOptions('m', ['redis://127.0.0.1:26379/2'], {})).toThrow(/sentinels\[0\] names a database/);
  });

  it('gives the provider role "node" in a cluster and "sentinel" for sentinels without credentials of their own', () => {
    expect(resolveClusterOptions(['127.0.0.1:7000'], { credentials: provider }).data.role).toBe('node');
    const s = resolveSentinelOptions('m', ['127.0.0.1:26379'], { credentials: provider });
    expect(s.sentinel.role).toBe('sentinel');
    expect(s.sentinel.auth.dynamic).toBe(true);
    const own = resolveSentinelOptions('m', ['127.0.0.1:26379'], { credentials: provider, sentinelPassword: 'sp' });
    expect(own.sentinel.auth.dynamic).toBe(false);
    expect(own.sentinel.auth.hasPassword).toBe(true);
  });
});

describe('credential holders never print a secret', () => {
  const forms: Array<[string, unknown]> = [
    ['resolved options with a password', resolveConnectionOptions({ username: 'app', password: SECRET })],
    ['resolved options from a URL', resolveConnectionOptions({}, parseAddress(`redis://app:${SECRET}@127.0.0.1:6379`, 'address'))],
    ['resolved options with a TLS key and passphrase', resolveConnectionOptions({ tls: { key: `-----BEGIN PRIVATE KEY-----${SECRET}`, passphrase: SECRET, ca: '-----BEGIN CERTIFICATE-----CA' } })],
    ['sentinel options', resolveSentinelOptions('m', ['127.0.0.1:26379'], { password: SECRET, sentinelPassword: SECRET, sentinelTls: { key: `-----BEGIN PRIVATE KEY-----${SECRET}` } })],
    ['sentinel options from sentinel URLs', resolveSentinelOptions('m', [`rediss://sent:${SECRET}@127.0.0.1:26379`], {})],
    ['cluster options', resolveClusterOptions([`redis://:${SECRET}@127.0.0.1:7000`], { tls: { passphrase: SECRET } })],
    ['a static Auth', Auth.of('u', SECRET)],
  ];
  it.each(forms)('%s: util.inspect, JSON.stringify and String', (_n, value) => {
    expect(util.inspect(value, { depth: Infinity, showHidden: true })).not.toContain(SECRET);
    expect(JSON.stringify(value)).not.toContain(SECRET);
    expect(String(value)).not.toContain(SECRET);
  });

  it('still hands the credentials to the connection that needs them', async () => {
    const o = resolveConnectionOptions({ username: 'app', password: SECRET });
    await expect(o.auth.resolve({ address: { host: 'h', port: 1 }, role: 'master' })).resolves.toEqual({ username: 'app', password: SECRET });
    const none = resolveConnectionOptions({});
    await expect(none.auth.resolve({ address: { host: 'h', port: 1 }, role: 'master' })).resolves.toBeNull();
  });

  it('a provider that answers something malformed fails with AuthenticationError', async () => {
    const a = Auth.from(async () => ({ pass: SECRET }) as never, 1000);
    const err = await a.resolve({ address: { host: 'h', port: 1 }, role: 'master' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(util.inspect(err, { depth: 10 })).not.toContain(SECRET);
  });

  it('a provider is given a copy of the address and the role', async () => {
    const seen: unknown[] = [];
    const a = Auth.from((ctx) => {
      seen.push(ctx);
      return { username: 'u', password: 'p' };
    }, 1000);
    await a.resolve({ address: { host: 'h', port: 1 }, role: 'replica' });
    expect(seen).toEqual([{ address: { host: 'h', port: 1 }, role: 'replica' }]);
  });
});

describe('handshakeError: what a handshake reply means', () => {
  const ctx = (over: Partial<Parameters<typeof handshakeError>[2]> = {}) => ({
    label: '127.0.0.1:6379', address: { host: '127.0.0.1', port: 6379 }, creds: { username: 'app', password: SECRET }, tls: false, closedError: undefined, ...over,
  });
  const step = (what: string) => ({ args: [what], what });
  it.each<[string, string, unknown, Partial<Parameters<typeof handshakeError>[2]>, string | undefined, RegExp | undefined]>([
    ['an OK reply', 'AUTH', 'OK', {}, undefined, undefined],
    ['WRONGPASS', 'AUTH', new RedisError('WRONGPASS invalid username-password pair'), {}, 'AuthenticationError', /user "app" at 127\.0\.0\.1:6379/],
    ['NOAUTH without credentials', 'PING', new RedisError('NOAUTH Authentication required.'), { creds: null }, 'AuthenticationError', /no password was given/],
    ['a refused PING (ACL) still proves a Redis', 'PING', new RedisError('NOPERM no permissions to run ping'), {}, undefined, undefined],
    ['HELLO unknown (Redis 5)', 'HELLO 3', new RedisError(`ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'app' '${SECRET}'`), {}, 'ConnectionError', /does not support RESP3.*unknown command 'HELLO', with arguments \(not shown\)/],
    ['a refused CLIENT SETNAME', 'CLIENT SETNAME', new RedisError("NOPERM no permissions to run the 'client|setname' command"), {}, 'ConnectionError', /failed at CLIENT SETNAME/],
    ['the connection lost with a TLS alert', 'PING', new UncertainWriteError('PING was sent'), { tls: true, closedError: new ConnectionError('x', { cause: Object.assign(new Error('tlsv13 alert certificate required'), { code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' }) }) }, 'ConnectionError', /TLS handshake .* client certificate/],
  ])('%s', (_n, what, outcome, over, name, message) => {
    const e = handshakeError(step(what), outcome, ctx(over));
    if (name === undefined) {
      expect(e).toBeUndefined();
      return;
    }
    expect(e?.name).toBe(name);
    expect(e?.message).toMatch(message!);
    expect(e).not.toBeInstanceOf(UncertainWriteError);
    expect(util.inspect(e, { depth: 10 })).not.toContain(SECRET);
  });

  it('builds HELLO 3 with AUTH and SETNAME, or AUTH then CLIENT SETNAME, then SELECT, extras and PING', () => {
    const o3 = resolveConnectionOptions({ protocol: 3, clientName: 'n', db: 2, maintNotifications: 'disabled' });
    expect(handshakeSteps(o3, { username: 'u', password: 'p' }, [['READONLY']], true).map((s) => s.args)).toEqual([
      ['HELLO', '3', 'AUTH', 'u', 'p', 'SETNAME', 'n'],
      ['CLIENT', 'SETINFO', 'LIB-NAME', 'redis-ha-pool'], ['CLIENT', 'SETINFO', 'LIB-VER', PACKAGE_VERSION],
      ['SELECT', 2], ['READONLY'], ['PING'],
    ]);
    const o2 = resolveConnectionOptions({ clientName: 'n', disableClientInfo: true });
    expect(handshakeSteps(o2, { password: 'p' }, [], false).map((s) => s.args)).toEqual([['AUTH', 'p'], ['CLIENT', 'SETNAME', 'n']]);
    expect(handshakeSteps(resolveConnectionOptions({ disableClientInfo: true }), null, [], false)).toEqual([]);
    // Identification never fails a connection: a refusal of either SETINFO is ignored.
    for (const step of handshakeSteps(resolveConnectionOptions({ clientInfoTag: 't' }), null, [], false)) {
      expect(step.args.slice(0, 2)).toEqual(['CLIENT', 'SETINFO']);
      expect(handshakeError(step, new RedisError("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP."), { label: 'h:1', address: { host: 'h', port: 1 }, creds: null, tls: false, closedError: undefined })).toBeUndefined();
    }
  });
});
