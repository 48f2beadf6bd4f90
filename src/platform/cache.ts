import type { Clock } from '../core/clock.ts';

/** A small TTL cache (oldest entry evicted when full) for hot-path reads that the bus invalidates on change. */
export class TtlCache<V> {
  readonly #map = new Map<string, { v: V; at: number }>();
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #clock: Clock;

  constructor(clock: Clock, ttlMs: number, max = 50_000) {
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#max = max;
  }

  get(key: string): V | undefined {
    const e = this.#map.get(key);
    if (!e) return undefined;
    if (this.#clock.now() - e.at > this.#ttlMs) {
      this.#map.delete(key);
      return undefined;
    }
    return e.v;
  }

  set(key: string, v: V): void {
    if (this.#map.size >= this.#max) this.#map.delete(this.#map.keys().next().value!);
    this.#map.set(key, { v, at: this.#clock.now() });
  }

  delete(key: string): void {
    this.#map.delete(key);
  }

  /** Drops every entry whose value matches (a scan: for rare invalidations by something other than the key). */
  deleteWhere(pred: (v: V) => boolean): void {
    for (const [k, e] of this.#map) if (pred(e.v)) this.#map.delete(k);
  }

  clear(): void {
    this.#map.clear();
  }
}
