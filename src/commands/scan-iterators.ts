import type { Arg, Reply } from '../types.js';
import { isArg } from './helper-args.js';
import { HELPERS, type CommandSpec } from './helpers.js';
import type { ScanOptions } from './commands.js';
import type { KeyPrefixer } from './key-prefix.js';
import { scanReply, toNumber, toStr } from './replies.js';

/** Sends one spec and resolves with its shaped reply (a pool's, view's or lease's runSpec). */
export type RunSpec = (spec: CommandSpec) => Promise<unknown>;

/**
 * SCAN options under a key prefix: MATCH covers only the prefix's keys (all of them when no
 * pattern was given), and yielded keys lose the prefix so they can be passed back to helpers,
 * which add it again.
 */
export function prefixedScan(options: ScanOptions | undefined, prefixer: KeyPrefixer | undefined): ScanOptions | undefined {
  if (!prefixer) return options;
  return { ...options, match: prefixer.pattern(options?.match) };
}

/** Every key SCAN finds through `run` (one node, or a keyless route), prefix handled. */
export async function* scanKeys(run: RunSpec, options: ScanOptions | undefined, prefixer: KeyPrefixer | undefined): AsyncIterableIterator<string | Buffer> {
  const o = prefixedScan(options, prefixer);
  let cursor = '0';
  do {
    const spec = HELPERS.scan(cursor, o);
    const [next, keys] = (await run(spec)) as [string, Array<string | Buffer>];
    cursor = next;
    for (const k of keys) yield prefixer ? prefixer.strip(k) : k;
  } while (cursor !== '0');
}

type ElementScan = 'HSCAN' | 'SSCAN' | 'ZSCAN';

function elementSpec(command: ElementScan, key: Arg, cursor: string, options: Omit<ScanOptions, 'type'> | undefined): CommandSpec {
  const name = command.toLowerCase() + 'Iterator';
  const args: Arg[] = [command, key, cursor];
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) throw new TypeError(`${name}(key, { match, count }) takes its options as an object.`);
    for (const k of Object.keys(options)) if (k !== 'match' && k !== 'count') throw new TypeError(`${name}(key, { match, count }): unknown option ${JSON.stringify(k)}.`);
    if (options.match !== undefined) args.push('MATCH', options.match);
    if (options.count !== undefined) args.push('COUNT', options.count);
  }
  return { args, transform: scanReply };
}

async function* elements(run: RunSpec, command: ElementScan, key: Arg, options: Omit<ScanOptions, 'type'> | undefined, step: 1 | 2): AsyncIterableIterator<Reply[]> {
  if (!isArg(key)) throw new TypeError(`${command.toLowerCase()}Iterator(key, { match, count }) needs a key (a string, Buffer or number).`);
  let cursor = '0';
  do {
    const [next, items] = (await run(elementSpec(command, key, cursor, options))) as [string, Reply[]];
    cursor = next;
    for (let i = 0; i + step - 1 < items.length; i += step) yield items.slice(i, i + step);
  } while (cursor !== '0');
}

/** Every [field, value] of a hash (HSCAN); a field may be seen twice if the hash is rehashed during the walk. */
export async function* hscanEach(run: RunSpec, key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[string, string | Buffer]> {
  for await (const [f, v] of elements(run, 'HSCAN', key, options, 2)) yield [toStr(f!), v as string | Buffer];
}

/** Every member of a set (SSCAN). */
export async function* sscanEach(run: RunSpec, key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<string | Buffer> {
  for await (const [m] of elements(run, 'SSCAN', key, options, 1)) yield m as string | Buffer;
}

/** Every [member, score] of a sorted set (ZSCAN), the score as a number. */
export async function* zscanEach(run: RunSpec, key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[string | Buffer, number]> {
  for await (const [m, s] of elements(run, 'ZSCAN', key, options, 2)) yield [m as string | Buffer, toNumber(s!)];
}
