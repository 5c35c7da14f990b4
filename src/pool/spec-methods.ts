/**
 * The iterators and `script()` that every command surface offers (pools, views, leases),
 * written once over the surface's `runSpec`, and installed on each class the way the typed
 * helpers are (`installHelpers`).
 */
import type { CommandSpec, ScanOptions } from '../commands/helpers.js';
import { hscanEach, sscanEach, zscanEach } from '../commands/scan-iterators.js';
import { bindScript, defineScript, type ScriptOptions } from '../commands/script.js';
import type { Arg } from '../types.js';
import type { CallOptions } from './call-options.js';
import { resolveCall, type Dispatcher } from './call.js';

/** What the installed methods read of the surface they are installed on. */
interface SpecSurface {
  runSpec(spec: CommandSpec): Promise<unknown>;
  readonly dispatcher: Dispatcher;
  readonly callOptions: CallOptions | undefined;
}

type Iterated = Omit<ScanOptions, 'type'> | undefined;

const METHODS = {
  /** Every [field, value] of a hash, with HSCAN (`match` filters fields). */
  hscanIterator(this: SpecSurface, key: Arg, options?: Iterated) {
    return hscanEach((spec) => this.runSpec(spec), key, options);
  },
  /** Every member of a set, with SSCAN. */
  sscanIterator(this: SpecSurface, key: Arg, options?: Iterated) {
    return sscanEach((spec) => this.runSpec(spec), key, options);
  },
  /** Every [member, score] of a sorted set, with ZSCAN. */
  zscanIterator(this: SpecSurface, key: Arg, options?: Iterated) {
    return zscanEach((spec) => this.runSpec(spec), key, options);
  },
  /** A Lua script run by EVALSHA, loaded on NOSCRIPT (see `Scripting.script`). */
  script(this: SpecSurface, source: string, options: ScriptOptions) {
    const def = defineScript(source, options);
    return bindScript(def, (spec) => this.runSpec(spec), () => resolveCall(this.dispatcher, this.callOptions, undefined).deadline || undefined);
  },
};

/** Gives `proto` the iterators and `script()`; its instances must have `runSpec`, `dispatcher` and `callOptions`. */
export function installSpecMethods(proto: object): void {
  for (const [name, fn] of Object.entries(METHODS)) {
    Object.defineProperty(proto, name, { value: fn, writable: true, configurable: true, enumerable: false });
  }
}
