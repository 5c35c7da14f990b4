/** Where the cluster sends one command (src/cluster/route.ts), by table: keys, slots, channels. */
import { describe, expect, it } from 'vitest';
import { CommandRegistry } from '../../src/commands/command-table.js';
import { routeCommand } from '../../src/cluster/route.js';
import { keySlot } from '../../src/cluster/slot.js';
import type { Arg } from '../../src/types.js';

const registry = new CommandRegistry();

describe('routeCommand', () => {
  it.each<[string, Arg[], number | undefined]>([
    ['a keyed command: its first key', ['GET', 'user:1'], keySlot('user:1')],
    ['a hash tag decides the slot', ['SET', '{user}:1', 'v'], keySlot('user')],
    ['SPUBLISH: the shard channel', ['SPUBLISH', 'orders', 'x'], keySlot('orders')],
    // Any node would deliver it, but only one node per channel keeps the channel's order.
    ['PUBLISH: the channel\'s slot, so one channel keeps its order', ['PUBLISH', 'news', 'x'], keySlot('news')],
    ['a keyless command: any master', ['PING'], undefined],
    ['PUBSUB NUMSUB: any master (the facades sum it over the masters)', ['PUBSUB', 'NUMSUB', 'news'], undefined],
  ])('%s', (_what, args, slot) => {
    expect(routeCommand(registry, args).slot).toBe(slot);
  });

  it('PUBLISH has no keys: nothing of it is prefixed or split', () => {
    expect(routeCommand(registry, ['PUBLISH', 'news', 'x']).keys).toEqual([]);
  });
});
