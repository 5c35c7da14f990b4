/**
 * Identifying the client (CLIENT SETINFO): the version sent is package.json's, and the two
 * options are checked like every other (TypeError naming the option).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handshakeSteps, libraryName } from '../../src/connection/handshake.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { PACKAGE_VERSION } from '../../src/version.js';
import { StandalonePool } from '../../src/index.js';

describe('client identification', () => {
  it('LIB-VER is the version in package.json (scripts/build.mjs rewrites src/version.ts when it changes)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(PACKAGE_VERSION).toBe(pkg.version);
  });

  it('LIB-NAME is redis-ha-pool, or redis-ha-pool(<tag>)', () => {
    expect(libraryName(undefined)).toBe('redis-ha-pool');
    expect(libraryName('billing-api')).toBe('redis-ha-pool(billing-api)');
  });

  it('is sent on data connections, never on the links to sentinels', () => {
    const steps = (role: 'master' | 'replica' | 'node' | 'sentinel') => handshakeSteps(resolveConnectionOptions({}, {}, '', role), null, [], false).map((s) => s.args.slice(0, 3).join(' '));
    for (const role of ['master', 'replica', 'node'] as const) expect(steps(role)).toEqual(['CLIENT SETINFO LIB-NAME', 'CLIENT SETINFO LIB-VER']);
    expect(steps('sentinel')).toEqual([]);
  });

  it('defaults: identification on, no tag', () => {
    const o = resolveConnectionOptions({});
    expect(o.disableClientInfo).toBe(false);
    expect(o.clientInfoTag).toBeUndefined();
  });

  it.each([
    [{ disableClientInfo: 'yes' }, /disableClientInfo/],
    [{ disableClientInfo: 1 }, /disableClientInfo/],
    [{ clientInfoTag: 42 }, /clientInfoTag/],
    [{ clientInfoTag: '' }, /clientInfoTag/],
    [{ clientInfoTag: 'my app' }, /clientInfoTag must be printable ASCII without spaces/],
    [{ clientInfoTag: 'a\nb' }, /clientInfoTag must be printable ASCII without spaces, newlines/],
    [{ clientInfoTag: 'a(b)' }, /clientInfoTag .*parentheses/],
    [{ clientInfoTag: 'café' }, /clientInfoTag must be printable ASCII/],
  ])('%j fails at once with a TypeError naming the option', async (bad, message) => {
    expect(() => resolveConnectionOptions(bad as never)).toThrow(TypeError);
    expect(() => resolveConnectionOptions(bad as never)).toThrow(message);
    // The same check on a pool's options, before anything connects.
    await expect(StandalonePool.create('redis://127.0.0.1:1', bad as never)).rejects.toThrow(message);
  });
});
