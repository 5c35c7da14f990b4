import { describe, expect, it } from 'vitest';
import { attemptKind, decideRedirect, parseRedirect, type Decision, type RedirectContext } from '../../src/cluster/redirect.js';
import {
  ConnectionError,
  CrossSlotError,
  ProtocolError,
  RedisError,
  TimeoutError,
  UncertainWriteError,
} from '../../src/errors.js';
import type { NodeAddress } from '../../src/types.js';

const from: NodeAddress = { host: '10.0.0.5', port: 7000 };

describe('parseRedirect', () => {
  it.each<[string, ReturnType<typeof parseRedirect>]>([
    ['MOVED 3999 127.0.0.1:6381', { kind: 'moved', slot: 3999, address: { host: '127.0.0.1', port: 6381 } }],
    ['ASK 3999 127.0.0.1:6381', { kind: 'ask', slot: 3999, address: { host: '127.0.0.1', port: 6381 } }],
    ['MOVED 3999 :6380', { kind: 'moved', slot: 3999, address: { host: '10.0.0.5', port: 6380 } }],
    ['ASK 0 :6380', { kind: 'ask', slot: 0, address: { host: '10.0.0.5', port: 6380 } }],
    ['MOVED 1 ::1:6380', { kind: 'moved', slot: 1, address: { host: '::1', port: 6380 } }],
    ['MOVED 1 [::1]:6380', { kind: 'moved', slot: 1, address: { host: '::1', port: 6380 } }],
    ['MOVED 1 fe80::1%eth0:6380', { kind: 'moved', slot: 1, address: { host: 'fe80::1%eth0', port: 6380 } }],
    ['MOVED 16383 redis-2.example.com:6379', { kind: 'moved', slot: 16383, address: { host: 'redis-2.example.com', port: 6379 } }],
    ['MOVED 5 h:65535', { kind: 'moved', slot: 5, address: { host: 'h', port: 65535 } }],
    ['MOVED 5 h:1', { kind: 'moved', slot: 5, address: { host: 'h', port: 1 } }],
  ])('%j', (message, expected) => {
    expect(parseRedirect(new RedisError(message), from)).toEqual(expected);
  });

  it.each([
    'MOVED 16384 127.0.0.1:6381', // slot out of range
    'MOVED -1 127.0.0.1:6381',
    'MOVED 1.5 127.0.0.1:6381',
    'MOVED abc 127.0.0.1:6381',
    'MOVED 3999 127.0.0.1:0', // port out of range
    'MOVED 3999 127.0.0.1:65536',
    'MOVED 3999 127.0.0.1:',
    'MOVED 3999 127.0.0.1:http',
    'MOVED 3999 127.0.0.1', // no port
    'MOVED 3999 ?:6380', // unknown endpoint
    'MOVED 3999 evil/host:6380',
    'MOVED 3999',
    'MOVED',
    'ERR MOVED 3999 127.0.0.1:6381', // another error
    'TRYAGAIN Multiple keys request during rehashing of slot',
  ])('rejects %j', (message) => {
    expect(parseRedirect(new RedisError(message), from)).toBeUndefined();
  });

  it('rejects non-RedisErrors', () => {
    expect(parseRedirect(new Error('MOVED 1 h:1') as RedisError, from)).toBeUndefined();
  });
});

const ctx = (over: Partial<RedirectContext> = {}): RedirectContext => ({
  sent: true,
  readOnly: false,
  idempotent: false,
  redirections: 0,
  maxRedirections: 16,
  ...over,
});

