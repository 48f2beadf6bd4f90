import type { App } from '../../src/services/app.ts';
import type { ApiPrincipal } from '../../src/services/api-keys.ts';
import type { AdminPrincipal } from '../../src/services/admins.ts';
import type { RateLimitResult } from '../../src/platform/cluster/rate-limit.ts';
import type { MaybePromise } from '../../src/platform/maybe-promise.ts';
import { AppError } from '../../src/core/errors.ts';
import type { RouteSpec } from '../route.ts';
import type { Request } from './request.ts';

export class RateLimitedError extends AppError {
  /** `bucket`: which limit refused (the metrics' `limit` label). */
  constructor(
    readonly limit: RateLimitResult,
    readonly bucket: string,
  ) {
    super('rate_limited', {
      details: { limit: limit.limit, retryAfterSeconds: limit.retryAfterSeconds },
      headers: { 'Retry-After': String(limit.retryAfterSeconds) },
    });
  }
}

function checkLimit(limit: RateLimitResult, bucket: string): RateLimitResult {
  if (!limit.allowed) throw new RateLimitedError(limit, bucket);
  return limit;
}

/**
 * Spends a point of the route's per-IP budget, if it has one (routes without an API key): it counts
 * every attempt, credential or not. Null when the route has none; throws RateLimitedError when spent.
 */
export function ipBudget(app: App, spec: RouteSpec, info: Request): MaybePromise<RateLimitResult> | null {
  if (!spec.ipLimit) return null;
  const { name, perMinute } = spec.ipLimit;
  const got = app.rateLimits.consume(name, info.ip, perMinute);
  return got instanceof Promise ? got.then((l) => checkLimit(l, name)) : checkLimit(got, name);
}

/** Spends a point of the caller's budget (an API key's, or a signed-in admin's as a public-API caller). */
export function keyBudget(app: App, caller: ApiPrincipal | null | undefined): MaybePromise<RateLimitResult> | null {
  if (!caller) return null;
  // Most requests are answered from the points this node holds for the key: no await then.
  const got = app.rateLimits.consume('key', caller.rateKey, caller.rateLimitPerMinute);
  return got instanceof Promise ? got.then((l) => checkLimit(l, 'key')) : checkLimit(got, 'key');
}

export function assertCsrf(app: App, admin: AdminPrincipal | null, info: Request): void {
  // A cookie rides along on cross-site requests; a header the page read from our sign-in response does not.
  if (admin?.via === 'cookie' && info.method !== 'GET' && !app.services.admins.csrfMatches(admin, info.headers['x-csrf-token'])) {
    throw new AppError('csrf_failed');
  }
}
