/**
 * Free-port selection on 127.0.0.1. A port is free when a listener can bind
 * it; the listener is closed before the port is handed out, so another
 * process could still take it in between. Topology start-up therefore
 * retries on "Address already in use" (see `topology.ts`). Within this
 * process a port is never handed out twice.
 */
import net from 'node:net';

const handedOut = new Set<number>();

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/** A port on 127.0.0.1 that was free a moment ago (bind to port 0, close). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await tryListen(0);
    if (port !== undefined && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('freePort: could not find a free port on 127.0.0.1');
}

/**
 * A port for a cluster node: the port and its cluster bus port (port + 10000)
 * must both be free, so the port must be at most 55535.
 */
export async function freeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = await tryListen(0);
    if (port === undefined || port > 55535 || handedOut.has(port) || handedOut.has(port + 10000)) continue;
    if ((await tryListen(port + 10000)) === undefined) continue;
    handedOut.add(port);
    handedOut.add(port + 10000);
    return port;
  }
  throw new Error('freeClusterPort: could not find a port P <= 55535 with P and P+10000 free on 127.0.0.1');
}
