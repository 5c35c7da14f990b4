/** Which commands call() refuses or sends on an exclusive connection. */
import { describe, expect, it } from 'vitest';
import { commandKind } from '../../src/commands/blocking.js';

describe('commandKind', () => {
  it.each([
    ['GET', 'plain'], ['set', 'plain'], ['CLIENT', 'plain'], ['PING', 'plain'],
    ['BLPOP', 'blocking'], ['xread', 'blocking'],
    ['SUBSCRIBE', 'subscribe'], ['ssubscribe', 'subscribe'], ['MONITOR', 'subscribe'],
    ['WATCH', 'connection-state'], ['multi', 'connection-state'], ['EXEC', 'connection-state'], ['SELECT', 'connection-state'],
    ['AUTH', 'connection-state'], ['HELLO', 'connection-state'], ['RESET', 'connection-state'], ['READONLY', 'connection-state'],
  ])('%s -> %s', (name, kind) => {
    expect(commandKind(name)).toBe(kind);
  });
});
