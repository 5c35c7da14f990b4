import { parseAddress } from './address.js';
import { cacheFrom, type ResolvedCacheOptions } from './cache/options.js';
import { CONNECTION_OPTIONS, connectionFrom, type ConnectionOptions, type ResolvedConnectionOptions } from './connection/options.js';
import { checkOptions, defineOptions } from './options.js';
import { COMMON_OPTIONS, commonFrom, type CommonOptions, type ResolvedCommonOptions } from './pool/common-options.js';
import type { Address, NodeAddress } from './types.js';

/** Options of {@link StandalonePool.create}. */
export interface StandaloneOptions extends ConnectionOptions, CommonOptions {}

/** Every option of a standalone pool: the connection's and the shared ones. */
export const STANDALONE_OPTIONS = defineOptions<StandaloneOptions>()({ ...CONNECTION_OPTIONS, ...COMMON_OPTIONS });

/** @internal A standalone pool's options, checked (TypeError naming the option), with defaults. */
export interface ResolvedStandaloneOptions {
  address: NodeAddress;
  conn: ResolvedConnectionOptions;
  common: ResolvedCommonOptions;
  cache: ResolvedCacheOptions | undefined;
}

/** @internal Validates the address and every option, then applies defaults (the URL's credentials, db and TLS under explicit options). */
export function resolveStandaloneOptions(address: Address, options: StandaloneOptions): ResolvedStandaloneOptions {
  checkOptions(STANDALONE_OPTIONS, options);
  const parsed = parseAddress(address, 'address');
  const conn = connectionFrom(options, parsed);
  return { address: { host: parsed.host, port: parsed.port }, conn, common: commonFrom(options), cache: cacheFrom(options.cache, conn.protocol) };
}
