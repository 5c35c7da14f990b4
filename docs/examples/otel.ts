/**
 * OpenTelemetry for redis-ha-pool, from its diagnostics channels alone: the library takes no
 * OpenTelemetry dependency, this file is all an application adds.
 *
 * - every command sent to a node becomes a CLIENT span named after the command, with the
 *   database semantic conventions: `db.system.name` ('redis'), `db.operation.name`,
 *   `server.address`, `server.port`, `db.operation.batch.size` (pipelines, transactions),
 *   `error.type` and `db.response.status_code` (the Redis error code) on failure;
 * - the same measurements feed the `db.client.operation.duration` histogram (seconds);
 * - waits for an exclusive connection (`use()`, `multi()`, blocking commands) feed
 *   `db.client.connection.wait_time`;
 * - failovers, MOVED/ASK redirects and cluster topology changes are counted in
 *   `redis_ha_pool.events` (attribute `redis_ha_pool.event`).
 *
 * Copy `instrumentRedisHaPool` into your application and hand it your tracer and meter (from
 * `@opentelemetry/api`'s `trace.getTracer()` / `metrics.getMeter()`, or an SDK's providers).
 * Spans start in the active context of the code that sent the command, so they nest under
 * your own spans once a context manager is registered (the Node SDK registers one).
 *
 * Run it: `npx tsx docs/examples/otel.ts redis://127.0.0.1:6379` prints the spans and
 * histogram points it collected in memory (test/integration/otel.test.ts runs it in CI).
 * In your code, import from 'redis-ha-pool' instead of '../../src/index.js'.
 */
import dc from 'node:diagnostics_channel';
import { context, SpanKind, SpanStatusCode, type Attributes, type Meter, type Span, type Tracer } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
// This file runs inside the repository, against the sources. An application imports the package:
//   import { DIAGNOSTICS_CHANNELS, StandalonePool, type AcquireDiagnostic, type CommandTraceContext } from 'redis-ha-pool';
import { DIAGNOSTICS_CHANNELS, StandalonePool, type AcquireDiagnostic, type CommandTraceContext } from '../../src/index.js';

/** Bucket boundaries the semantic conventions advise for `db.client.*` durations, in seconds. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];

/** What the semantic conventions call `error.type`: the Redis error code when there is one, else the error class. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return err instanceof Error ? err.name : '_OTHER';
}

/**
 * Subscribes to the redis-ha-pool channels and reports through `tracer` and `meter`.
 * Returns a function that unsubscribes again.
 */
