/**
 * A scripted fake RESP server for faults a real server cannot be made to
 * produce on demand: malformed frames, replies withheld forever, partial
 * frames, pathological redirections, misbehaving sentinels, ...
 *
 * It listens on 127.0.0.1 on a free port. Each command a client sends
 * (multibulk or inline) is recorded in `received` and passed to the handler;
 * whatever bytes the handler returns are written raw. Returning null or
 * undefined writes nothing (a server that never answers). The handler may
 * also write to, end or destroy the socket itself.
 *
 * Replies are written in command order even when the handler is async.
 */
import net from 'node:net';
import type { NodeAddress } from '../../src/types.js';
import { decodeCommand } from './resp-wire.js';

export { resp } from './resp-wire.js';

export type FakeReply = string | Buffer | null | undefined | void;

/**
 * Gets each parsed command and the client socket; returns raw RESP bytes to
 * write, or null/undefined to write nothing. May return a promise (e.g. to
 * delay a reply).
 */
export type FakeHandler = (command: string[], socket: net.Socket) => FakeReply | Promise<FakeReply>;

export interface FakeServer {
  address: NodeAddress;
  port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Parsed commands received, in arrival order, from all connections. */
  received: string[][];
  /** Destroys every accepted socket and stops listening. */
  close(): Promise<void>;
}

export function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const sockets = new Set<net.Socket>();
  const received: string[][] = [];
  let connections = 0;

  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined); // clients may reset; the test decides what matters
    let buf = Buffer.alloc(0);
    let chain: Promise<void> = Promise.resolve();
    socket.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      let pos = 0;
      for (;;) {
        let decoded;
        try {
          decoded = decodeCommand(buf, pos);
        } catch (err) {
          socket.end(`-ERR Protocol error: ${(err as Error).message}\r\n`);
          return;
        }
        if (!decoded) break;
        pos = decoded.next;
        const command = decoded.value;
        if (command.length === 0) continue; // empty inline line
        received.push(command);
        chain = chain.then(async () => {
          const reply = await handler(command, socket);
          if (reply !== null && reply !== undefined && !socket.destroyed && socket.writable) socket.write(reply);
        });
        chain.catch((err) => socket.destroy(err as Error));
      }
      buf = buf.subarray(pos);
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const port = (server.address() as net.AddressInfo).port;
      resolve({
        address: { host: '127.0.0.1', port },
        port,
        get connections() {
          return connections;
        },
        received,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            sockets.clear();
            server.close(() => done());
          }),
      });
    });
  });
}
