import type { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../core/clock.ts';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { MaybePromise } from '../maybe-promise.ts';

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the current window ends. */
  resetAt: number;
  retryAfterSeconds: number;
}

/** Speculative leases last about this long at the rate the key is being used here. */
const LEASE_HORIZON_MS = 1_000;
/** The largest lease is this share of the budget (and at most MAX_LEASE): 1/64 strands at most 1.6%. */
const LEASE_SHARE = 64;
const MAX_LEASE = 64;
/** Below this share of the budget left in the window, a node leases only what is waiting. */
const EXACT_BELOW = 0.25;
const SWEEP_MS = 30_000;

/** What this node holds of one (bucket, key) window. */
interface Lease {
  /** the budget the points were leased against */
  perMinute: number;
  /** points granted by the shared counter and not used yet */
  left: number;
  /** the shared counter's points left after the last grant (which counted `left` as used) */
  remaining: number;
  /** ms since the epoch when the window the points belong to ends */
  resetAtMs: number;
  /** the shared counter had nothing left: refuse here until the window ends */
  exhausted: boolean;
  /** when the last grant came, and how many points have been used since: the key's rate here */
  grantedAt: number;
  usedSince: number;
  /** the grant on its way, and the requests waiting for it */
  pending: Promise<void> | null;
  waiting: number;
}

/**
 * Fixed one-minute windows per (bucket, key), counted by rate-limiter-flexible: shared by every
 * node through Redis when there is one, in process otherwise; if Redis stops answering, each node
 * falls back to its own in-memory window rather than failing requests.
 *
 * A node does not ask Redis for every request. It takes points from the shared counter in leases
 * and spends them locally, so most requests are answered without a round trip:
 * - requests that arrive while a grant is on its way wait for it and are granted together;
 * - a key busy on this node gets a speculative lease sized to last about a second at its rate here,
 *   at most 1/64 of the budget (and 64), and only while more than a quarter of the window's budget
 *   is left; below that, a node asks only for what is waiting, so near the limit the count is exact;
 * - a window found exhausted is refused locally until it ends (nothing can free points sooner).
 * Points are counted in Redis when leased, so the nodes together never admit more than the
 * budget; what a node leased and did not use before the window ended is lost (at most one
 * lease per node, 1/64 of the budget). X-RateLimit-Remaining is the shared count as this node
 * last saw it plus what it still holds.
 */
export class RateLimits {
  readonly #redis: Redis | null;
  readonly #prefix: string;
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  /** bucket, then key: no string is built per request to find a lease */
  readonly #leases = new Map<string, Map<string, Lease>>();
  readonly #sweep: NodeJS.Timeout;
  readonly #clock: Clock;

  /** `clock` places this node's view of each window and measures a key's rate; the windows themselves are Redis's. */
  constructor(redis: Redis | null, prefix: string, clock: Clock = systemClock) {
    this.#redis = redis;
    this.#prefix = `${prefix}rl:`;
    this.#clock = clock;
    this.#sweep = setInterval(() => this.#forgetEnded(), SWEEP_MS).unref();
    // A RateLimiterRedis defines its script on the connection when it is made. Limiters are made on
    // a key's first request, and an auto-pipeline already gathering that tick's commands would not
    // have the new command (ioredis throws at exec: redis/ioredis#1931), so define it now, first.
    if (redis) new RateLimiterRedis({ storeClient: redis, points: 1, duration: 60 });
  }

  close(): void {
    clearInterval(this.#sweep);
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

  /** Takes one point; answered without a promise when this node holds points for the key, or knows it has none. */
  consume(bucket: string, key: string, perMinute: number): MaybePromise<RateLimitResult> {
    let leases = this.#leases.get(bucket);
    if (!leases) this.#leases.set(bucket, (leases = new Map()));
    let lease = leases.get(key);
    // a new key, or a new budget (a plan change): what was held was counted against the old one
    if (!lease || lease.perMinute !== perMinute) {
      lease = { perMinute, left: 0, remaining: perMinute, resetAtMs: 0, exhausted: false, grantedAt: 0, usedSince: 0, pending: null, waiting: 0 };
      leases.set(key, lease);
    }
    return this.#take(lease, this.#clock.now()) ?? this.#wait(lease, bucket, key);
  }

  /** A point from what this node holds, a refusal it can give alone, or null: ask Redis. */
  #take(lease: Lease, now: number): RateLimitResult | null {
    if (now >= lease.resetAtMs) {
      lease.left = 0;
      lease.exhausted = false;
      return null;
    }
    if (lease.left > 0) {
      lease.left--;
      lease.usedSince++;
      return result(true, lease.perMinute, lease.remaining + lease.left, lease.resetAtMs, now);
    }
    return lease.exhausted && !lease.pending ? result(false, lease.perMinute, 0, lease.resetAtMs, now) : null;
  }

  async #wait(lease: Lease, bucket: string, key: string): Promise<RateLimitResult> {
    lease.waiting++;
    try {
      for (;;) {
        if (!lease.pending) lease.pending = this.#grant(lease, bucket, key).finally(() => (lease.pending = null));
        await lease.pending;
        const now = this.#clock.now();
        const got = this.#take(lease, now);
        if (got) return got;
        // granted less than was waiting, or the window ended meanwhile: a refusal if the counter is
        // spent, otherwise ask again
        if (lease.exhausted) return result(false, lease.perMinute, 0, lease.resetAtMs, now);
      }
    } finally {
      lease.waiting--;
    }
  }

  /** One trip to the shared counter for the requests waiting here, and a speculative lease when the key is busy. */
  async #grant(lease: Lease, bucket: string, key: string): Promise<void> {
    const { perMinute } = lease;
    const now = this.#clock.now();
    let want = Math.max(1, lease.waiting);
    const speculate = lease.resetAtMs > now && lease.remaining > perMinute * EXACT_BELOW;
    if (speculate) {
      const ratePerMs = lease.usedSince / Math.max(1, now - lease.grantedAt);
      const cap = Math.min(MAX_LEASE, Math.floor(perMinute / LEASE_SHARE));
      want = Math.max(want, Math.min(cap, Math.ceil(ratePerMs * LEASE_HORIZON_MS)));
    }
    let res: RateLimiterRes;
    try {
      res = await this.#limiter(bucket, perMinute).consume(key, want);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
    }
    const at = this.#clock.now();
    // The counter counted all `want`; what was there before this grant is ours.
    const granted = Math.max(0, Math.min(want, perMinute - (res.consumedPoints - want)));
    const resetAtMs = at + Math.max(res.msBeforeNext, 0);
    if (resetAtMs - lease.resetAtMs > 1_000 || lease.resetAtMs <= at) lease.left = 0; // a new window: what was held is void
    lease.resetAtMs = resetAtMs;
    lease.left += granted;
    lease.remaining = Math.max(0, perMinute - res.consumedPoints);
    lease.exhausted = lease.remaining === 0;
    lease.grantedAt = at;
    lease.usedSince = 0;
  }

  #forgetEnded(): void {
    const now = this.#clock.now();
    for (const leases of this.#leases.values()) {
      for (const [key, l] of leases) if (l.resetAtMs <= now && !l.pending && l.waiting === 0) leases.delete(key);
    }
  }
}

function result(allowed: boolean, limit: number, remaining: number, resetAtMs: number, now: number): RateLimitResult {
  const ms = Math.max(resetAtMs - now, 0);
  return {
    allowed,
    limit,
    remaining,
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
  };
}
