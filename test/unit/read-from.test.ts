/**
 * The zone-aware read choice (shared by Sentinel and Cluster), by table: candidates with their
 * zones and health -> the node and the step of the order that chose it. Also the option checks
 * and the parsing of the zone from HELLO and INFO replies.
 */
import { describe, expect, it } from 'vitest';
import { chooseRead, worthWaking, type AzReadFrom, type ReadCandidate } from '../../src/pool/read-from.js';
import { zoneFromHello, zoneFromInfo } from '../../src/pool/zones.js';
import { resolveClusterOptions } from '../../src/cluster/options.js';
import { resolveSentinelOptions } from '../../src/sentinel/options.js';

/** `'P:a'` = primary in zone a, `'R:b'` = replica in zone b, `'R:-'` = replica without a zone, a trailing `!` = unhealthy. */
function nodes(spec: string): ReadCandidate<string>[] {
  return spec.split(' ').map((s, i) => {
    const healthy = !s.endsWith('!');
    const [role, zone] = s.replace('!', '').split(':') as [string, string];
    return { node: `${role}${i}`, primary: role === 'P', zone: zone === '-' ? undefined : zone, healthy };
  });
}

const AZ: AzReadFrom = 'az-affinity';
const AZP: AzReadFrom = 'az-affinity-replicas-and-primary';

describe('chooseRead', () => {
  // [readFrom, candidates, expected node(s) over turns 0..3, expected tier]
  const table: Array<[AzReadFrom, string, string[], string]> = [
    // same-zone replica first, in both strategies, whatever the primary's zone
    [AZ, 'P:a R:a R:b', ['R1'], 'same-zone-replica'],
    [AZP, 'P:a R:a R:b', ['R1'], 'same-zone-replica'],
    [AZ, 'P:b R:b R:a R:b', ['R2'], 'same-zone-replica'],
    // several same-zone replicas take turns
    [AZ, 'P:b R:a R:b R:a', ['R1', 'R3', 'R1', 'R3'], 'same-zone-replica'],
    // no same-zone replica: 'az-affinity' spreads over every replica, never the primary
    [AZ, 'P:a R:b R:c', ['R1', 'R2', 'R1', 'R2'], 'replica'],
    // ...'az-affinity-replicas-and-primary' takes the same-zone primary first
    [AZP, 'P:a R:b R:c', ['P0'], 'same-zone-primary'],
    // a primary in another zone is not preferred over replicas
    [AZP, 'P:b R:b R:c', ['R1', 'R2'], 'replica'],
    // an unhealthy same-zone replica is passed over
    [AZ, 'P:b R:a! R:b', ['R2'], 'replica'],
    [AZP, 'P:a R:a! R:b', ['P0'], 'same-zone-primary'],
    // an unhealthy same-zone primary is passed over too
    [AZP, 'P:a! R:b', ['R1'], 'replica'],
    // no healthy replica: the primary, healthy or not (the last resort)
    [AZ, 'P:b R:a! R:b!', ['P0'], 'primary'],
    [AZ, 'P:b!', ['P0'], 'primary'],
    [AZP, 'P:b R:a!', ['P0'], 'primary'],
    // a node without a zone counts as another zone
    [AZ, 'P:- R:- R:a', ['R2'], 'same-zone-replica'],
    [AZ, 'P:- R:- R:b', ['R1', 'R2'], 'replica'],
    [AZP, 'P:- R:-', ['R1'], 'replica'],
    // zones are compared exactly
    [AZ, 'P:b R:A R:a', ['R2'], 'same-zone-replica'],
  ];
  it.each(table)('%s with %s (client in zone a) -> %j (%s)', (readFrom, spec, expected, tier) => {
    const c = nodes(spec);
    for (let turn = 0; turn < 4; turn++) {
      const choice = chooseRead(readFrom, 'a', c, turn);
      expect(choice?.node).toBe(expected[turn % expected.length]);
      expect(choice?.tier).toBe(tier);
    }
  });

  it('reports the zone of the node it chose', () => {
    expect(chooseRead(AZ, 'a', nodes('P:a R:b'))).toEqual({ node: 'R1', tier: 'replica', zone: 'b' });
    expect(chooseRead(AZ, 'a', nodes('P:- R:-'))).toEqual({ node: 'R1', tier: 'replica', zone: undefined });
  });

  it('returns undefined only with neither a healthy replica nor a primary', () => {
    expect(chooseRead(AZ, 'a', nodes('R:a! R:b!'))).toBeUndefined();
    expect(chooseRead(AZP, 'a', [])).toBeUndefined();
    expect(chooseRead(AZ, 'a', nodes('R:a! R:b'))?.node).toBe('R1');
  });
});

describe('worthWaking', () => {
  it('names the unhealthy nodes in the client zone that the order ranks first', () => {
    expect(worthWaking(AZ, 'a', nodes('P:a! R:a! R:b! R:a'))).toEqual(['R1']);
    expect(worthWaking(AZP, 'a', nodes('P:a! R:a! R:b! R:a'))).toEqual(['P0', 'R1']);
    expect(worthWaking(AZ, 'a', nodes('P:a R:a R:b!'))).toEqual([]);
  });
});

