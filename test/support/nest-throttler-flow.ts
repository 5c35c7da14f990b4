/**
 * A real Nest application (modules, DI, ThrottlerModule, the global ThrottlerGuard and
 * @Throttle metadata) rate-limited through `ThrottlerStorageRedis` on any pool mode.
 *
 * No Nest HTTP platform is installed (@nestjs/platform-express is not a dependency), so the
 * app is an application context and a node:http server hands each request to the controller
 * through Nest's ExternalContextCreator, the same path Nest's own transports use: guards run,
 * and a ThrottlerException becomes the response status. Decorators are applied as calls, since
 * the test build has no legacy-decorator support.
 */
import 'reflect-metadata';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, HttpException, Module, type INestApplicationContext } from '@nestjs/common';
import { APP_GUARD, ExternalContextCreator, NestFactory } from '@nestjs/core';
import { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import { ThrottlerStorageRedis } from '../../src/integrations/nestjs.js';
import { expect, it } from 'vitest';
import { unique, type AnyPool } from './ioredis-flows.js';

export interface NestThrottlerApp {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the app: `GET /hit` allows 3 requests per minute per client (header `x-client`),
 * then blocks that client for 30 s; `GET /free` is not throttled.
 */
export async function startNestThrottlerApp(pool: AnyPool, prefix: string): Promise<NestThrottlerApp> {
  class HitController {
    hit(): string {
      return 'hit';
    }
    free(): string {
      return 'free';
    }
  }
  Controller('throttled')(HitController);
  const hitDescriptor = Object.getOwnPropertyDescriptor(HitController.prototype, 'hit')!;
  Throttle({ default: { limit: 3, ttl: 60_000, blockDuration: 30_000 } })(HitController.prototype, 'hit', hitDescriptor);
  const freeDescriptor = Object.getOwnPropertyDescriptor(HitController.prototype, 'free')!;
  SkipThrottle()(HitController.prototype, 'free', freeDescriptor);

  const storage: ThrottlerStorage = new ThrottlerStorageRedis(pool, { prefix });
  class AppModule {}
  Module({
    imports: [ThrottlerModule.forRoot({ throttlers: [{ name: 'default', limit: 100, ttl: 60_000 }], storage, getTracker: (req) => String(req.headers['x-client']) })],
    controllers: [HitController],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })(AppModule);

  const app: INestApplicationContext = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const controller = app.get(HitController);
  const contexts = app.get(ExternalContextCreator);
  const options = { guards: true, interceptors: true, filters: false };
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<unknown>> = {
    '/hit': contexts.create(controller, controller.hit, 'hit', undefined, undefined, undefined, undefined, options, 'http'),
    '/free': contexts.create(controller, controller.free, 'free', undefined, undefined, undefined, undefined, options, 'http'),
  };

  const server: Server = createServer((req, res) => {
    const route = routes[req.url ?? ''];
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    route(req, res).then(
      (body) => res.end(String(body)),
      (e: unknown) => {
        if (e instanceof HttpException) res.writeHead(e.getStatus()).end(e.message);
        else res.writeHead(500).end(e instanceof Error ? e.message : String(e));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
      server.closeAllConnections();
      await closed;
      await app.close();
    },
  };
}

/** The Nest flow, for a test file's pool: counting per client, blocking with Retry-After, shared between app instances. */
export function nestThrottlerFlows(pool: () => AnyPool): void {
  it('@nestjs/throttler: ThrottlerGuard over ThrottlerStorageRedis counts per client, blocks with Retry-After, and two app instances share the count', async () => {
    const prefix = `${unique('nest')}:`;
    const one = await startNestThrottlerApp(pool(), prefix);
    const two = await startNestThrottlerApp(pool(), prefix);
    try {
      const get = async (app: NestThrottlerApp, path: string, client: string) => {
        const res = await fetch(`${app.url}${path}`, { headers: { 'x-client': client } });
        return { status: res.status, remaining: res.headers.get('x-ratelimit-remaining'), retryAfter: res.headers.get('retry-after'), body: await res.text() };
      };
      const first = [await get(one, '/hit', 'a'), await get(two, '/hit', 'a'), await get(one, '/hit', 'a')];
      expect(first.map((r) => [r.status, r.remaining, r.body])).toEqual([[200, '2', 'hit'], [200, '1', 'hit'], [200, '0', 'hit']]);
      const refused = await get(two, '/hit', 'a');
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      expect(Number(refused.retryAfter)).toBeLessThanOrEqual(30);
      expect((await get(one, '/hit', 'a')).status).toBe(429);
      expect(await get(one, '/hit', 'b')).toMatchObject({ status: 200, remaining: '2' });
      expect(await get(one, '/free', 'a')).toMatchObject({ status: 200, body: 'free' });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
    expect(await pool().call('PING')).toBe('PONG');
  });
}
