/** Which keyless commands a cluster refuses to send to "any master". */
import { describe, expect, it } from 'vitest';
import { CommandRegistry } from '../../src/commands/command-table.js';
import { keylessRefusal, routeCommand } from '../../src/cluster/route.js';

describe('keylessRefusal', () => {
  const registry = new CommandRegistry();
  it.each([
    [['SCAN', '0'], true],
    [['scan', '17', 'MATCH', 'user:*'], true],
    [['PING'], false],
    [['RANDOMKEY'], false],
    [['DBSIZE'], false],
    [['INFO', 'server'], false],
    [['HSCAN', 'h', '0'], false], // keyed: goes to its slot's node
  ])('%j refused: %s', (args, refused) => {
    const r = routeCommand(registry, args);
    const e = keylessRefusal(r);
    expect(e !== undefined).toBe(refused);
    if (e) {
      expect(e).toBeInstanceOf(TypeError);
      expect(e.message).toMatch(/scanIterator\(\)/);
      expect(e.message).toMatch(/not sent/);
    }
  });
});
