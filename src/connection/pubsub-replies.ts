/**
 * How a connection tells pub/sub frames apart: which commands wait for confirmations, which
 * frame confirms which command, and which frames are messages rather than replies. Pure
 * decisions; the connection acts on them (test/unit/pubsub-replies.test.ts).
 *
 * Why this is needed: (P|S)SUBSCRIBE to n channels is answered by n confirmations, not one
 * reply; under RESP2 messages arrive in the reply stream itself, and under RESP3 the
 * confirmations arrive as pushes. An UNSUBSCRIBE may also come unasked (the server drops a
 * sharded channel whose slot moved away) and must not be taken as the answer to the head.
 */
import type { DecodedValue } from '../resp/decoder.js';
import type { Reply } from '../types.js';

const SUBSCRIBE_RE = /^[ps]?(un)?subscribe$/i;
const ENTERS = new Set(['subscribe', 'psubscribe', 'ssubscribe']);
const CONFIRM = new Set(['subscribe', 'psubscribe', 'ssubscribe', 'unsubscribe', 'punsubscribe', 'sunsubscribe']);
const MESSAGE = new Set(['message', 'pmessage', 'smessage']);

/** What a command in flight waits for, as far as pub/sub is concerned. */
export interface ConfirmationWait {
  /** The confirmation kind it waits for (`subscribe`, `sunsubscribe` …); undefined for other commands. */
  readonly confirm: string | undefined;
  /** The channel that confirmation names; undefined matches any. */
  readonly confirmName: string | undefined;
}

/**
 * For a (P|S)(UN)SUBSCRIBE command name (any case), the confirmation kind its answers carry:
 * the name in lower case. Undefined for every other command.
 */
export function confirmationKind(name: string): string | undefined {
  // The length test first: send() asks this of every command, and most are not pub/sub.
  return name.length >= 9 && name.length <= 12 && SUBSCRIBE_RE.test(name) ? name.toLowerCase() : undefined;
}

/** Whether a confirmation of `kind` (from {@link confirmationKind}) puts the connection in subscribed mode. */
export function entersSubscribed(kind: string): boolean {
  return ENTERS.has(kind);
}

/** A pub/sub frame's first element as text (it is a Buffer on a connection with `pushBuffers`). */
export function word(v: Reply | undefined): string {
  return typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString() : '';
}

/** Whether a pub/sub frame of `kind` for `channel` is the confirmation `head` waits for. */
export function confirms(head: ConfirmationWait | undefined, kind: string, channel: Reply | undefined): boolean {
  if (head === undefined || head.confirm !== kind) return false;
  return head.confirmName === undefined || head.confirmName === word(channel);
}

/** Whether a reply is a confirmation that enters subscribed mode (asked of a SUBSCRIBE's reply). */
export function isEnteringConfirmation(value: DecodedValue): boolean {
  return Array.isArray(value) && ENTERS.has(word(value[0]));
}

/**
 * RESP2, connection in subscribed mode: whether an array in the reply stream is out of band (a
 * message, or a confirmation `head` does not wait for, such as an unsubscribe the server
 * decided on) rather than the answer to `head`, the oldest command in flight.
 */
export function isResp2Push(frame: readonly Reply[], head: ConfirmationWait | undefined): boolean {
  if (frame.length < 3) return false;
  const kind = word(frame[0]);
  return MESSAGE.has(kind) || (CONFIRM.has(kind) && !confirms(head, kind, frame[1]));
}

/**
 * RESP3: whether a push is the confirmation `head` waits for. It then answers that command;
 * any other push is out of band.
 */
export function pushConfirms(head: ConfirmationWait, push: readonly Reply[]): boolean {
  return head.confirm !== undefined && confirms(head, word(push[0]), push[1]);
}
