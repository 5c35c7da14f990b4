/**
 * What one flush hands the socket: the encodings of the queued commands, in order, joined
 * into as few writes as possible. Pure; the connection marks the same commands written
 * (test/unit/write-batch.test.ts).
 */
import { SETTLED } from './command.js';

/** Above this, queued command text is written as several strings. */
export const FLUSH_STRING_LIMIT = 64 * 1024 * 1024;

/**
 * Most bytes handed to the socket in one write. A flush writes chunks of about this size
 * while the socket takes them and leaves the rest queued until it drains: a backlog (a stopped
 * or slow server) then waits as the commands' own encodings, which share the callers' argument
 * strings, instead of as one flattened copy of the whole backlog in the socket's buffer; and
 * what was never handed over stays provably unsent.
 */
export const FLUSH_CHUNK_BYTES = 1024 * 1024;

/** What a flush needs of a queued command. */
export interface QueuedEncoding {
  /** QUEUED, WRITTEN or SETTLED (command.ts). */
  readonly state: number;
  /** Its RESP bytes; '' for a SUBSCRIBE's placeholder entry. */
  readonly encoded: string | Array<string | Buffer>;
  /** Encoded length (0 for a placeholder). */
  readonly size: number;
}

/**
 * Where the chunk that starts at `start` ends: after the command that brings it to `maxBytes`
 * (always at least one command, however large), or at the end of the queue.
 */
export function chunkEnd(queue: readonly QueuedEncoding[], start: number, maxBytes = FLUSH_CHUNK_BYTES): number {
  let bytes = 0;
  for (let i = start; i < queue.length; i++) {
    bytes += queue[i]!.size;
    if (bytes >= maxBytes) return i + 1;
  }
  return queue.length;
}

/**
 * Whether a flush leaves `cmd` out: its caller gave up (timeout or abort) before it was
 * written, so it is never sent. A placeholder entry sends nothing but still goes in flight, to
 * absorb its channel's confirmation.
 */
export function skippedByFlush(cmd: QueuedEncoding): boolean {
  return cmd.state === SETTLED && cmd.encoded !== '';
}

/**
 * The bytes of `batch` for one flush: one string (empty when there is nothing to send), or,
 * when a command carries Buffers or the text passes `limit`, the chunks to write corked.
 */
export function writeOf(batch: readonly QueuedEncoding[], limit = FLUSH_STRING_LIMIT): string | Array<string | Buffer> {
  let text = '';
  let parts: Array<string | Buffer> | undefined;
  for (const cmd of batch) {
    if (skippedByFlush(cmd)) continue;
    const e = cmd.encoded;
    if (typeof e === 'string') {
      text += e;
      // One string per write keeps syscalls few, but V8 strings top out near 512 MiB.
      if (text.length > limit) {
        (parts ??= []).push(text);
        text = '';
      }
    } else {
      parts ??= [];
      if (text) parts.push(text);
      text = '';
      for (const p of e) parts.push(p);
    }
  }
  if (parts === undefined) return text;
  if (text) parts.push(text);
  return parts;
}
