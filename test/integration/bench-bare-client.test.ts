/**
 * The benchmarks' yardstick (test/bench/bare-client.ts) must be a correct client, or every
 * "× bare" ratio is meaningless: replies in order under 1,000 pipelined commands against a real
 * redis-server, error replies rejecting only their own command, a 1 MB bulk split across TCP
 * chunks, and the parser fed the same kinds of replies in every possible split.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BareClient, RespParser, type BareReply } from '../bench/bare-client.js';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
let client: BareClient;

beforeAll(async () => {
  topo = await startStandalone();
  client = await BareClient.connect({ host: topo.server.host, port: topo.server.port });
});

afterAll(async () => {
  await client?.close();
  await topo?.stop();
});

type Outcome = { ok: true; value: unknown } | { ok: false; message: string };
const settle = (p: Promise<unknown>): Promise<Outcome> =>
  p.then((value) => ({ ok: true as const, value }), (e: Error) => ({ ok: false as const, message: e.message }));

describe('bare bench client against redis-server', () => {
  it('answers 1,000 pipelined commands in order, 1 MB values and error replies included', async () => {
    const big = (i: number) => `${i}:`.padEnd(1 << 20, String.fromCharCode(97 + (i % 26)));
    const sent: Array<{ args: string[]; expect: Outcome }> = [];
    let counter = 0;
    for (let i = 0; i < 1000; i++) {
      const k = `bare:${i}`;
      switch (i % 10) {
        case 0: sent.push({ args: ['SET', k, `v${i}`], expect: { ok: true, value: 'OK' } }); break;
        case 1: sent.push({ args: ['GET', `bare:${i - 1}`], expect: { ok: true, value: `v${i - 1}` } }); break;
        case 2: sent.push({ args: ['INCR', 'bare:counter'], expect: { ok: true, value: ++counter } }); break;
        case 3: sent.push({ args: ['MGET', `bare:${i - 3}`, 'bare:missing', `bare:${i - 3}`], expect: { ok: true, value: [`v${i - 3}`, null, `v${i - 3}`] } }); break;
        case 4: sent.push({ args: ['GET', 'bare:missing'], expect: { ok: true, value: null } }); break;
        case 5: sent.push({ args: ['INCR', `bare:${i - 5}`], expect: { ok: false, message: 'ERR value is not an integer or out of range' } }); break;
        case 6:
          // Ten 1 MB values over the run: each reply spans many 64 KB reads.
          if (i % 100 === 6) {
            sent.push({ args: ['SET', k, big(i)], expect: { ok: true, value: 'OK' } });
            sent.push({ args: ['GET', k], expect: { ok: true, value: big(i) } });
          } else {
            sent.push({ args: ['DEL', `bare:${i - 6}`, 'bare:missing'], expect: { ok: true, value: 1 } });
          }
          break;
        case 7: sent.push({ args: ['PING'], expect: { ok: true, value: 'PONG' } }); break;
        case 8: sent.push({ args: ['ECHO', 'héllo\r\n$3\r\n'], expect: { ok: true, value: 'héllo\r\n$3\r\n' } }); break;
        default: sent.push({ args: ['LRANGE', 'bare:nolist', '0', '-1'], expect: { ok: true, value: [] } });
      }
    }
    // All sent in one tick: one pipelined write, replies matched purely by order.
    const got = await Promise.all(sent.map((c) => settle(client.send(c.args))));
    for (let i = 0; i < sent.length; i++) {
      const want = sent[i]!.expect;
      const g = got[i]!;
      // toEqual on a 1 MB string prints 1 MB on failure: compare and name the command instead.
      if (JSON.stringify(g) !== JSON.stringify(want)) {
        expect.fail(`reply ${i} to ${sent[i]!.args[0]} ${sent[i]!.args[1] ?? ''}: ${JSON.stringify(g).slice(0, 120)} ≠ ${JSON.stringify(want).slice(0, 120)}`);
      }
    }
    expect(await client.send(['GET', 'bare:counter'])).toBe(String(counter));
  });

  it('keeps an error inside EXEC as an element and a null array as null', async () => {
    const replies = await Promise.all([
      client.send(['MULTI']),
      client.send(['SET', 'bare:tx', 'text']),
      client.send(['INCR', 'bare:tx']),
      client.send(['EXEC']),
      client.send(['BLPOP', 'bare:nolist', '0.01']),
    ]);
    expect(replies.slice(0, 3)).toEqual(['OK', 'QUEUED', 'QUEUED']);
    const exec = replies[3] as unknown[];
    expect(exec[0]).toBe('OK');
    expect(exec[1]).toBeInstanceOf(Error);
    expect((exec[1] as Error).message).toMatch(/^ERR value is not an integer/);
    expect(replies[4]).toBeNull();
  });
});

describe('bare bench client parser', () => {
  const enc = (s: string) => Buffer.from(s, 'utf8');
  const stream = Buffer.concat([
    enc('+OK\r\n+PONG\r\n-ERR bad\r\n:42\r\n:-7\r\n$5\r\nhé\r\n\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n'),
    enc('*3\r\n$1\r\na\r\n*2\r\n:1\r\n-WRONGTYPE x\r\n$-1\r\n'),
  ]);
  const want: BareReply[] = ['OK', 'PONG', new Error('ERR bad'), 42, -7, 'hé\r\n', '', null, null, [], ['a', [1, new Error('WRONGTYPE x')], null]];
  const parse = (chunks: Buffer[]): BareReply[] => {
    const out: BareReply[] = [];
    const p = new RespParser((r) => out.push(r));
    for (const c of chunks) p.feed(c);
    return out;
  };

  it('gives the same replies whatever the split into two or three chunks', () => {
    expect(parse([stream])).toEqual(want);
    for (let a = 1; a < stream.length; a++) {
      expect(parse([stream.subarray(0, a), stream.subarray(a)]), `split at ${a}`).toEqual(want);
      const b = Math.min(stream.length - 1, a + 3);
      if (b > a) expect(parse([stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)]), `split at ${a}, ${b}`).toEqual(want);
    }
  });

  it('gives the same replies fed one byte at a time, a 256 KB bulk included', () => {
    const big = 'x'.repeat(1 << 18);
    const s = Buffer.concat([stream, enc(`$${big.length}\r\n${big}\r\n:1\r\n`)]);
    const chunks = Array.from({ length: s.length }, (_, i) => s.subarray(i, i + 1));
    const got = parse(chunks);
    expect(got.slice(0, want.length)).toEqual(want);
    expect(got.length).toBe(want.length + 2);
    expect(got[want.length] === big).toBe(true);
    expect(got[want.length + 1]).toBe(1);
  });
});
