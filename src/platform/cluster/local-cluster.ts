import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import type { Sql } from '../db/index.ts';
import type { Logger } from '../logger.ts';
import {
  ActorUnavailableError,
  DEFAULT_ASK_TIMEOUT_MS,
  NodeServices,
  NodeUnavailableError,
  type ServiceHandler,
  SHARD_COUNT,
  ShardEvents,
  invoke,
  shardOf,
  type ActorHandler,
  type AskOptions,
  type Cluster,
  type Placement,
  type StopOptions,
} from './cluster.ts';
import { acquireEpoch, releaseEpoch } from './fencing.ts';
import { readPlacement } from './placement.ts';

export interface LocalClusterOptions {
  sql: Sql;
  nodeId?: string;
  log?: Logger;
  askTimeoutMs?: number;
}

export function newNodeId(): string {
  return `m-${randomBytes(6).toString('hex')}`;
}

/**
 * One process, no Redis: this node owns every shard. Epochs still come from Postgres, through the
 * same fencing code as the Redis cluster, so the host's writes are checked the same way.
 */
export class LocalCluster implements Cluster {
  readonly nodeId: string;
  readonly #sql: Sql;
  readonly #log: Logger;
  readonly #askTimeoutMs: number;
  readonly #events: ShardEvents;
  readonly #owned = new Map<number, number>();
  readonly #startedAt = new Date().toISOString();
  #handler: ActorHandler | null = null;
  #running = false;
  readonly #services = new NodeServices();

  constructor(opts: LocalClusterOptions) {
    this.nodeId = opts.nodeId ?? newNodeId();
    this.#sql = opts.sql;
    this.#log = (opts.log ?? pino({ level: 'silent' })).child({ nodeId: this.nodeId });
    this.#askTimeoutMs = opts.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
    this.#events = new ShardEvents((event, shard, err) => this.#log.error({ err, event, shard }, 'shard listener failed'));
  }

  async start(handler: ActorHandler): Promise<void> {
    if (this.#running) return;
    this.#handler = handler;
    this.#running = true;
    for (let shard = 0; shard < SHARD_COUNT; shard++) {
      const epoch = await acquireEpoch(this.#sql, shard, this.nodeId);
      this.#owned.set(shard, epoch);
      this.#events.acquired(shard, epoch);
    }
  }

  async stop(opts: StopOptions = {}): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    const shards = [...this.#owned];
    if (opts.drain) {
      await Promise.all(shards.map(([shard]) => this.#events.releasing(shard)));
    } else {
      for (const [shard] of shards) this.#events.lost(shard);
    }
    this.#owned.clear();
    for (const [shard, epoch] of shards) {
      await releaseEpoch(this.#sql, shard, this.nodeId, epoch).catch((err) => this.#log.warn({ err, shard }, 'could not record the release'));
    }
  }

  owned(): ReadonlyMap<number, number> {
    return new Map(this.#owned);
  }

  async placement(): Promise<Placement> {
    const p = await readPlacement(null, this.#sql, '');
    if (this.#running) {
      p.nodes = [{ id: this.nodeId, host: hostname(), pid: process.pid, startedAt: this.#startedAt, lastSeenMsAgo: 0 }];
    }
    return p;
  }

  on(event: 'acquired', l: (shard: number, epoch: number) => void): void;
  on(event: 'releasing', l: (shard: number) => Promise<void> | void): void;
  on(event: 'lost', l: (shard: number) => void): void;
  on(event: 'acquired' | 'releasing' | 'lost', l: (...args: never[]) => unknown): void {
    this.#events.on(event, l);
  }

  async send(actorId: string, event: Record<string, unknown>): Promise<void> {
    const { handler, shard, epoch } = this.#route(actorId);
    invoke(handler, { actorId, event }, shard, epoch).catch((err) => this.#log.warn({ err, actorId, shard }, 'send: the handler failed'));
  }

  async ask<T = unknown>(actorId: string, event: Record<string, unknown>, opts: AskOptions = {}): Promise<T> {
    const { handler, shard, epoch } = this.#route(actorId);
    const timeoutMs = opts.timeoutMs ?? this.#askTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ActorUnavailableError({ message: `no reply from actor ${actorId} within ${timeoutMs} ms`, details: { actorId, shard, timeoutMs } })),
        timeoutMs,
      );
    });
    try {
      return (await Promise.race([invoke(handler, { actorId, event }, shard, epoch), timeout])) as T;
    } finally {
      clearTimeout(timer);
    }
  }

  serve(service: string, handler: ServiceHandler): void {
    this.#services.serve(service, handler);
  }

  async call<T = unknown>(nodeId: string, service: string, payload: Record<string, unknown>): Promise<T> {
    if (nodeId !== this.nodeId || !this.#running) throw new NodeUnavailableError(nodeId, 'one process, no Redis: only this node exists');
    return (await this.#services.invoke(service, payload)) as T;
  }

  #route(actorId: string): { handler: ActorHandler; shard: number; epoch: number } {
    const shard = shardOf(actorId);
    const epoch = this.#owned.get(shard);
    if (!this.#running || !this.#handler || epoch === undefined) {
      throw new ActorUnavailableError({ message: 'this node is not serving actors', details: { actorId, shard } });
    }
    return { handler: this.#handler, shard, epoch };
  }
}
