/**
 * The handle `asBullMQ(pool)` returns: BullMQ 6.7's `IRedisClient` over a pool. Plain commands
 * and scripts go through the pool (its failover, retries and cluster routing); a handle that
 * blocks (BZPOPMIN, XREAD BLOCK) or carries a name (CLIENT SETNAME, `duplicate({
 * connectionName })`) gets one connection of its own from `pool.dedicated()`, outside
 * `pool.max`, so that any number of Workers run side by side and show in `CLIENT LIST`.
 */
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { IRedisClient } from 'bullmq';
import { ConnectionError, PoolClosedError, type Arg, type DedicatedConnection, type Reply } from '../../index.js';
import { hashTagOf, keysPerMaster, onNodeOf } from './cluster.js';
import {
  checkOptions, cursorReply, flatRecord, flatWithScores, members, popTuple, scoreString, scriptArgs, streamsReply, toArg, xaddArgs, xreadArgs,
} from './replies.js';
import { BullMQTransaction } from './transaction.js';
import type { BullMQPool, ScriptRegistry } from './types.js';

export type { BullMQPool, ScriptEntry, ScriptRegistry } from './types.js';

/** What a handle shares with its duplicates. */
interface Shared {
  pool: BullMQPool;
  cluster: boolean;
  scripts: ScriptRegistry;
}

/** Status values BullMQ reads: 'wait' (not connected yet), 'ready', 'end'. */
type Status = 'wait' | 'ready' | 'end';

/**
 * BullMQ's `IRedisClient` on a redis-ha-pool pool. See `asBullMQ`. A handle never owns the
 * pool: `quit()`/`disconnect()` end this handle (and its own connection) only.
 */
export class BullMQClient extends EventEmitter implements IRedisClient {
  /** True on a `ClusterPool`: BullMQ then expects a `{hash-tag}` queue prefix. */
  readonly isCluster: boolean;
  /** Read by BullMQ: no `keyPrefix` (use BullMQ's `prefix`) and no `maxRetriesPerRequest`. */
  options: Record<string, unknown>;
  private state: Status;
  private name: string | undefined;
  private own: DedicatedConnection | undefined;
  /** Set while `quit()`/`disconnect()` run: a blocked command cut by them resolves null, as BullMQ expects. */
  private ending = false;
  /** Marks the handle for BullMQ's structural check (`isIRedisClient`). */
  readonly __redisHaPool = true;

  /** @internal */
  constructor(
    protected readonly shared: Shared,
    status: Status,
    connectionName: string | undefined,
  ) {
    super();
    this.isCluster = shared.cluster;
    this.options = shared.cluster ? { redisOptions: {} } : {};
    this.state = status;
    this.name = connectionName;
    for (const name of shared.scripts.keys()) this.installScript(name);
  }

  private get pool(): BullMQPool {
    return this.shared.pool;
  }

  /** 'wait' until `connect()`, 'ready', then 'end' after `quit()`/`disconnect()`. Setting 'end' (BullMQ does) ends the handle. */
  get status(): string {
    return this.state;
  }
  set status(value: string) {
    if (value === 'end') this.endOwn();
    if (value === 'wait' || value === 'ready' || value === 'end') this.state = value;
  }

  // ------------------------------------------------------------------ lifecycle

  /** Marks the handle ready; a named handle opens its own connection now, so its name is listed at once. */
  async connect(): Promise<void> {
    this.ensurePoolOpen();
    this.ending = false;
    this.state = 'ready';
    if (this.name !== undefined) await this.dedicated().connect();
    this.emit('ready');
  }

  /** Ends this handle: its own connection closes (a blocked command resolves null). With `reconnect`, it connects again. */
  disconnect(reconnect = false): void {
    this.endOwn();
    this.state = 'end';
    this.emit('close');
    if (reconnect) {
      this.connect().catch(() => {});
      return;
    }
    this.emit('end');
  }

  /** Ends this handle (never the pool). */
  async quit(): Promise<string> {
    this.endOwn();
    this.state = 'end';
    setImmediate(() => {
      this.emit('close');
      this.emit('end');
    });
    return 'OK';
  }

  /** Another handle on the same pool; `{ connectionName }` names its own connection (BullMQ's worker names). */
  duplicate(options?: { connectionName?: string }): BullMQClient {
    checkOptions('duplicate', options, ['connectionName']);
    return new BullMQClient(this.shared, 'wait', options?.connectionName);
  }

