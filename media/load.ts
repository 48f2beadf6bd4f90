import type { Redis } from 'ioredis';
import type { Logger } from '../src/platform/logger.ts';
import type { WorkerPool } from './workers.ts';

/** One worker's load as published: consumers carried and CPU share of a core. */
export interface WorkerLoad {
  worker: number;
  consumers: number;
  cpu: number;
}

/** A worker of some node that could take a room. */
export interface Candidate {
  nodeId: string;
  worker: number;
}

/** How often a node publishes its workers' load, and how long the entry counts as alive without a refresh. */
export const LOAD_PERIOD_MS = 500;
export const LOAD_TTL_MS = 2000;

// KEYS: zset of nodes scored by expiry (Redis time, ms), hash node -> load JSON.
// ARGV: node id ('' to only read), load JSON, ttl ms. Returns [now, node1, load1, node2, load2, ...] of live nodes.
const PUBLISH_AND_READ = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] ~= '' then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
for _, m in ipairs(gone) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('HDEL', KEYS[2], m)
end
local live = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')
local out = { now }
for _, m in ipairs(live) do
  out[#out + 1] = m
  out[#out + 1] = redis.call('HGET', KEYS[2], m) or '[]'
end
return out
`;

/**
 * The media load of every live node: each node with workers publishes theirs to Redis every
 * LOAD_PERIOD_MS, and reads everyone's in the same round trip. A node whose entry is not refreshed
 * within LOAD_TTL_MS (killed, frozen, cut off) is no longer a place for media, and rooms placed on it
 * are re-placed (src/services/live/rooms.ts). Without Redis, the table is this node's own pool.
 */
export class MediaLoad {
  readonly #redis: Redis | null;
  readonly #keys: { nodes: string; load: string };
  readonly #nodeId: string;
  readonly #pool: WorkerPool | null;
  readonly #log: Logger;
  #table = new Map<string, WorkerLoad[]>();
  #timer: NodeJS.Timeout | null = null;
  #listeners: (() => void)[] = [];

  constructor(opts: { redis: Redis | null; prefix: string; nodeId: string; pool: WorkerPool | null; log: Logger }) {
    this.#redis = opts.redis;
    this.#keys = { nodes: `${opts.prefix}media:nodes`, load: `${opts.prefix}media:load` };
    this.#nodeId = opts.nodeId;
    this.#pool = opts.pool;
    this.#log = opts.log;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), LOAD_PERIOD_MS);
    this.#timer.unref();
  }

  /** Called after every refresh (the rooms service checks its placements then). */
  onRefresh(l: () => void): void {
    this.#listeners.push(l);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Drops this node's entry at once (a clean shutdown), so rooms on it are re-placed without waiting for the TTL. */
  async withdraw(): Promise<void> {
    this.stop();
    if (!this.#redis) return;
    await this.#redis.multi().zrem(this.#keys.nodes, this.#nodeId).hdel(this.#keys.load, this.#nodeId).exec().catch(() => {});
  }

  ownLoad(): WorkerLoad[] {
    return (this.#pool?.all() ?? []).map((w) => ({ worker: w.index, consumers: w.consumers, cpu: Math.round(w.cpu * 1000) / 1000 }));
  }

  async refresh(): Promise<void> {
    const own = this.ownLoad();
    if (!this.#redis) {
      this.#table = new Map(own.length ? [[this.#nodeId, own]] : []);
    } else {
      try {
        const publish = own.length ? this.#nodeId : '';
        const out = (await this.#redis.eval(PUBLISH_AND_READ, 2, this.#keys.nodes, this.#keys.load, publish, JSON.stringify(own), LOAD_TTL_MS)) as (string | number)[];
        const table = new Map<string, WorkerLoad[]>();
        for (let i = 1; i + 1 < out.length; i += 2) {
          try {
            table.set(String(out[i]), JSON.parse(String(out[i + 1])) as WorkerLoad[]);
          } catch {
            // a malformed entry is skipped until its node writes it again
          }
        }
        this.#table = table;
      } catch (err) {
        this.#log.warn({ err: (err as Error).message }, 'could not publish or read media load');
        return; // keep the last table: a Redis hiccup must not look like every media node dying
      }
    }
    for (const l of this.#listeners) l();
  }

  /** Whether a node is a live place for media (its load entry is fresh). */
  alive(nodeId: string): boolean {
    return this.#table.has(nodeId);
  }

  /**
   * The least-loaded worker of any live node: fewest consumers, then lowest CPU; a worker above
   * 80% of a core is taken only when nothing else is left.
   */
  candidate(): Candidate | null {
    let best: (Candidate & { score: number }) | null = null;
    for (const [nodeId, workers] of this.#table) {
      for (const w of workers) {
        const score = (w.cpu > 0.8 ? 1e9 : 0) + w.consumers + w.cpu;
        if (!best || score < best.score) best = { nodeId, worker: w.worker, score };
      }
    }
    return best ? { nodeId: best.nodeId, worker: best.worker } : null;
  }
}
