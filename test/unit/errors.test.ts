/**
 * The error hierarchy's promises to callers: which errors prove a command did not run (so a
 * retry is safe), and messages that say what happened without hiding the cause.
 */
import { describe, expect, it } from 'vitest';
import {
  AllSentinelsDownError,
  AuthenticationError,
  ConnectionError,
  CrossSlotError,
  MaxRedirectionsError,
  PoolClosedError,
  QueueFullError,
  RedisError,
  TimeoutError,
  UncertainWriteError,
  isNotExecuted,
} from '../../src/index.js';
import { withoutEchoedArgs } from '../../src/errors.js';

const node = { host: '127.0.0.1', port: 7000 };

describe('isNotExecuted', () => {
  it.each([
    ['MOVED', new RedisError('MOVED 3999 127.0.0.1:7001'), true],
    ['ASK', new RedisError('ASK 3999 127.0.0.1:7001'), true],
    ['TRYAGAIN', new RedisError('TRYAGAIN Multiple keys request during rehashing of slot'), true],
    ['CLUSTERDOWN', new RedisError('CLUSTERDOWN The cluster is down'), true],
    ['READONLY', new RedisError("READONLY You can't write against a read only replica."), true],
    ['LOADING', new RedisError('LOADING Redis is loading the dataset in memory'), true],
    ['WRONGTYPE (ran, failed)', new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value'), false],
    ['ERR (may have had effects, e.g. a script)', new RedisError('ERR Error running script'), false],
    ['connection failed before the write', new ConnectionError('refused'), true],
    ['written, no reply', new UncertainWriteError('closed'), false],
    ['timeout before the write', new TimeoutError('t', { sent: false }), true],
    ['timeout after the write', new TimeoutError('t', { sent: true }), false],
    ['pool closed', new PoolClosedError(), true],
    ['queue full', new QueueFullError('full'), true],
    ['cross-slot refusal', new CrossSlotError('x'), true],
    ['a plain Error', new Error('x'), false],
  ])('%s -> %s', (_name, err, expected) => {
    expect(isNotExecuted(err)).toBe(expected);
  });

  it('MaxRedirectionsError: not executed only when every attempt was refused before running', () => {
    const refused = new MaxRedirectionsError('SET', [
      { node, kind: 'connection', slot: 1, error: new ConnectionError('ECONNREFUSED'), elapsed: 1 },
      { node, kind: 'moved', slot: 1, error: new RedisError('MOVED 1 127.0.0.1:7001'), elapsed: 2 },
    ], 2);
    expect(isNotExecuted(refused)).toBe(true);
    const uncertain = new MaxRedirectionsError('SET', [
      { node, kind: 'connection', slot: 1, error: new UncertainWriteError('closed after write'), elapsed: 1 },
    ], 1);
    expect(isNotExecuted(uncertain)).toBe(false);
  });
});

describe('messages', () => {
  it.each([
    ["ERR unknown command 'AUTHX', with args beginning with: 's3cret' 'more' ", "ERR unknown command 'AUTHX', with arguments (not shown)"],
    ["ERR unknown command 'FOO', with args beginning with: ", "ERR unknown command 'FOO', with arguments (not shown)"],
    ['ERR unknown command', 'ERR unknown command'],
    ["ERR wrong number of arguments for 'set' command", "ERR wrong number of arguments for 'set' command"],
    ['MOVED 42 127.0.0.1:7001', 'MOVED 42 127.0.0.1:7001'],
  ])('a server error never shows the arguments Redis echoes into it: %s', (reply, shown) => {
    expect(withoutEchoedArgs(reply)).toBe(shown);
    const err = new RedisError(reply);
    expect(err.message).toBe(shown);
    expect(err.message).not.toContain('s3cret');
    expect(err.code).toBe(reply.split(' ')[0]);
  });

  it('MaxRedirectionsError lists every attempt and keeps the last underlying error as cause', () => {
    const timeout = new TimeoutError('SET to 127.0.0.1:7001 got no reply within its timeout', { sent: true });
    const err = new MaxRedirectionsError('SET', [
      { node, kind: 'moved', slot: 42, error: new RedisError('MOVED 42 127.0.0.1:7001'), elapsed: 1 },
      { node: { host: '127.0.0.1', port: 7001 }, kind: 'timeout', slot: 42, error: timeout, elapsed: 5003 },
    ], 1);
    expect(err.message).toContain('#1 127.0.0.1:7000 moved slot 42 after 1 ms: MOVED 42 127.0.0.1:7001');
    expect(err.message).toContain('#2 127.0.0.1:7001 timeout slot 42 after 5003 ms');
    expect(err.cause).toBe(timeout);
    expect(err.attempts).toHaveLength(2);
  });

  it('AllSentinelsDownError names the sentinels tried and the last error, and points at credentials when every sentinel refused them', () => {
    const tried = [{ host: '127.0.0.1', port: 26379 }, { host: '127.0.0.1', port: 26380 }];
    const down = new AllSentinelsDownError([new ConnectionError('ECONNREFUSED a'), new ConnectionError('ECONNREFUSED b')], tried, 'mymaster');
    expect(down.message).toContain('127.0.0.1:26379, 127.0.0.1:26380');
    expect(down.message).toContain('ECONNREFUSED b');
    expect(down.errors).toHaveLength(2);
    const auth = new AllSentinelsDownError([new AuthenticationError('WRONGPASS'), new AuthenticationError('WRONGPASS')], tried, 'mymaster');
    expect(auth.message).toMatch(/sentinelPassword/);
  });

  it('RedisError.code is the first word of the reply', () => {
    expect(new RedisError('WRONGPASS invalid username-password pair').code).toBe('WRONGPASS');
    expect(new RedisError('ERR').code).toBe('ERR');
  });
});
