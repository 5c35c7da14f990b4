/** Which commands call() refuses or sends on an exclusive connection. */
import { describe, expect, it } from 'vitest';
import { shownName, traitsOf } from '../../src/commands/traits.js';

const commandKind = (args: string[]) => traitsOf(args).kind;

describe('commandKind', () => {
  it.each([
    ['GET', 'plain'], ['set', 'plain'], ['CLIENT', 'plain'], ['PING', 'plain'],
    ['CLIENT LIST', 'plain'], ['client id', 'plain'], ['CLIENT KILL ID 5', 'plain'], ['CLIENT INFO', 'plain'],
    ['CLIENT REPLY OFF', 'connection-state'], ['client reply skip', 'connection-state'], ['CLIENT TRACKING ON', 'connection-state'],
    ['CLIENT CACHING yes', 'connection-state'], ['CLIENT SETNAME x', 'connection-state'], ['CLIENT SETINFO LIB-NAME x', 'connection-state'],
    ['CLIENT NO-EVICT on', 'connection-state'], ['client no-touch on', 'connection-state'],
    ['BLPOP', 'blocking'], ['xread', 'blocking'],
    ['SUBSCRIBE', 'subscribe'], ['ssubscribe', 'subscribe'], ['MONITOR', 'subscribe'],
    ['WATCH', 'connection-state'], ['multi', 'connection-state'], ['EXEC', 'connection-state'], ['SELECT', 'connection-state'],
    ['AUTH', 'connection-state'], ['HELLO', 'connection-state'], ['RESET', 'connection-state'], ['READONLY', 'connection-state'],
  ])('%s -> %s', (command, kind) => {
    expect(commandKind(command.split(' '))).toBe(kind);
  });

  it('names CLIENT with its subcommand in a refusal', () => {
    expect(shownName(['CLIENT', 'REPLY', 'OFF'])).toBe('CLIENT REPLY');
    expect(shownName(['SELECT', '1'])).toBe('SELECT');
  });
});
