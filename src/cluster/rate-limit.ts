import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the current window ends. */
  resetAt: number;
  retryAfterSeconds: number;
}

/**
 * Fixed one-minute windows per (bucket, key). Shared by every member through Redis when there is one,
 * in process otherwise; if Redis stops answering, each member falls back to its own in-memory window
 * rather than failing requests.
 */
export class RateLimits {
  readonly #redis: Redis | null;
  readonly #prefix: string;
  readonly #limiters = new Map<string, RateLimiterAbstract>();

  constructor(redis: Redis | null, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}rl:`;
  }

  #limiter(bucket: string, points: number): RateLimiterAbstract {
    const id = `${bucket}:${points}`;
    let l = this.#limiters.get(id);
    if (!l) {
      const keyPrefix = `${this.#prefix}${bucket}`;
      const memory = new RateLimiterMemory({ points, duration: 60, keyPrefix });
      l = this.#redis
        ? new RateLimiterRedis({ storeClient: this.#redis, points, duration: 60, keyPrefix, insuranceLimiter: memory, rejectIfRedisNotReady: true })
        : memory;
      this.#limiters.set(id, l);
    }
    return l;
  }

  async consume(bucket: string, key: string, perMinute: number): Promise<RateLimitResult> {
    const limiter = this.#limiter(bucket, perMinute);
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await limiter.consume(key, 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
      allowed = false;
    }
    const ms = Math.max(res.msBeforeNext, 0);
    return {
      allowed,
      limit: perMinute,
      remaining: res.remainingPoints,
      resetAt: Math.ceil((Date.now() + ms) / 1000),
      retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
    };
  }
}
