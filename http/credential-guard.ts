import type { Clock } from '../src/core/clock.ts';
import type { RateLimits } from '../src/platform/cluster/rate-limit.ts';
import { AppError } from '../src/core/errors.ts';

/** Unknown API keys and admin session tokens one client address may send a minute before its lookups stop. */
export const UNKNOWN_CREDENTIALS_PER_MINUTE = 60;

/**
 * Keeps guessed credentials off the database. A credential the services know (cached, or found) passes;
 * each unknown one counts against the client's address in the cluster-wide `unknown-credential` budget;
 * once that is spent, this process answers that address's credential lookups with `429 rate_limited`
 * before any query, until the window frees. Known credentials from the same address are still answered
 * from the services' caches. (The services also remember an unknown credential for a minute, so a client
 * repeating the same wrong key costs one query a minute.)
 */
export class CredentialGuard {
  readonly #limits: RateLimits;
  readonly #clock: Clock;
  /** Address → when its lookups may reach the database again. */
  readonly #blocked = new Map<string, number>();

  constructor(limits: RateLimits, clock: Clock) {
    this.#limits = limits;
    this.#clock = clock;
  }

  /** Throws `rate_limited` if `address` has spent its budget: called right before a credential query. */
  check(address: string): void {
    const until = this.#blocked.get(address);
    if (until === undefined) return;
    const now = this.#clock.now();
    if (until <= now) {
      this.#blocked.delete(address);
      return;
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((until - now) / 1000));
    throw new AppError('rate_limited', {
      message: 'Too many unknown credentials from this address; retry later with a valid one.',
      details: { limit: UNKNOWN_CREDENTIALS_PER_MINUTE, retryAfterSeconds },
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
  }

  /** A credential lookup's result; an unknown credential counts against `address` before the refusal goes on. */
  async looked<T>(lookup: Promise<T>, address: string): Promise<T> {
    try {
      return await lookup;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'api_key_invalid' || code === 'admin_session_invalid') await this.unknown(address);
      throw err;
    }
  }

  /** An unknown credential from `address`. */
  async unknown(address: string): Promise<void> {
    const got = await this.#limits.consume('unknown-credential', address, UNKNOWN_CREDENTIALS_PER_MINUTE);
    if (!got.allowed || got.remaining === 0) {
      if (this.#blocked.size >= 100_000) this.#blocked.delete(this.#blocked.keys().next().value!);
      this.#blocked.set(address, this.#clock.now() + got.retryAfterSeconds * 1000);
    }
  }
}
