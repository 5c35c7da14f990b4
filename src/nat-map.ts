import { parseAddress } from './address.js';
import { checkObject, type CustomSpec } from './options.js';
import { formatAddress, type Address, type NodeAddress } from './types.js';

/** Maps addresses that nodes announce to addresses this process can reach. */
export type NatMap = Record<string, Address> | ((address: NodeAddress) => NodeAddress);

/** Turns a `natMap` option into a function. */
export function resolveNatMap(natMap: NatMap | undefined): (a: NodeAddress) => NodeAddress {
  if (natMap === undefined) return (a) => a;
  if (typeof natMap === 'function') return natMap;
  checkObject('natMap', natMap);
  const table = new Map<string, NodeAddress>();
  for (const [from, to] of Object.entries(natMap)) {
    const p = parseAddress(to, `natMap['${from}']`);
    table.set(from, { host: p.host, port: p.port });
  }
  return (a) => table.get(formatAddress(a)) ?? a;
}

/** The `natMap` option of Sentinel and Cluster pools. */
export const NAT_MAP_SPEC = {
  kind: 'custom',
  type: 'object or function',
  doc: 'Announced address -> reachable address: `{ \'10.0.0.5:6379\': \'localhost:16379\' }` or a function `(address) => address`, for nodes behind NAT or Docker port mapping.',
  validate(v: unknown) {
    resolveNatMap(v as NatMap);
  },
} as const satisfies CustomSpec<NatMap>;
