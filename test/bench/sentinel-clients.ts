/**
 * The Sentinel clients the failover benchmarks compare, each behind one small interface: this
 * pool (with either `failoverCommit`), ioredis (default options) and node-redis's
 * `createSentinel`. Shared by test/bench/sentinel.ts and test/bench/sentinel-rollback.ts.
 */
import { Redis } from 'ioredis';
import { createSentinel } from 'redis';
import { SentinelPool, type SentinelOptions } from '../../src/index.js';
import type { SentinelTopology } from '../support/topology.js';

const fmtAddr = (a: { host: string; port: number }) => `${a.host}:${a.port}`;

/** Resolves `p`, or undefined after `ms`. */
export function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<undefined>((r) => (t = setTimeout(() => r(undefined), ms)))]).finally(() => clearTimeout(t));
}

export interface LoadClient {
  set(key: string, value: string): Promise<unknown>;
  close(): Promise<void>;
  /** Background errors the client reported through events (not failed commands). */
  background: Map<string, number>;
  /** Client-specific notes for the report. */
  notes(): string[];
  /** When the client moved to its latest master (epoch ms), for clients that say so. */
  switchedAt?(): number | undefined;
}

export interface ClientSpec {
  id: string;
  label: string;
  open(topo: SentinelTopology): Promise<LoadClient>;
}

export function countInto(m: Map<string, number>, kind: string): void {
  m.set(kind, (m.get(kind) ?? 0) + 1);
}

/** This pool as a load client, with `options`. */
export function haClient(id: string, label: string, options: SentinelOptions = {}): ClientSpec {
  return {
    id,
    label,
    async open(topo) {
      const background = new Map<string, number>();
      const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, options);
      const events: string[] = [];
      let switchedAt: number | undefined;
      pool.on('error', (e) => countInto(background, errorKind(e)));
      pool.on('failover-start', (i) => events.push(`failover-start (${i.event}) at ${i.at}`));
      pool.on('failover-abort', (i) => events.push(`failover-abort (${i.reason}) at ${i.at}`));
      pool.on('failover', (e) => (switchedAt = e.at, events.push(`failover ${fmtAddr(e.from)} -> ${fmtAddr(e.to)} detectedBy ${e.detectedBy}, epoch ${e.epoch}, confirmedBy ${e.confirmedBy}, held ${e.heldMs} ms at ${e.at}`)));
      const w = pool.with({ idempotent: true });
      return {
        set: (k, v) => w.call('SET', k, v),
        close: () => pool.close(),
        background,
        notes: () => events,
        switchedAt: () => switchedAt,
      };
    },
  };
}

export const CLIENTS: ClientSpec[] = [
  haClient('ha', 'redis-ha-pool SentinelPool'),
  {
    id: 'ioredis',
    label: 'ioredis 6 (default options)',
    async open(topo) {
      const background = new Map<string, number>();
      const r = new Redis({ sentinels: topo.sentinelAddresses.map((a) => ({ host: a.host, port: a.port })), name: topo.masterName });
      r.on('error', (e: Error) => countInto(background, errorKind(e)));
      const ready = await within(new Promise<boolean>((res) => r.once('ready', () => res(true))), 10_000);
      if (!ready) {
        r.disconnect();
        throw new Error('ioredis did not become ready within 10 s');
      }
      return {
        set: (k, v) => r.set(k, v),
        close: async () => r.disconnect(),
        background,
        notes: () => [],
      };
    },
  },
  {
    id: 'node-redis',
    label: 'node-redis 6.3 createSentinel',
    async open(topo) {
      const background = new Map<string, number>();
      const s = createSentinel({
        name: topo.masterName,
        sentinelRootNodes: topo.sentinelAddresses.map((a) => ({ host: a.host, port: a.port })),
      });
      s.on('error', (e: Error) => countInto(background, errorKind(e)));
      const ok = await within(s.connect().then(() => true), 10_000);
      if (!ok) {
        await within(s.destroy().catch(() => {}), 2000);
        throw new Error('node-redis sentinel did not connect within 10 s');
      }
      return {
        set: (k, v) => s.set(k, v),
        close: () => s.destroy(),
        background,
        notes: () => [],
      };
    },
  },
];

/** `name code: message` with numbers and addresses blurred, so equal failures group together. */
export function errorKind(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const msg = err.message.replace(/\d+\.\d+\.\d+\.\d+:\d+/g, '<addr>').replace(/\d+/g, 'N').slice(0, 90);
  return `${err.name}${typeof code === 'string' && !msg.startsWith(code) ? ` ${code}` : ''}: ${msg}`;
}

