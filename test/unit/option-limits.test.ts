/**
 * Limits of options: every time option fits a Node timer (at most 2^31-1 ms): a larger one would fire after 1 ms
 * (Node's TimeoutOverflowWarning) and turn a long wait into a spin or an immediate timeout.
 */
import { describe, expect, it } from 'vitest';
import { checkCallOptions, checkUseOptions } from '../../src/pool/call-options.js';
import { resolvePoolOptions } from '../../src/pool/options.js';
import { resolveSentinelOptions } from '../../src/sentinel/options.js';

const TOO_LONG = 2 ** 31;
const LONGEST = 2 ** 31 - 1;

describe('time options beyond a timer are a TypeError naming the option', () => {
  it.each(['acquireTimeoutMillis', 'idleTimeoutMillis', 'evictionRunIntervalMillis'])('pool.%s', (name) => {
    expect(() => resolvePoolOptions({ [name]: TOO_LONG })).toThrow(new RegExp(`pool\\.${name}.*2147483647`));
    expect(() => resolvePoolOptions({ [name]: LONGEST })).not.toThrow();
  });

  it.each(['initialDelay', 'maxDelay'])('pool.reconnect.%s', (name) => {
    expect(() => resolvePoolOptions({ reconnect: { [name]: TOO_LONG } })).toThrow(new RegExp(`pool\\.reconnect\\.${name}`));
  });

  it.each([
    ['sentinelTimeout', { sentinelTimeout: TOO_LONG }],
    ['pollInterval', { pollInterval: TOO_LONG }],
    ['sentinelPollInterval', { sentinelPollInterval: TOO_LONG }],
    ['queueTimeout', { queueTimeout: TOO_LONG }],
    ['fenceTimeout', { fenceTimeout: TOO_LONG }],
    ['discoveryTimeout', { discoveryTimeout: TOO_LONG }],
    ['promotionCheckInterval', { promotionCheckInterval: TOO_LONG }],
    ['resubscribe.maxDelay', { resubscribe: { maxDelay: TOO_LONG } }],
  ])('Sentinel %s', (name, options) => {
    expect(() => resolveSentinelOptions('mymaster', ['127.0.0.1:26379'], options as never)).toThrow(TypeError);
    expect(() => resolveSentinelOptions('mymaster', ['127.0.0.1:26379'], options as never)).toThrow(name);
  });

  it('with({ timeout })', () => {
    expect(() => checkCallOptions({ timeout: TOO_LONG })).toThrow(/with\.timeout/);
    expect(() => checkCallOptions({ timeout: LONGEST })).not.toThrow();
  });
});

describe('use(fn, options)', () => {
  it.each([
    [{ kye: 'x' }, /Unknown option use\.kye; known options are: key/],
    ['x', /use\(fn, options\)/],
    [null, /use\(fn, options\)/],
  ])('refuses %j', (options, message) => {
    expect(() => checkUseOptions(options)).toThrow(TypeError);
    expect(() => checkUseOptions(options)).toThrow(message);
  });
  it('takes { key } or nothing', () => {
    expect(() => checkUseOptions(undefined)).not.toThrow();
    expect(() => checkUseOptions({ key: 'k' })).not.toThrow();
  });
});
