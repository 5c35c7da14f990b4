/** Types the BullMQ adapter's modules share (here, so that none of them imports another in a circle). */
import type { BasePool, Script } from '../../index.js';

/** The pools `asBullMQ` works on: `StandalonePool`, `SentinelPool`, `ClusterPool`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type BullMQPool = BasePool<any>;

/** A script registered by `defineCommand`, shared by a handle and its duplicates. */
export interface ScriptEntry {
  script: Script;
  numberOfKeys: number;
}

/** The scripts of a handle and its duplicates, by name. */
export type ScriptRegistry = Map<string, ScriptEntry>;