export function instrumentRedisHaPool(tracer: Tracer, meter: Meter): () => void {
  const duration = meter.createHistogram('db.client.operation.duration', {
    description: 'Duration of database client operations.',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const waitTime = meter.createHistogram('db.client.connection.wait_time', {
    description: 'The time it took to obtain an open connection from the pool.',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const events = meter.createCounter('redis_ha_pool.events', { description: 'Failovers, redirects and topology changes seen by redis-ha-pool.' });

  // Per traced command: its span and start time, kept on the side (the context object is the library's).
  const inFlight = new WeakMap<CommandTraceContext, { span: Span; started: number; attributes: Attributes }>();
  const commands = dc.tracingChannel<CommandTraceContext, CommandTraceContext>(DIAGNOSTICS_CHANNELS.command);
  const handlers = {
    start(ctx: CommandTraceContext) {
      const attributes: Attributes = {
        'db.system.name': 'redis',
        'db.operation.name': ctx.command,
        'server.address': ctx.address.host,
        'server.port': ctx.address.port,
      };
      const spanAttributes: Attributes = { ...attributes, 'redis_ha_pool.mode': ctx.mode, 'redis_ha_pool.attempt': ctx.attempt };
      if (ctx.batchSize !== undefined && ctx.batchSize > 1) spanAttributes['db.operation.batch.size'] = ctx.batchSize;
      const span = tracer.startSpan(ctx.command, { kind: SpanKind.CLIENT, attributes: spanAttributes }, context.active());
      inFlight.set(ctx, { span, started: performance.now(), attributes });
    },
    end() {},
    asyncStart() {},
    error(ctx: CommandTraceContext) {
      const entry = inFlight.get(ctx);
      if (!entry) return;
      const type = errorType(ctx.error);
      entry.attributes['error.type'] = type;
      entry.span.setAttribute('error.type', type);
      const code = (ctx.error as { code?: unknown } | undefined)?.code;
      if (typeof code === 'string') {
        entry.attributes['db.response.status_code'] = code;
        entry.span.setAttribute('db.response.status_code', code);
      }
      entry.span.setStatus({ code: SpanStatusCode.ERROR, message: ctx.error instanceof Error ? ctx.error.message : String(ctx.error) });
    },
    asyncEnd(ctx: CommandTraceContext) {
      const entry = inFlight.get(ctx);
      if (!entry) return;
      inFlight.delete(ctx);
      duration.record((performance.now() - entry.started) / 1000, entry.attributes);
      entry.span.end();
    },
  };
  commands.subscribe(handlers);

  const onAcquire = (msg: unknown) => {
    const a = msg as AcquireDiagnostic;
    const attributes: Attributes = { 'db.system.name': 'redis', 'db.client.connection.pool.name': `${a.address.host}:${a.address.port}` };
    if (a.error) attributes['error.type'] = errorType(a.error);
    waitTime.record(a.waitMs / 1000, attributes);
  };
  const counted: Array<[string, (msg: unknown) => void]> = [
    [DIAGNOSTICS_CHANNELS.failover, () => events.add(1, { 'redis_ha_pool.event': 'failover' })],
    [DIAGNOSTICS_CHANNELS.topology, () => events.add(1, { 'redis_ha_pool.event': 'topology' })],
    [DIAGNOSTICS_CHANNELS.redirect, (msg) => events.add(1, { 'redis_ha_pool.event': (msg as { kind: string }).kind })],
    [DIAGNOSTICS_CHANNELS.acquire, onAcquire],
  ];
  for (const [name, fn] of counted) dc.subscribe(name, fn);
  return () => {
    commands.unsubscribe(handlers);
    for (const [name, fn] of counted) dc.unsubscribe(name, fn);
  };
}

/** What {@link runExample} collected. */
export interface ExampleResult {
  spans: ReadableSpan[];
  metrics: ResourceMetrics[];
}

/**
 * The whole setup with in-memory exporters: a tracer provider, a meter provider, the
 * instrumentation, a few commands through a StandalonePool at `url` (a pipeline, an error, a
 * lease), then every span and metric collected.
 */
export async function runExample(url: string): Promise<ExampleResult> {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const stop = instrumentRedisHaPool(tracerProvider.getTracer('redis-ha-pool-example'), meterProvider.getMeter('redis-ha-pool-example'));
  try {
    const pool = await StandalonePool.create(url);
    try {
      await pool.set('otel:greeting', 'hello');
      await pool.get('otel:greeting');
      await pool.pipeline().incr('otel:n').incr('otel:n').get('otel:n').exec();
      await pool.call('LPUSH', 'otel:greeting', 'x').catch(() => {}); // WRONGTYPE: an error span
      await pool.use((lease) => lease.call('PING'));
    } finally {
      await pool.close();
    }
    await reader.forceFlush();
    // Copies: shutting the providers down below exports once more into the same arrays.
    return { spans: [...spanExporter.getFinishedSpans()], metrics: [...metricExporter.getMetrics()] };
  } finally {
    stop();
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
  }
}

// `npx tsx docs/examples/otel.ts redis://127.0.0.1:6379`
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
  runExample(url).then(({ spans, metrics }) => {
    for (const s of spans) {
      process.stdout.write(`span ${s.name} ${JSON.stringify(s.attributes)} status ${s.status.code} ${(s.duration[1] / 1e6).toFixed(3)} ms\n`);
    }
    for (const m of metrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))) {
      for (const p of m.dataPoints) process.stdout.write(`metric ${m.descriptor.name} ${JSON.stringify(p.attributes)} ${JSON.stringify(p.value)}\n`);
    }
  }, (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
