/**
 * How a connection tells pub/sub frames apart (src/connection/pubsub-replies.ts): which
 * commands wait for confirmations, which frame answers which command, which frames are
 * messages. The socket side is covered by test/unit/connection.test.ts and
 * test/integration/pubsub*.test.ts against real servers.
 */
import { describe, expect, it } from 'vitest';
import {
  confirmationKind, confirms, entersSubscribed, isEnteringConfirmation, isResp2Push, pushConfirms, word, type ConfirmationWait,
} from '../../src/connection/pubsub-replies.js';
import { RedisError } from '../../src/errors.js';
import type { Reply } from '../../src/types.js';

const waits = (confirm: string | undefined, confirmName?: string): ConfirmationWait => ({ confirm, confirmName });
const GET = waits(undefined);

describe('confirmationKind: which commands are answered by pub/sub confirmations', () => {
  it.each([
    ['SUBSCRIBE', 'subscribe'], ['subscribe', 'subscribe'], ['PSubscribe', 'psubscribe'], ['SSUBSCRIBE', 'ssubscribe'],
    ['UNSUBSCRIBE', 'unsubscribe'], ['punsubscribe', 'punsubscribe'], ['SUNSUBSCRIBE', 'sunsubscribe'],
    ['GET', undefined], ['PUBLISH', undefined], ['SPUBLISH', undefined], ['PUBSUB', undefined],
    ['XSUBSCRIBE', undefined], ['SUBSCRIBES', undefined], ['UNSUBSCRIBEX', undefined], ['PPSUBSCRIBE', undefined], ['', undefined],
  ])('%j -> %j', (name, kind) => {
    expect(confirmationKind(name)).toBe(kind);
  });
});

describe('entersSubscribed: which confirmations put the connection in subscribed mode', () => {
  it.each([
    ['subscribe', true], ['psubscribe', true], ['ssubscribe', true],
    ['unsubscribe', false], ['punsubscribe', false], ['sunsubscribe', false], ['message', false],
  ])('%s -> %s', (kind, enters) => {
    expect(entersSubscribed(kind)).toBe(enters);
  });
});

describe('word: a frame\'s first element as text', () => {
  it.each<[Reply | undefined, string]>([
    ['message', 'message'], [Buffer.from('pmessage'), 'pmessage'], [3, ''], [null, ''], [undefined, ''], [['message'], ''],
  ])('%j -> %j', (v, text) => {
    expect(word(v)).toBe(text);
  });
});

describe('confirms: whether a frame is the confirmation the head waits for', () => {
  it.each<[string, ConfirmationWait | undefined, string, Reply | undefined, boolean]>([
    ['same kind and channel', waits('subscribe', 'news'), 'subscribe', 'news', true],
    ['channel as a Buffer (pushBuffers)', waits('subscribe', 'news'), 'subscribe', Buffer.from('news'), true],
    ['another channel', waits('subscribe', 'news'), 'subscribe', 'sport', false],
    ['another kind', waits('subscribe', 'news'), 'psubscribe', 'news', false],
    ['UNSUBSCRIBE without channels matches any', waits('unsubscribe'), 'unsubscribe', 'news', true],
    ['…even a nil channel (nothing was subscribed)', waits('unsubscribe'), 'unsubscribe', null, true],
    ['a command that waits for no confirmation', GET, 'subscribe', 'news', false],
    ['nothing in flight', undefined, 'unsubscribe', 'news', false],
  ])('%s -> %s', (_, head, kind, channel, expected) => {
    expect(confirms(head, kind, channel)).toBe(expected);
  });
});

describe('isEnteringConfirmation: a SUBSCRIBE reply that enters subscribed mode', () => {
  it.each<[string, Reply | RedisError, boolean]>([
    ['subscribe confirmation', ['subscribe', 'news', 1], true],
    ['as Buffers', [Buffer.from('ssubscribe'), Buffer.from('news'), 1], true],
    ['unsubscribe confirmation', ['unsubscribe', 'news', 0], false],
    ['an error reply (NOPERM)', new RedisError('NOPERM no permissions'), false],
    ['a plain string', 'subscribe', false],
    ['an empty array', [], false],
  ])('%s -> %s', (_, value, expected) => {
    expect(isEnteringConfirmation(value)).toBe(expected);
  });
});

describe('isResp2Push: in RESP2 subscribed mode, whether an array is out of band rather than the head\'s answer', () => {
  it.each<[string, Reply[], ConfirmationWait | undefined, boolean]>([
    ['a message', ['message', 'news', 'hi'], GET, true],
    ['a pattern message', ['pmessage', 'n*', 'news', 'hi'], waits('psubscribe', 'n*'), true],
    ['a sharded message, as Buffers', [Buffer.from('smessage'), Buffer.from('news'), Buffer.from('hi')], undefined, true],
    ['the confirmation the head waits for', ['subscribe', 'news', 1], waits('subscribe', 'news'), false],
    ['an unsubscribe the head asked for', ['unsubscribe', 'news', 0], waits('unsubscribe'), false],
    ['an unsubscribe nobody asked for (slot moved away)', ['sunsubscribe', 'news', 0], GET, true],
    ['…with nothing in flight', ['sunsubscribe', 'news', 0], undefined, true],
    ['a confirmation for another channel than the head\'s', ['subscribe', 'sport', 2], waits('subscribe', 'news'), true],
    ['a PING reply in subscribed mode (two elements)', ['pong', ''], GET, false],
    ['a short frame that names message', ['message', 'news'], GET, false],
    ['a reply that merely has three elements', ['a', 'b', 'c'], GET, false],
  ])('%s -> %s', (_, frame, head, expected) => {
    expect(isResp2Push(frame, head)).toBe(expected);
  });
});

describe('pushConfirms: under RESP3, whether a push answers the head', () => {
  it.each<[string, Reply[], ConfirmationWait, boolean]>([
    ['its confirmation', ['subscribe', 'news', 1], waits('subscribe', 'news'), true],
    ['as Buffers', [Buffer.from('subscribe'), Buffer.from('news'), 1], waits('subscribe', 'news'), true],
    ['UNSUBSCRIBE of all', ['unsubscribe', 'news', 0], waits('unsubscribe'), true],
    ['a message while a SUBSCRIBE waits', ['message', 'news', 'hi'], waits('subscribe', 'news'), false],
    ['a push while a plain command waits', ['subscribe', 'news', 1], GET, false],
    ['an invalidation push (client-side cache)', ['invalidate', ['k']], GET, false],
  ])('%s -> %s', (_, push, head, expected) => {
    expect(pushConfirms(head, push)).toBe(expected);
  });
});
