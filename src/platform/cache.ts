import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.ts';

/**
 * The caches of hot-path reads (API keys, admins, users, meetings, organizations) that the bus
 * invalidates on change: lru-cache with a TTL, timed by the node's clock (so tests that move the clock
 * move the caches' time too), the least recently used entry evicted when full.
 */
export class TtlCache<V extends {}> {
  readonly #lru: LRUCache<string, V>;

  constructor(clock: Clock, ttlMs: number, max = 50_000) {
    // ttlResolution 0: every read asks the clock (a cached "now" would outlive a test's clock move)
    this.#lru = new LRUCache<string, V>({ max, ttl: ttlMs, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  get(key: string): V | undefined {
    return this.#lru.get(key);
  }

  set(key: string, v: V): void {
    this.#lru.set(key, v);
  }

  delete(key: string): void {
    this.#lru.delete(key);
  }

  /** Drops every entry whose value matches (a scan: for rare invalidations by something other than the key). */
  deleteWhere(pred: (v: V) => boolean): void {
    for (const [k, v] of this.#lru.entries()) if (pred(v)) this.#lru.delete(k);
  }

  clear(): void {
    this.#lru.clear();
  }
}
