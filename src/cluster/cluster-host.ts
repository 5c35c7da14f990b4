import type { CommandRegistry } from '../commands/command-table.js';
import type { NodeAddress } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import type { Topology } from './topology.js';
import type { ZoneTracker } from '../pool/zones.js';

/** What the cluster dispatcher needs from the facade: the topology, options, and hooks for its events and counters. */
export interface ClusterHost {
  readonly topology: Topology;
  readonly o: ResolvedClusterOptions;
  readonly registry: CommandRegistry;
  /** Nodes' zones and reads per zone, with a zone-aware `readFrom`. */
  readonly zones?: ZoneTracker;
  isClosed(): boolean;
  onMoved(slot: number, from: NodeAddress, to: NodeAddress): void;
  onAsk(slot: number, from: NodeAddress, to: NodeAddress): void;
  onRetry(kind: 'tryagain' | 'clusterdown' | 'connection'): void;
}
