import { iso, type Clock } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';

/** Failures count for this long. */
export const SIGN_IN_FAILURE_WINDOW_MS = 15 * 60_000;
/** Wrong passwords from one address for one account within the window; the next attempt from there waits. */
export const SIGN_IN_FAILURES_PER_ADDRESS = 5;
/** Wrong passwords for one account from all addresses within the window past which it is under attack. */
export const SIGN_IN_ACCOUNT_UNDER_ATTACK = 20;
const KEEP_MS = 24 * 3600_000;

/**
 * Sign-in throttling that an attacker cannot turn against the account's owner. Only wrong passwords
 * count, and they count per (account, address): five from one address and that address waits until the
 * oldest leaves the 15-minute window; the owner, from any other address, still signs in. When an account
 * collects twenty wrong passwords from all addresses within the window, it is under attack and every
 * address that has failed on it once waits too: each new address gets one guess, while a correct password
 * from an address that has not failed still gets in. Per address over all accounts, the route's
 * per-IP budget applies (30 attempts a minute).
 */
export class SignInThrottle {
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Refuses (`rate_limited`, with when to retry) before the password is even checked. */
  async check(db: Db, orgId: string, email: string, address: string): Promise<void> {
    const now = this.#clock.now();
    const since = iso(now - SIGN_IN_FAILURE_WINDOW_MS);
    const [row] = await db<{ mine: number; all: number; mineOldest: Date | null; mineCutoff: Date | null }[]>`
      select count(*) filter (where address = ${address})::int as mine, count(*)::int as all,
        min(failed_at) filter (where address = ${address}) as mine_oldest,
        (array_agg(failed_at order by failed_at desc) filter (where address = ${address}))[${SIGN_IN_FAILURES_PER_ADDRESS}] as mine_cutoff
      from sign_in_failures where org_id = ${orgId} and email = ${email} and failed_at > ${since}`;
    const { mine, all } = row!;
    const overAddress = mine >= SIGN_IN_FAILURES_PER_ADDRESS;
    const underAttack = all >= SIGN_IN_ACCOUNT_UNDER_ATTACK && mine > 0;
    if (!overAddress && !underAttack) return;
    // free again once enough of this address's failures have left the window
    const frees = overAddress ? row!.mineCutoff! : row!.mineOldest!;
    const retryAfterSeconds = Math.max(1, Math.ceil((frees.getTime() + SIGN_IN_FAILURE_WINDOW_MS - now) / 1000));
    throw new AppError('rate_limited', {
      message: overAddress
        ? 'Too many wrong passwords for this account from this address; try again later, or from another device.'
        : 'This account is receiving many wrong passwords; this address must wait before trying again.',
      details: { retryAfterSeconds, reason: overAddress ? 'address_failures' : 'account_under_attack' },
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
  }

  /** A wrong password (or an unknown account, which must look the same). */
  async failed(db: Db, orgId: string, email: string, address: string): Promise<void> {
    const now = this.#clock.now();
    await db`insert into sign_in_failures (org_id, email, address, failed_at) values (${orgId}, ${email}, ${address}, ${iso(now)})`;
    await db`delete from sign_in_failures where failed_at < ${iso(now - KEEP_MS)}`;
  }

  /** A correct password: this address's failures for the account are forgiven. */
  async succeeded(db: Db, orgId: string, email: string, address: string): Promise<void> {
    await db`delete from sign_in_failures where org_id = ${orgId} and email = ${email} and address = ${address}`;
  }
}