describe('decideRedirect', () => {
  const moved = new RedisError('MOVED 3999 127.0.0.1:6381');
  const ask = new RedisError('ASK 3999 127.0.0.1:6381');
  const refused = new ConnectionError('connect ECONNREFUSED');
  const uncertain = new UncertainWriteError('connection closed with the command in flight');
  const timeoutUnsent = new TimeoutError('timed out in the queue', { sent: false });
  const timeoutSent = new TimeoutError('no reply in time', { sent: true });

  it.each<[string, unknown, Partial<RedirectContext>, Decision]>([
    ['no error', undefined, {}, { action: 'done' }],
    ['null', null, {}, { action: 'done' }],
    ['MOVED', moved, {}, { action: 'moved', slot: 3999, address: { host: '127.0.0.1', port: 6381 } }],
    ['ASK', ask, {}, { action: 'ask', slot: 3999, address: { host: '127.0.0.1', port: 6381 } }],
    ['MOVED with empty host, from ctx', new RedisError('MOVED 7 :6390'), { from }, { action: 'moved', slot: 7, address: { host: '10.0.0.5', port: 6390 } }],
    ['MOVED with empty host, from err.address', new RedisError('MOVED 7 :6390', { address: { host: '10.0.0.8', port: 1 } }), {}, { action: 'moved', slot: 7, address: { host: '10.0.0.8', port: 6390 } }],
    ['MOVED with empty host, replier unknown', new RedisError('MOVED 7 :6390'), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['MOVED to ?', new RedisError('MOVED 7 ?:6390'), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['malformed MOVED', new RedisError('MOVED 99999 h:1'), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['TRYAGAIN', new RedisError('TRYAGAIN Multiple keys request during rehashing of slot'), {}, { action: 'retry', delay: 'tryagain', refresh: false }],
    ['CLUSTERDOWN', new RedisError('CLUSTERDOWN The cluster is down'), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['UNBLOCKED (a blocked command released unrun: its slot moved)', new RedisError('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['READONLY', new RedisError("READONLY You can't write against a read only replica."), {}, { action: 'retry', delay: 'clusterdown', refresh: true }],
    ['LOADING', new RedisError('LOADING Redis is loading the dataset in memory'), {}, { action: 'retry', delay: 'clusterdown', refresh: false }],
    ['NOREPLICAS', new RedisError('NOREPLICAS Not enough good replicas to write.'), {}, { action: 'retry', delay: 'clusterdown', refresh: false }],
    ['MASTERDOWN', new RedisError('MASTERDOWN Link with MASTER is down'), { readOnly: true }, { action: 'retry-elsewhere', refresh: true }],
    ['connection refused, unsent write', refused, { sent: false }, { action: 'retry-elsewhere', refresh: true }],
    ['connection error, executor says sent, write', refused, { sent: true }, { action: 'fail', error: refused, exhausted: false }],
    ['connection error, executor says sent, read', refused, { sent: true, readOnly: true }, { action: 'retry-elsewhere', refresh: true }],
    ['uncertain write', uncertain, { sent: false }, { action: 'fail', error: uncertain, exhausted: false }],
    ['uncertain write, read-only', uncertain, { readOnly: true }, { action: 'retry-elsewhere', refresh: true }],
    ['uncertain write, idempotent', uncertain, { idempotent: true }, { action: 'retry-elsewhere', refresh: true }],
    ['timeout before sending', timeoutUnsent, { sent: false }, { action: 'retry-elsewhere', refresh: true }],
    ['timeout after sending, write', timeoutSent, {}, { action: 'fail', error: timeoutSent, exhausted: false }],
    ['timeout after sending, read', timeoutSent, { readOnly: true }, { action: 'retry-elsewhere', refresh: true }],
  ])('%s', (_name, err, over, expected) => {
    expect(decideRedirect(err, ctx(over))).toEqual(expected);
  });

  it.each([
    new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value'),
    new RedisError('CROSSSLOT Keys in request don\'t hash to the same slot'),
    new RedisError('NOSCRIPT No matching script.'),
    new RedisError('ERR unknown command'),
    new CrossSlotError('keys span slots'),
    new TypeError('bad argument'),
    'a string',
  ])('fails at once on %s, even when read-only', (err) => {
    expect(decideRedirect(err, ctx({ readOnly: true, idempotent: true }))).toEqual({ action: 'fail', error: err, exhausted: false });
  });

  it('never resends a command whose own reply was refused (ProtocolError), even read-only or idempotent', () => {
    const err = new ProtocolError('A reply length of 52428800 exceeds maxReplyBytes (10485760).');
    expect(decideRedirect(err, ctx({ sent: false }))).toEqual({ action: 'fail', error: err, exhausted: false });
    expect(decideRedirect(err, ctx({ readOnly: true, idempotent: true }))).toEqual({ action: 'fail', error: err, exhausted: false });
  });

  it('fails with exhausted: true once the budget is spent, for every retrying decision', () => {
    for (const err of [moved, ask, new RedisError('TRYAGAIN x'), new RedisError('CLUSTERDOWN x'), refused]) {
      expect(decideRedirect(err, ctx({ sent: false, redirections: 15 })).action).not.toBe('fail');
      expect(decideRedirect(err, ctx({ sent: false, redirections: 16 }))).toEqual({ action: 'fail', error: err, exhausted: true });
    }
    // Errors that fail anyway are not reported as exhausted.
    const wrong = new RedisError('WRONGTYPE x');
    expect(decideRedirect(wrong, ctx({ redirections: 99 }))).toEqual({ action: 'fail', error: wrong, exhausted: false });
    expect(decideRedirect(undefined, ctx({ redirections: 99 }))).toEqual({ action: 'done' });
    expect(decideRedirect(moved, ctx({ maxRedirections: 0 }))).toMatchObject({ action: 'fail', exhausted: true });
  });
});

describe('attemptKind', () => {
  it.each<[unknown, string]>([
    [new RedisError('MOVED 1 h:1'), 'moved'],
    [new RedisError('ASK 1 h:1'), 'ask'],
    [new RedisError('TRYAGAIN x'), 'tryagain'],
    [new RedisError('CLUSTERDOWN x'), 'clusterdown'],
    [new RedisError('READONLY x'), 'error'],
    [new ConnectionError('x'), 'connection'],
    [new UncertainWriteError('x'), 'connection'],
    [new TimeoutError('x'), 'timeout'],
    [new Error('x'), 'error'],
  ])('%s -> %s', (err, kind) => {
    expect(attemptKind(err)).toBe(kind);
  });
});