describe('zone from HELLO and INFO', () => {
  it('reads availability_zone from a RESP3 HELLO map and a RESP2 HELLO list', () => {
    expect(zoneFromHello(new Map<string, unknown>([['server', 'valkey'], ['version', '8.1.0'], ['availability_zone', 'use1-az1']]) as never)).toBe('use1-az1');
    expect(zoneFromHello(['server', 'valkey', 'proto', 2, 'availability_zone', 'use1-az2'])).toBe('use1-az2');
  });
  it('finds none in a HELLO without it, an empty one, or a reply that is not a map', () => {
    expect(zoneFromHello(new Map([['server', 'redis'], ['version', '7.0.15']]))).toBeUndefined();
    expect(zoneFromHello(['server', 'valkey', 'availability_zone', ''])).toBeUndefined();
    expect(zoneFromHello('OK')).toBeUndefined();
    expect(zoneFromHello(null)).toBeUndefined();
  });
  it('reads the availability_zone field of INFO server', () => {
    const info = '# Server\r\nredis_version:8.0.1\r\navailability_zone:euw1-az3\r\nrun_id:abc\r\n';
    expect(zoneFromInfo(info)).toBe('euw1-az3');
    expect(zoneFromInfo(Buffer.from(info))).toBe('euw1-az3');
    expect(zoneFromInfo('# Server\r\nredis_version:7.0.15\r\n')).toBeUndefined();
    expect(zoneFromInfo('# Server\r\navailability_zone:\r\n')).toBeUndefined();
    expect(zoneFromInfo(42)).toBeUndefined();
  });
});

describe('readFrom / clientAz options', () => {
  const sentinels = ['127.0.0.1:26379'];
  it('Sentinel: a zone-aware readFrom needs role replica (TypeError naming both) and clientAz', () => {
    expect(() => resolveSentinelOptions('m', sentinels, { readFrom: 'az-affinity', clientAz: 'a' })).toThrow(TypeError);
    expect(() => resolveSentinelOptions('m', sentinels, { readFrom: 'az-affinity', clientAz: 'a', role: 'master' })).toThrow(/readFrom: 'az-affinity' of SentinelPool needs role: 'replica' \(role is 'master'\)/);
    expect(() => resolveSentinelOptions('m', sentinels, { readFrom: 'az-affinity', clientAz: 'a' })).toThrow(/needs role: 'replica' \(role is 'master' by default\)/);
    expect(() => resolveSentinelOptions('m', sentinels, { readFrom: 'az-affinity-replicas-and-primary', role: 'replica' })).toThrow(/readFrom: 'az-affinity-replicas-and-primary' of SentinelPool needs option clientAz/);
    expect(() => resolveSentinelOptions('m', sentinels, { role: 'replica', clientAz: 'a' })).toThrow(/clientAz of SentinelPool applies only with readFrom/);
    expect(() => resolveSentinelOptions('m', sentinels, { role: 'replica', readFrom: 'az-affinity', clientAz: '' })).toThrow(/clientAz of SentinelPool must be a non-empty string/);
    expect(() => resolveSentinelOptions('m', sentinels, { role: 'replica', readFrom: 'replica' as never, clientAz: 'a' })).toThrow(/Option readFrom must be one of "az-affinity", "az-affinity-replicas-and-primary"/);
    const o = resolveSentinelOptions('m', sentinels, { role: 'replica', readFrom: 'az-affinity', clientAz: 'use1-az1' });
    expect([o.readFrom, o.clientAz]).toEqual(['az-affinity', 'use1-az1']);
    expect(resolveSentinelOptions('m', sentinels, { role: 'replica' }).readFrom).toBeUndefined();
  });

  it('Cluster: clientAz is required by, and only allowed with, a zone-aware readFrom', () => {
    const seeds = ['127.0.0.1:7000'];
    expect(() => resolveClusterOptions(seeds, { readFrom: 'az-affinity' })).toThrow(/readFrom: 'az-affinity' of ClusterPool needs option clientAz/);
    expect(() => resolveClusterOptions(seeds, { readFrom: 'replica', clientAz: 'a' })).toThrow(/clientAz of ClusterPool applies only with readFrom: 'az-affinity' or 'az-affinity-replicas-and-primary' \(readFrom is "replica"\)/);
    expect(() => resolveClusterOptions(seeds, { clientAz: 'a' })).toThrow(/readFrom is not set/);
    expect(() => resolveClusterOptions(seeds, { readFrom: 'az-affinity', clientAz: 3 as never })).toThrow(TypeError);
    expect(() => resolveClusterOptions(seeds, { readFrom: 'nearest' as never })).toThrow(/"az-affinity", "az-affinity-replicas-and-primary"/);
    expect(resolveClusterOptions(seeds, { readFrom: 'az-affinity-replicas-and-primary', clientAz: 'b' })).toMatchObject({ readFrom: 'az-affinity-replicas-and-primary', clientAz: 'b' });
  });
});