  /**
   * On a cluster, one handle per master serving slots, whose `clientList()`, `clientInfo()`
   * and `info()` answer for that node (BullMQ's `getWorkers()` reads every node).
   */
  nodes(): IRedisClient[] {
    if (!this.isCluster) return [];
    const masters = (this.pool as unknown as { nodes(): Array<{ role: string }> }).nodes().filter((n) => n.role === 'master');
    return masters.map((_, i) => new NodeHandle(this.shared, i));
  }

  private ensurePoolOpen(): void {
    // BasePool.stats() is always available; closed pools report it.
    if ((this.pool.stats() as { closed?: boolean }).closed) throw new PoolClosedError();
  }

  /** This handle's own connection (opened on first use), named and routed by its name's `{hash-tag}` in a cluster. */
  private dedicated(): DedicatedConnection {
    if (this.own === undefined || this.own.closed) {
      const tag = this.name !== undefined ? hashTagOf(this.name) : undefined;
      this.own = this.pool.dedicated({ ...(this.name !== undefined ? { clientName: this.name } : {}), ...(tag !== undefined ? { key: tag } : {}) });
    }
    return this.own;
  }

  private endOwn(): void {
    const own = this.own;
    this.own = undefined;
    if (own) {
      this.ending = true;
      void own.close();
    }
  }

  /**
   * Refuses work on this handle's own connection once the handle ended, with ioredis's
   * message, which BullMQ treats as a closed connection (a Worker shutting down).
   */
  private checkNotEnded(): void {
    if (this.state === 'end') throw new ConnectionError('Connection is closed.');
  }

  /** A blocking command on this handle's own connection; null when `quit`/`disconnect` cut it. */
  private async blocking(args: Arg[]): Promise<Reply> {
    this.checkNotEnded();
    const own = this.dedicated();
    try {
      return await own.call(String(args[0]), ...args.slice(1));
    } catch (err) {
      if (own.closed && this.ending) return null;
      throw err;
    }
  }

  // ------------------------------------------------------------------ scripts

