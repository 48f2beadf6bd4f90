import type { DeliveryResult } from '../sender.ts';

/** Delays before attempts 2..8 (spec, receiver rule 4). */
export const RETRY_SCHEDULE_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000, 24 * 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
export const RETRY_JITTER = 0.1;
/** The longest a receiver's `Retry-After` may postpone an attempt. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * The delay before the next attempt after `attempts` attempts failed, or null when that was the last.
 * `random` in [0, 1) places it within ±10% of the schedule; a `Retry-After` longer than that wins.
 */
export function retryDelay(attempts: number, random: () => number, retryAfterSeconds?: number): number | null {
  if (attempts < 1 || attempts >= MAX_ATTEMPTS) return null;
  const base = RETRY_SCHEDULE_MS[attempts - 1]!;
  const jittered = Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
  if (retryAfterSeconds === undefined) return jittered;
  return Math.max(jittered, Math.min(retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS));
}

export interface AfterAttempt {
  /** Attempts made, this one included. */
  attempts: number;
  /** The receiver answered 410: the message ends and the endpoint is disabled. */
  gone: boolean;
  /** When the next attempt is due (ms on the clock), or null when there is none. */
  next: number | null;
  status: 'SUCCEEDED' | 'PENDING' | 'FAILED';
}

/** What becomes of a message after an attempt at `now`, when `previousAttempts` were made before it. */
export function afterAttempt(previousAttempts: number, result: Pick<DeliveryResult, 'ok' | 'status' | 'retryAfterSeconds'>, now: number, random: () => number): AfterAttempt {
  const attempts = previousAttempts + 1;
  const gone = result.status === 410;
  const delay = result.ok || gone ? null : retryDelay(attempts, random, result.retryAfterSeconds);
  const next = delay === null ? null : now + delay;
  return { attempts, gone, next, status: result.ok ? 'SUCCEEDED' : next === null ? 'FAILED' : 'PENDING' };
}
