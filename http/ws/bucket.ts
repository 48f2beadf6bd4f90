/**
 * A token bucket: `capacity` tokens, refilled at `perSecond`; a command takes its cost or is refused. The
 * gateway keeps them per meeting session, shared by the session's sockets, so opening another socket
 * buys no more commands. Time comes from the caller (performance.now() in the gateway), so tests can
 * drive it.
 */
export class TokenBucket {
  readonly #capacity: number;
  readonly #perMs: number;
  #tokens: number;
  #at: number;

  constructor(capacity: number, perSecond: number, now: number) {
    this.#capacity = capacity;
    this.#perMs = perSecond / 1000;
    this.#tokens = capacity;
    this.#at = now;
  }

  take(cost: number, now: number): boolean {
    this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#at) * this.#perMs);
    this.#at = now;
    if (this.#tokens < cost) return false;
    this.#tokens -= cost;
    return true;
  }

  /** Seconds until `cost` tokens are there. */
  waitFor(cost: number): number {
    return Math.max(0, (cost - this.#tokens) / this.#perMs / 1000);
  }
}