  /** Registers a Lua script; `runCommand(name, args)` and `client[name](args)` run it (EVALSHA, EVAL after NOSCRIPT). */
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string; readOnly?: boolean }): void {
    checkOptions('defineCommand', definition, ['numberOfKeys', 'lua', 'readOnly']);
    // readOnly is only a routing hint for ioredis: BullMQ's scripts are not declared no-writes.
    const script = this.pool.script(definition.lua, { keys: definition.numberOfKeys });
    this.shared.scripts.set(name, { script, numberOfKeys: definition.numberOfKeys });
    this.installScript(name);
  }

  private installScript(name: string): void {
    if (name in BullMQClient.prototype) return;
    Object.defineProperty(this, name, { value: (...args: unknown[]) => this.runCommand(name, args), configurable: true, writable: true });
  }

  async runCommand(name: string, args: unknown[]): Promise<unknown> {
    const s = this.shared.scripts.get(name);
    if (!s) throw new Error(`BullMQ: unknown command "${name}"`);
    return s.script(...scriptArgs(args));
  }

  multi(): BullMQTransaction {
    return new BullMQTransaction(this.pool.multi(), this.shared.scripts);
  }

  pipeline(): BullMQTransaction {
    return new BullMQTransaction(this.pool.pipeline(), this.shared.scripts);
  }

  // ------------------------------------------------------------------ commands

  /** Any command through the pool (blocking ones on this handle's own connection). */
  async call(command: string, ...args: Arg[]): Promise<Reply> {
    return this.pool.call(command, ...args);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return this.pool.hgetall(key) as Promise<Record<string, string>>;
  }
  async hget(key: string, field: string): Promise<string | null> {
    return (await this.pool.call<string | null>('HGET', key, field)) ?? null;
  }
  async hmget(key: string, ...fields: string[]): Promise<(string | null)[]> {
    return (await this.pool.call<Array<string | null>>('HMGET', key, ...fields)).map((v) => v ?? null);
  }
  /** `hset(key, { field: value })`, or ioredis's `hset(key, field, value, …)`. */
  async hset(key: string, data: Record<string, string | number> | string, ...rest: unknown[]): Promise<number> {
    const args = typeof data === 'string' ? [data, ...rest].map(toArg) : flatRecord('hset', data);
    return this.pool.call<number>('HSET', key, ...args);
  }
  async hdel(key: string, ...fields: string[]): Promise<number> {
    return this.pool.call<number>('HDEL', key, ...fields);
  }
  async hexists(key: string, field: string): Promise<number> {
    return this.pool.call<number>('HEXISTS', key, field);
  }
  async get(key: string): Promise<string | null> {
    return this.pool.call<string | null>('GET', key);
  }
  async set(key: string, value: string | number, options?: { PX?: number; EX?: number }): Promise<string | null> {
    checkOptions('set', options, ['PX', 'EX']);
    const ttl: Arg[] = options?.PX !== undefined ? ['PX', options.PX] : options?.EX !== undefined ? ['EX', options.EX] : [];
    return this.pool.call<string | null>('SET', key, toArg(value), ...ttl);
  }
  /** With no keys it resolves 0 without sending anything. */
  async del(...keys: string[]): Promise<number> {
    return keys.length === 0 ? 0 : this.pool.call<number>('DEL', ...keys);
  }
  async zrange(key: string, start: number, end: number, options?: { WITHSCORES?: boolean }): Promise<string[]> {
    checkOptions('zrange', options, ['WITHSCORES']);
    if (options?.WITHSCORES) return flatWithScores(await this.pool.call('ZRANGE', key, start, end, 'WITHSCORES'));
    return members(await this.pool.call('ZRANGE', key, start, end));
  }
  async zrevrange(key: string, start: number, end: number, options?: { WITHSCORES?: boolean }): Promise<string[]> {
    checkOptions('zrevrange', options, ['WITHSCORES']);
    if (options?.WITHSCORES) return flatWithScores(await this.pool.call('ZREVRANGE', key, start, end, 'WITHSCORES'));
    return members(await this.pool.call('ZREVRANGE', key, start, end));
  }
  async zcard(key: string): Promise<number> {
    return this.pool.call<number>('ZCARD', key);
  }
  async zscore(key: string, member: string): Promise<string | null> {
    const s = await this.pool.call('ZSCORE', key, member);
    return s === null ? null : scoreString(s);
  }
  async lrange(key: string, start: number, end: number): Promise<string[]> {
    return this.pool.call<string[]>('LRANGE', key, start, end);
  }
  async llen(key: string): Promise<number> {
    return this.pool.call<number>('LLEN', key);
  }
  async ltrim(key: string, start: number, end: number): Promise<string> {
    return this.pool.call<string>('LTRIM', key, start, end);
  }
  async lpos(key: string, value: string): Promise<number | null> {
    return this.pool.call<number | null>('LPOS', key, value);
  }
  async smembers(key: string): Promise<string[]> {
    return members(await this.pool.call('SMEMBERS', key));
  }
  async xadd(key: string, id: string, fields: Record<string, string | number>, options?: { MAXLEN?: number; approximate?: boolean }): Promise<string> {
    const [cmd, ...args] = xaddArgs(key, id, fields, options);
    return this.pool.call<string>(String(cmd), ...args);
  }
  /** With `BLOCK`, on this handle's own connection (QueueEvents blocks here). */
  async xread(streams: { key: string; id: string }[], options?: { BLOCK?: number; COUNT?: number }): Promise<ReturnType<typeof streamsReply>> {
    const { args, blocks } = xreadArgs(streams, options);
    return streamsReply(blocks ? await this.blocking(args) : await this.pool.call(String(args[0]), ...args.slice(1)));
  }
  async xtrim(key: string, strategy: 'MAXLEN', threshold: number, options?: { approximate?: boolean }): Promise<number> {
    checkOptions('xtrim', options, ['approximate']);
    return this.pool.call<number>('XTRIM', key, strategy, ...(options?.approximate !== false ? ['~'] : []), threshold);
  }
  /** On this handle's own connection: `[key, member, score]`, or null on timeout. */
  async bzpopmin(key: string, timeout: number): Promise<[key: string, member: string, score: string] | null> {
    return popTuple(await this.blocking(['BZPOPMIN', key, timeout]));
  }
  /** One server's INFO (in a cluster: one master's). */
  async info(): Promise<string> {
    if (!this.isCluster) return this.pool.call<string>('INFO');
    const [key] = await keysPerMaster(this.pool);
    return String(await onNodeOf(this.pool, key ?? '{0}', 'INFO'));
  }
  /** Names this handle's own connection (opened now if it has none); kept on every connection it opens later. */
  async clientSetName(name: string): Promise<unknown> {
    this.checkNotEnded();
    const own = this.own;
    this.name = name;
    if (own && !own.closed) return own.call('CLIENT', 'SETNAME', name);
    await this.dedicated().connect();
    return 'OK';
  }
  async clientList(): Promise<string> {
    return this.pool.call<string>('CLIENT', 'LIST');
  }
  /** This handle's own connection's CLIENT INFO when it has one, else a pool connection's. */
  async clientInfo(): Promise<string> {
    const own = this.own;
    return own && !own.closed ? own.call<string>('CLIENT', 'INFO') : this.pool.call<string>('CLIENT', 'INFO');
  }
  /**
   * SCAN with `[cursor, keys]`. In a cluster the pattern must hold a `{hash-tag}` (BullMQ's
   * queue prefix): the scan runs on the master of that slot, so its cursor stays meaningful.
   */
  async scan(cursor: string | number, options: { MATCH?: string; COUNT?: number }): Promise<[string, string[]]> {
    checkOptions('scan', options, ['MATCH', 'COUNT']);
    const args: string[] = [String(cursor)];
    if (options?.MATCH !== undefined) args.push('MATCH', options.MATCH);
    if (options?.COUNT !== undefined) args.push('COUNT', String(options.COUNT));
    if (!this.isCluster) return cursorReply(await this.pool.call('SCAN', ...args));
    const tag = options?.MATCH !== undefined ? hashTagOf(options.MATCH) : undefined;
    if (tag === undefined) throw new TypeError('asBullMQ: scan on a ClusterPool needs a MATCH pattern with a {hash-tag} (use a BullMQ prefix such as "{myapp}"): a cursor belongs to one node.');
    return cursorReply(await onNodeOf(this.pool, tag, 'SCAN', ...args));
  }
  /** Every key matching `match` (on every master of a cluster), in arrays of up to `count`. */
  scanStream(options: { match: string; count?: number }): Readable {
    checkOptions('scanStream', options, ['match', 'count']);
    const count = options.count ?? 100;
    const iterator = this.pool.scanIterator({ match: options.match, count })[Symbol.asyncIterator]();
    return new Readable({
      objectMode: true,
      async read() {
        try {
          const batch: string[] = [];
          while (batch.length < count) {
            const next = await iterator.next();
            if (next.done) break;
            batch.push(next.value);
          }
          if (batch.length > 0) this.push(batch);
          if (batch.length < count) this.push(null);
        } catch (err) {
          this.destroy(err as Error);
        }
      },
    });
  }

  // Commands outside IRedisClient that BullMQ's adapter conformance test and users call (ioredis argument order).
  async zadd(key: string, ...scoreMembers: Array<string | number>): Promise<number> {
    return this.pool.call<number>('ZADD', key, ...scoreMembers);
  }
  async zrem(key: string, ...m: string[]): Promise<number> {
    return this.pool.call<number>('ZREM', key, ...m);
  }
  async lpush(key: string, ...values: Array<string | number>): Promise<number> {
    return this.pool.call<number>('LPUSH', key, ...values);
  }
  async rpush(key: string, ...values: Array<string | number>): Promise<number> {
    return this.pool.call<number>('RPUSH', key, ...values);
  }
  async sadd(key: string, ...m: Array<string | number>): Promise<number> {
    return this.pool.call<number>('SADD', key, ...m);
  }
  async scard(key: string): Promise<number> {
    return this.pool.call<number>('SCARD', key);
  }
  async xlen(key: string): Promise<number> {
    return this.pool.call<number>('XLEN', key);
  }
  async exists(...keys: string[]): Promise<number> {
    return keys.length === 0 ? 0 : this.pool.call<number>('EXISTS', ...keys);
  }
  async incr(key: string): Promise<number> {
    return this.pool.call<number>('INCR', key);
  }
}

/** A cluster node as `nodes()` hands it out: the pool's commands, with `CLIENT LIST`, `CLIENT INFO` and `INFO` answered by that node. */
class NodeHandle extends BullMQClient {
  constructor(shared: Shared, private readonly index: number) {
    super(shared, 'ready', undefined);
  }

  private async onNode(command: string, ...args: string[]): Promise<string> {
    const keys = await keysPerMaster(this.shared.pool);
    const key = keys[this.index] ?? keys[0] ?? '{0}';
    return String(await onNodeOf(this.shared.pool, key, command, ...args));
  }

  override clientList(): Promise<string> {
    return this.onNode('CLIENT', 'LIST');
  }
  override clientInfo(): Promise<string> {
    return this.onNode('CLIENT', 'INFO');
  }
  override info(): Promise<string> {
    return this.onNode('INFO');
  }
}

/** @internal A root handle on `pool`. */
export function rootHandle(pool: BullMQPool, cluster: boolean, connectionName: string | undefined): BullMQClient {
  // A named handle waits for connect() (BullMQ calls it) to open its own connection.
  return new BullMQClient({ pool, cluster, scripts: new Map() }, connectionName === undefined ? 'ready' : 'wait', connectionName);
}
