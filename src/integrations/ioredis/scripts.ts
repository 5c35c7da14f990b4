/**
 * `defineCommand` of the ioredis facade: the definition's checks, and how a call of a defined
 * command becomes a pool script and its arguments.
 */
import type { Arg, Script, ScriptOptions } from '../../index.js';
import { describe } from './commands.js';

/** What `defineCommand(name, definition)` takes, as ioredis does. */
export interface IoredisCommandDefinition {
  /** The Lua source. */
  lua: string;
  /** How many leading arguments are keys; omitted, the first argument of every call says how many. */
  numberOfKeys?: number;
}

/** How a call of a defined command turns its arguments into a script and the script's arguments. */
export type ScriptCall = (args: Arg[]) => { script: Script; args: Arg[] };

/** Something that makes scripts: a view of the pool. */
export interface ScriptMaker {
  script(source: string, options: ScriptOptions): Script;
}

/** Validates `defineCommand(name, definition)`; `taken` are the facade's own method names. */
export function checkDefinition(name: unknown, definition: unknown, taken: ReadonlySet<string>): IoredisCommandDefinition {
  if (typeof name !== 'string' || name === '') throw new TypeError(`asIoredis: defineCommand(name, { lua, numberOfKeys }) needs the name as a string (got ${describe(name)}).`);
  if (taken.has(name) || taken.has(name.replace(/Buffer$/, ''))) {
    throw new TypeError(`asIoredis: defineCommand('${name}') would replace a method of the facade; choose another name.`);
  }
  if (typeof definition !== 'object' || definition === null) throw new TypeError('asIoredis: defineCommand(name, { lua, numberOfKeys }) needs the definition object.');
  for (const k of Object.keys(definition)) {
    if (k !== 'lua' && k !== 'numberOfKeys') throw new TypeError(`asIoredis: defineCommand option ${k} is not supported by the ioredis facade (it takes lua and numberOfKeys).`);
  }
  const { lua, numberOfKeys } = definition as Record<string, unknown>;
  if (typeof lua !== 'string' || lua === '') throw new TypeError('asIoredis: defineCommand option lua must be the Lua source as a non-empty string.');
  if (numberOfKeys !== undefined && (typeof numberOfKeys !== 'number' || !Number.isInteger(numberOfKeys) || numberOfKeys < 0)) {
    throw new TypeError(`asIoredis: defineCommand option numberOfKeys must be an integer >= 0 or omitted (got ${describe(numberOfKeys)}).`);
  }
  return { lua, ...(numberOfKeys === undefined ? {} : { numberOfKeys: numberOfKeys as number }) };
}

/**
 * The script behind a defined command, made on `maker`. Without `numberOfKeys` the first
 * argument of each call is the key count (ioredis's dynamic form): one script per count seen.
 */
export function scriptCall(maker: ScriptMaker, name: string, definition: IoredisCommandDefinition): ScriptCall {
  const { lua, numberOfKeys } = definition;
  if (numberOfKeys !== undefined) {
    const script = maker.script(lua, { keys: numberOfKeys });
    return (args) => ({ script, args });
  }
  const byCount = new Map<number, Script>();
  return (args) => {
    const n = Number(args[0]);
    if (args.length === 0 || !Number.isInteger(n) || n < 0) {
      throw new TypeError(`asIoredis: ${name} was defined without numberOfKeys, so its first argument must be the number of keys.`);
    }
    let script = byCount.get(n);
    if (script === undefined) byCount.set(n, (script = maker.script(lua, { keys: n })));
    return { script, args: args.slice(1) };
  };
}
