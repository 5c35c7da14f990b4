/**
 * The OpenTelemetry example (docs/examples/otel.ts) against a real server: the spans and the
 * `db.client.operation.duration` histogram points it makes from the diagnostics channels,
 * with the database semantic conventions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { DataPointType, type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { errorType, runExample, type ExampleResult } from '../../docs/examples/otel.js';
import { RedisError, TimeoutError } from '../../src/index.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
let result: ExampleResult;

beforeAll(async () => {
  topo = await startStandalone();
  result = await runExample(topo.url);
});
afterAll(async () => {
  await topo?.stop();
});

function metric(name: string): HistogramMetricData | undefined {
  const found = result.metrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)).filter((m) => m.descriptor.name === name);
  expect(found.length).toBeLessThanOrEqual(1); // one collection, exported once
  return found[0] as HistogramMetricData | undefined;
}

describe('OpenTelemetry example', () => {
  it('makes one CLIENT span per command, with the db semantic conventions', () => {
    const { spans } = result;
    expect(spans.map((s) => s.name)).toEqual(['SET', 'GET', 'INCR', 'INCR', 'GET', 'LPUSH', 'PING']);
    for (const s of spans) {
      expect(s.kind).toBe(SpanKind.CLIENT);
      expect(s.attributes).toMatchObject({
        'db.system.name': 'redis',
        'db.operation.name': s.name,
        'server.address': topo.address.host,
        'server.port': topo.address.port,
        'redis_ha_pool.mode': 'standalone',
        'redis_ha_pool.attempt': 1,
      });
    }
    expect(spans.slice(2, 5).map((s) => s.attributes['db.operation.batch.size'])).toEqual([3, 3, 3]);
    expect(spans[0]!.attributes['db.operation.batch.size']).toBeUndefined();
    const failed = spans[5]!;
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes).toMatchObject({ 'error.type': 'WRONGTYPE', 'db.response.status_code': 'WRONGTYPE' });
    expect(spans.filter((s) => s.status.code === SpanStatusCode.ERROR)).toHaveLength(1);
    // Argument values stay out of the telemetry.
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('hello');
  });

  it('records db.client.operation.duration per operation, server and error type', () => {
    const m = metric('db.client.operation.duration');
    expect(m).toBeDefined();
    expect(m!.descriptor.unit).toBe('s');
    expect(m!.dataPointType).toBe(DataPointType.HISTOGRAM);
    const byOp = new Map(m!.dataPoints.map((p) => [`${String(p.attributes['db.operation.name'])}${p.attributes['error.type'] ? `/${String(p.attributes['error.type'])}` : ''}`, p]));
    expect([...byOp.keys()].sort()).toEqual(['GET', 'INCR', 'LPUSH/WRONGTYPE', 'PING', 'SET']);
    expect(byOp.get('GET')!.value.count).toBe(2);
    expect(byOp.get('INCR')!.value.count).toBe(2);
    for (const p of m!.dataPoints) {
      expect(p.attributes).toMatchObject({ 'db.system.name': 'redis', 'server.address': topo.address.host, 'server.port': topo.address.port });
      expect(p.value.sum).toBeGreaterThan(0);
      expect(p.value.buckets.boundaries).toEqual([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]);
    }
  });

  it('records the wait for the lease in db.client.connection.wait_time', () => {
    const m = metric('db.client.connection.wait_time');
    expect(m?.dataPoints).toHaveLength(1);
    expect(m!.dataPoints[0]!.value.count).toBe(1);
    expect(m!.dataPoints[0]!.attributes).toEqual({ 'db.system.name': 'redis', 'db.client.connection.pool.name': `${topo.address.host}:${topo.address.port}` });
  });

  it('names error.type by the Redis code, else by the error class', () => {
    expect(errorType(new RedisError('MOVED 3999 127.0.0.1:7001'))).toBe('MOVED');
    expect(errorType(new TimeoutError('late'))).toBe('TimeoutError');
    expect(errorType('boom')).toBe('_OTHER');
  });
});
