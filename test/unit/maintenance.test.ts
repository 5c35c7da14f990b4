/**
 * Maintenance notifications (src/connection/maintenance.ts), decided by tables: what a push
 * says, what it does to a connection's timeouts, what a MOVING asks of a pool, which endpoint
 * type a connection asks for, and how the options are checked. The wire side (a proxy in front
 * of real servers injecting the pushes) is test/integration/maintenance*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  inferEndpointType, isPrivateIp, isRelaxed, maintenanceEvent, MaintCounters, NOT_RELAXED, notificationType, parseMaintenance, planMoving,
  relaxedDeadline, relaxedIdleLimit, RelaxState, relaxStep, SeenSequences, type MaintNotice, type RelaxCounts,
} from '../../src/connection/maintenance.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { handshakeError, handshakeSteps } from '../../src/connection/handshake.js';
import { SlotMap } from '../../src/cluster/slot-map.js';
import { ConnectionError, RedisError } from '../../src/errors.js';
import { ClusterPool, SentinelPool, StandalonePool, type Reply } from '../../src/index.js';

const b = (s: string) => Buffer.from(s);

describe('notificationType: which pushes are server notifications', () => {
  it.each<[Reply[], string | undefined]>([
    [['MOVING', 1, 15, '10.0.0.1:6379'], 'MOVING'],
    [[b('SMIGRATED'), 3, []], 'SMIGRATED'],
    [['FAILED_OVER', 2, ['shard-1']], 'FAILED_OVER'],
    [['MAINTENANCE_V2', 1], 'MAINTENANCE_V2'], // unknown, but a notification: counted and dropped, never pub/sub
    [['message', 'ch', 'MOVING'], undefined],
    [['smessage', 'ch', 'x'], undefined],
    [['invalidate', ['k']], undefined],
    [['subscribe', 'ch', 1], undefined],
    [['Moving', 1], undefined],
    [[42], undefined],
    [[], undefined],
  ])('%j -> %j', (push, type) => {
    expect(notificationType(push)).toBe(type);
  });
});

describe('parseMaintenance: well-formed notifications', () => {
  const nat = (a: { host: string; port: number }) => (a.host === '10.0.0.9' ? { host: '127.0.0.1', port: a.port + 10000 } : a);
  it.each<[string, Reply[], MaintNotice]>([
    ['MOVING with an address', ['MOVING', 7, 15, '10.0.0.2:12000'], { kind: 'MOVING', seq: 7, timeS: 15, target: { host: '10.0.0.2', port: 12000 } }],
    ['MOVING as Buffers and text numbers', [b('MOVING'), b('8'), b('30'), b('redis-1.example.com:6379')], { kind: 'MOVING', seq: 8, timeS: 30, target: { host: 'redis-1.example.com', port: 6379 } }],
    ['MOVING with null (endpoint type none)', ['MOVING', 9, 10, null], { kind: 'MOVING', seq: 9, timeS: 10, target: null }],
    ['MOVING with the text null', ['MOVING', 9, 10, 'null'], { kind: 'MOVING', seq: 9, timeS: 10, target: null }],
    ['MOVING to IPv6', ['MOVING', 1, 5, '[fd00::2]:6379'], { kind: 'MOVING', seq: 1, timeS: 5, target: { host: 'fd00::2', port: 6379 } }],
    ['MOVING through natMap', ['MOVING', 2, 5, '10.0.0.9:6379'], { kind: 'MOVING', seq: 2, timeS: 5, target: { host: '127.0.0.1', port: 16379 } }],
    ['MOVING with time 0', ['MOVING', 3, 0, '10.0.0.2:1'], { kind: 'MOVING', seq: 3, timeS: 0, target: { host: '10.0.0.2', port: 1 } }],
    ['MIGRATING', ['MIGRATING', 11, 2, ['1']], { kind: 'MIGRATING', seq: 11, timeS: 2 }],
    ['MIGRATED', ['MIGRATED', 12, ['1']], { kind: 'MIGRATED', seq: 12 }],
    ['FAILING_OVER', ['FAILING_OVER', 13, 1, ['1']], { kind: 'FAILING_OVER', seq: 13, timeS: 1 }],
    ['FAILED_OVER without shards', ['FAILED_OVER', 14], { kind: 'FAILED_OVER', seq: 14 }],
    ['SMIGRATING slots and ranges', ['SMIGRATING', 15, '1,5-7'], { kind: 'SMIGRATING', seq: 15, slots: [[1, 1], [5, 7]] }],
    ['SMIGRATING as a list', ['SMIGRATING', 15, ['100-200', 300]], { kind: 'SMIGRATING', seq: 15, slots: [[100, 200], [300, 300]] }],
    ['SMIGRATED, two entries, natMap on both ends', ['SMIGRATED', 16, [['10.0.0.1:6379', '10.0.0.9:6380', '0-99,200'], ['10.0.0.1:6379', '10.0.0.3:6381', b('16383')]]], {
      kind: 'SMIGRATED', seq: 16, moves: [
        { source: { host: '10.0.0.1', port: 6379 }, target: { host: '127.0.0.1', port: 16380 }, slots: [[0, 99], [200, 200]] },
        { source: { host: '10.0.0.1', port: 6379 }, target: { host: '10.0.0.3', port: 6381 }, slots: [[16383, 16383]] },
      ],
    }],
  ])('%s', (_name, push, notice) => {
    expect(parseMaintenance(push, nat)).toEqual({ ok: true, notice });
  });
});

describe('parseMaintenance: malformed and unknown notifications are ignored with a reason', () => {
  it.each<[string, Reply[], RegExp]>([
    ['unknown type', ['MAINTENANCE_V2', 1], /unknown notification type/],
    ['no sequence number', ['MIGRATED'], /sequence number/],
    ['negative sequence number', ['MIGRATED', -1], /sequence number/],
    ['text sequence number', ['MIGRATED', 'seven'], /sequence number/],
    ['MOVING without time', ['MOVING', 1], /time_s/],
    ['MOVING with a negative time', ['MOVING', 1, -5, '10.0.0.1:1'], /time_s/],
    ['MOVING with a time beyond a day', ['MOVING', 1, 90000, '10.0.0.1:1'], /time_s/],
    ['MOVING without the endpoint', ['MOVING', 1, 15], /endpoint .* missing/],
    ['MOVING to host without port', ['MOVING', 1, 15, 'example.com'], /not host:port/],
    ['MOVING to port 0', ['MOVING', 1, 15, 'example.com:0'], /not host:port/],
    ['MOVING to port 70000', ['MOVING', 1, 15, 'example.com:70000'], /not host:port/],
    ['MOVING to an array', ['MOVING', 1, 15, ['a']], /not host:port/],
    ['MIGRATING without time', ['MIGRATING', 1], /time_s/],
    ['SMIGRATING with slot 16384', ['SMIGRATING', 1, '16384'], /slots/],
    ['SMIGRATING with a reversed range', ['SMIGRATING', 1, '9-3'], /slots/],
    ['SMIGRATING with garbage', ['SMIGRATING', 1, 'a,b'], /slots/],
    ['SMIGRATED without entries', ['SMIGRATED', 1], /entries are missing/],
    ['SMIGRATED with an empty list', ['SMIGRATED', 1, []], /entries are missing/],
    ['SMIGRATED with a pair', ['SMIGRATED', 1, [['10.0.0.1:1', '10.0.0.2:2']]], /not \[source, target, slots\]/],
    ['SMIGRATED with a bad target', ['SMIGRATED', 1, [['10.0.0.1:1', 'nowhere', '5']]], /not host:port/],
    ['SMIGRATED with bad slots', ['SMIGRATED', 1, [['10.0.0.1:1', '10.0.0.2:2', '5-']]], /slots/],
  ])('%s', (_name, push, reason) => {
    const r = parseMaintenance(push);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe('relaxStep: timeouts stay relaxed while a maintenance of any kind is open, counted per kind', () => {
  const step = (notices: MaintNotice[]): RelaxCounts => notices.reduce(relaxStep, NOT_RELAXED);
  const M = (kind: MaintNotice['kind'], seq = 1): MaintNotice =>
    kind === 'MOVING' ? { kind, seq, timeS: 1, target: null }
      : kind === 'MIGRATING' || kind === 'FAILING_OVER' ? { kind, seq, timeS: 1 }
        : kind === 'SMIGRATING' ? { kind, seq, slots: [] }
          : kind === 'SMIGRATED' ? { kind, seq, moves: [] } : { kind, seq };
  it.each<[string, MaintNotice[], boolean, Partial<RelaxCounts>]>([
    ['nothing', [], false, {}],
    ['MIGRATING', [M('MIGRATING')], true, { MIGRATING: 1 }],
    ['MIGRATING then MIGRATED (its own sequence number)', [M('MIGRATING', 5), M('MIGRATED', 6)], false, {}],
    ['two MIGRATING, one MIGRATED', [M('MIGRATING', 1), M('MIGRATING', 2), M('MIGRATED', 3)], true, { MIGRATING: 1 }],
    ['MIGRATED with nothing open', [M('MIGRATED')], false, {}],
    ['MIGRATED does not end a FAILING_OVER', [M('FAILING_OVER'), M('MIGRATED')], true, { FAILING_OVER: 1 }],
    ['FAILED_OVER does not end a MIGRATING', [M('MIGRATING'), M('FAILED_OVER')], true, { MIGRATING: 1 }],
    ['overlapping kinds end in any order', [M('MIGRATING'), M('FAILING_OVER'), M('MIGRATED'), M('FAILED_OVER')], false, {}],
    ['SMIGRATING then SMIGRATED', [M('SMIGRATING'), M('SMIGRATED')], false, {}],
    ['SMIGRATED does not end a MIGRATING', [M('MIGRATING'), M('SMIGRATED')], true, { MIGRATING: 1 }],
    ['MOVING stays until the connection closes', [M('MOVING'), M('MIGRATED'), M('FAILED_OVER'), M('SMIGRATED')], true, { MOVING: 1 }],
    ['two MOVING count once', [M('MOVING'), M('MOVING')], true, { MOVING: 1 }],
  ])('%s', (_name, notices, relaxed, counts) => {
    const c = step(notices);
    expect(isRelaxed(c)).toBe(relaxed);
    expect(c).toEqual({ ...NOT_RELAXED, ...counts });
  });

  it('RelaxState reports the moment relaxation turns on, once', () => {
    const r = new RelaxState(10_000);
    expect(r.apply(M('MIGRATING', 1))).toBe(true);
    expect(r.apply(M('FAILING_OVER', 2))).toBe(false);
    expect(r.apply(M('MIGRATED', 3))).toBe(false);
    expect(r.relaxed).toBe(true);
    expect(r.apply(M('FAILED_OVER', 4))).toBe(false);
    expect(r.relaxed).toBe(false);
    expect(r.apply(M('MIGRATING', 5))).toBe(true);
  });
});

describe('relaxedDeadline / relaxedIdleLimit: raised to at least the relaxed timeout, never lowered', () => {
  it.each([
    ['a short deadline is raised', 1_000 + 200, 1_000, 10_000, 11_000],
    ['a longer per-call deadline is kept', 1_000 + 60_000, 1_000, 10_000, 61_000],
    ['no deadline stays none', 0, 1_000, 10_000, 0],
    ['equal', 11_000, 1_000, 10_000, 11_000],
  ])('%s', (_name, deadline, now, ms, out) => {
    expect(relaxedDeadline(deadline, now, ms)).toBe(out);
  });
  it.each([
    ['socketTimeout below is raised', 5_000, 10_000, 10_000],
    ['a stretched limit above is kept', 60_000, 10_000, 60_000],
    ['off stays off', 0, 10_000, 0],
  ])('%s', (_name, limit, ms, out) => {
    expect(relaxedIdleLimit(limit, ms)).toBe(out);
  });
});

describe('planMoving: what a MOVING asks of a pool', () => {
  const to = { host: '10.0.0.2', port: 6379 };
  it.each<[string, { timeS: number; target: typeof to | null }, { leaving: boolean; sameAddressPending: boolean }, unknown]>([
    ['an address: hand over now, close the old by 90% of time_s', { timeS: 15, target: to }, { leaving: false, sameAddressPending: false }, { action: 'handoff', target: to, startInMs: 0, closeInMs: 13_500 }],
    ['null: same address after half of time_s', { timeS: 10, target: null }, { leaving: false, sameAddressPending: false }, { action: 'handoff', target: null, startInMs: 5_000, closeInMs: 9_000 }],
    ['an address while a null move waits: now', { timeS: 2, target: to }, { leaving: false, sameAddressPending: true }, { action: 'handoff', target: to, startInMs: 0, closeInMs: 1_800 }],
    ['a second null while one waits: nothing', { timeS: 10, target: null }, { leaving: false, sameAddressPending: true }, { action: 'ignore' }],
    ['a copy on a connection already handed over: nothing', { timeS: 15, target: to }, { leaving: true, sameAddressPending: false }, { action: 'ignore' }],
    ['time 0: at once', { timeS: 0, target: to }, { leaving: false, sameAddressPending: false }, { action: 'handoff', target: to, startInMs: 0, closeInMs: 0 }],
  ])('%s', (_name, notice, state, plan) => {
    expect(planMoving(notice, state)).toMatchObject(plan as object);
  });
});

describe('inferEndpointType: how the user addressed the server', () => {
  it.each<[string, string, boolean, string | undefined, string]>([
    ['private IP, plain', '10.1.2.3', false, '10.1.2.3', 'internal-ip'],
    ['public IP, plain', '34.1.2.3', false, '34.1.2.3', 'external-ip'],
    ['public IP over TLS (IP SANs): still an IP', '34.1.2.3', true, '34.1.2.3', 'external-ip'],
    ['loopback', '127.0.0.1', false, '127.0.0.1', 'internal-ip'],
    ['name over TLS reaching a public IP', 'redis-12000.c1.cloud.redislabs.com', true, '34.1.2.3', 'external-fqdn'],
    ['name over TLS reaching a private IP (VPC peering)', 'redis-12000.internal.example', true, '10.0.0.4', 'internal-fqdn'],
    ['name without TLS: an IP (no DNS lag at the reconnect)', 'redis.example.com', false, '172.20.0.5', 'internal-ip'],
    ['name without TLS reaching a public IP', 'redis.example.com', false, '52.1.1.1', 'external-ip'],
    ['localhost, address unknown', 'localhost', false, undefined, 'internal-ip'],
    ['IPv6 unique local', 'fd12::1', false, 'fd12::1', 'internal-ip'],
    ['IPv4-mapped private', 'db.local', true, '::ffff:192.168.1.9', 'internal-fqdn'],
  ])('%s', (_name, host, tls, remote, type) => {
    expect(inferEndpointType(host, tls, remote)).toBe(type);
  });
  it.each([
    ['10.0.0.1', true], ['172.16.0.1', true], ['172.32.0.1', false], ['192.168.0.1', true], ['169.254.1.1', true], ['100.64.0.1', true],
    ['100.128.0.1', false], ['8.8.8.8', false], ['::1', true], ['fe80::1', true], ['2001:db8::1', false], ['not-an-ip', false],
  ])('isPrivateIp(%s) = %s', (ip, out) => {
    expect(isPrivateIp(ip)).toBe(out);
  });
});

describe('options: checked like the others, TypeError naming the option', () => {
  it.each<[string, object, RegExp]>([
    ['bad mode', { maintNotifications: 'on' }, /maintNotifications must be one of "auto", "enabled", "disabled"/],
    ['bad endpoint type', { maintEndpointType: 'ip' }, /maintEndpointType must be one of/],
    ['relaxed timeout 0', { maintRelaxedTimeout: 0 }, /maintRelaxedTimeout must be an integer/],
    ['relaxed timeout not a number', { maintRelaxedTimeout: '10s' }, /maintRelaxedTimeout/],
    ['enabled under RESP2 names both options', { maintNotifications: 'enabled' }, /maintNotifications: 'enabled' needs protocol: 3/],
    ['enabled with protocol 2 explicitly', { maintNotifications: 'enabled', protocol: 2 }, /maintNotifications.*protocol: 3/],
  ])('%s', (_name, o, message) => {
    expect(() => resolveConnectionOptions(o)).toThrow(TypeError);
    expect(() => resolveConnectionOptions(o)).toThrow(message);
  });

  it('every mode refuses them before connecting', async () => {
    const bad = { maintNotifications: 'enabled' as const };
    await expect(StandalonePool.create('127.0.0.1:1', bad)).rejects.toThrow(/maintNotifications: 'enabled' needs protocol: 3/);
    await expect(SentinelPool.create('m', ['127.0.0.1:1'], bad)).rejects.toThrow(/maintNotifications: 'enabled' needs protocol: 3/);
    await expect(ClusterPool.create(['127.0.0.1:1'], bad)).rejects.toThrow(/maintNotifications: 'enabled' needs protocol: 3/);
    await expect(StandalonePool.create('127.0.0.1:1', { maintRelaxedTimeout: -1 } as object)).rejects.toThrow(TypeError);
  });

  it.each<[string, object, unknown]>([
    ['default under RESP2: no opt-in', {}, undefined],
    ['auto under RESP3', { protocol: 3 }, { mode: 'auto', endpointType: undefined, relaxedTimeout: 10_000 }],
    ['enabled, typed endpoint, own timeout', { protocol: 3, maintNotifications: 'enabled', maintEndpointType: 'none', maintRelaxedTimeout: 3000 }, { mode: 'enabled', endpointType: 'none', relaxedTimeout: 3000 }],
    ['disabled under RESP3', { protocol: 3, maintNotifications: 'disabled' }, undefined],
  ])('%s', (_name, o, maint) => {
    const r = resolveConnectionOptions(o);
    if (maint === undefined) expect(r.maint).toBeUndefined();
    else expect(r.maint).toMatchObject(maint as object);
  });

  it('the natMap of the options maps MOVING and SMIGRATED addresses', () => {
    const r = resolveConnectionOptions({ protocol: 3, natMap: { '10.0.0.1:6379': '127.0.0.1:16379' } } as object);
    expect(r.maint!.mapAddress({ host: '10.0.0.1', port: 6379 })).toEqual({ host: '127.0.0.1', port: 16379 });
    expect(r.maint!.mapAddress({ host: '10.0.0.2', port: 6379 })).toEqual({ host: '10.0.0.2', port: 6379 });
  });
});

describe('handshake: the opt-in after HELLO 3', () => {
  const context = { label: 'h:1', address: { host: 'h', port: 1 }, creds: null, tls: false, closedError: undefined };
  it('comes right after HELLO 3, with the endpoint type; none under RESP2', () => {
    const o3 = resolveConnectionOptions({ protocol: 3, db: 2, disableClientInfo: true });
    expect(handshakeSteps(o3, null, [['READONLY']], true, 'internal-ip').map((s) => s.args)).toEqual([
      ['HELLO', '3'], ['CLIENT', 'MAINT_NOTIFICATIONS', 'ON', 'moving-endpoint-type', 'internal-ip'], ['SELECT', 2], ['READONLY'], ['PING'],
    ]);
    expect(handshakeSteps(resolveConnectionOptions({ disableClientInfo: true }), null, [], false, 'internal-ip')).toEqual([]);
    expect(handshakeSteps(resolveConnectionOptions({ protocol: 3, maintNotifications: 'disabled', disableClientInfo: true }), null, [], false, 'internal-ip').map((s) => s.args)).toEqual([['HELLO', '3']]);
  });
  it('auto: a refusal is ignored; enabled: a clear ConnectionError keeping the reply as cause', () => {
    const refusal = new RedisError("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.");
    const [, auto] = handshakeSteps(resolveConnectionOptions({ protocol: 3 }), null, [], false, 'internal-ip');
    expect(handshakeError(auto!, refusal, context)).toBeUndefined();
    const [, enabled] = handshakeSteps(resolveConnectionOptions({ protocol: 3, maintNotifications: 'enabled' }), null, [], false, 'internal-ip');
    const err = handshakeError(enabled!, refusal, context);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err!.message).toMatch(/h:1 refused maintenance notifications .*unknown subcommand.*maintNotifications: 'enabled' needs a server that sends them.*use maintNotifications: 'auto'/);
    expect(err!.cause).toBe(refusal);
  });
});

describe('the pool side: counters, events, sequence numbers, slot moves', () => {
  it('a node pool counts into the cluster totals', () => {
    const totals = new MaintCounters();
    const a = new MaintCounters(totals);
    const c = new MaintCounters(totals);
    a.add('notifications');
    c.add('notifications');
    c.add('ignored');
    a.add('handoffs');
    expect(a.snapshot(1)).toEqual({ notifications: 1, ignored: 0, relaxedNow: 1, handoffs: 1, slotMapUpdates: 0 });
    expect(totals.snapshot(3)).toEqual({ notifications: 2, ignored: 1, relaxedNow: 3, handoffs: 1, slotMapUpdates: 0 });
  });

  it.each<[MaintNotice, object]>([
    [{ kind: 'MOVING', seq: 1, timeS: 5, target: { host: 'b', port: 2 } }, { kind: 'MOVING', seq: 1, timeS: 5, target: { host: 'b', port: 2 } }],
    [{ kind: 'MOVING', seq: 1, timeS: 5, target: null }, { kind: 'MOVING', seq: 1, timeS: 5, target: null }],
    [{ kind: 'MIGRATING', seq: 2, timeS: 1 }, { kind: 'MIGRATING', seq: 2, timeS: 1 }],
    [{ kind: 'MIGRATED', seq: 3 }, { kind: 'MIGRATED', seq: 3 }],
    [{ kind: 'SMIGRATED', seq: 4, moves: [] }, { kind: 'SMIGRATED', seq: 4 }],
  ])('the event of %j', (notice, event) => {
    expect(maintenanceEvent(notice, { host: 'a', port: 1 })).toEqual({ ...event, address: { host: 'a', port: 1 } });
  });

  it('SeenSequences: each sequence number once, the oldest forgotten beyond its size', () => {
    const s = new SeenSequences(2);
    expect([s.first(1), s.first(1), s.first(2), s.first(3), s.first(1)]).toEqual([true, false, true, true, true]);
  });

  it('SlotMap.withMovedSlots: many slots in one map, new targets become shards, no change returns the same map', () => {
    const a = { host: 'a', port: 1 };
    const c = { host: 'c', port: 3 };
    const base = SlotMap.empty().withMovedSlot(0, a).withMovedSlots(Array.from({ length: 16384 }, (_, i) => [i, a] as const));
    expect(base.coveredSlots).toBe(16384);
    const moved = base.withMovedSlots(Array.from({ length: 1000 }, (_, i) => [5000 + i, c] as const));
    expect(moved.shardForSlot(5000)!.master.key).toBe('c:3');
    expect(moved.shardForSlot(5999)!.master.key).toBe('c:3');
    expect(moved.shardForSlot(6000)!.master.key).toBe('a:1');
    expect(moved.masters().map((m) => m.key)).toEqual(['a:1', 'c:3']);
    expect(moved.withMovedSlots([[5000, c], [5001, c]])).toBe(moved);
  });
});
