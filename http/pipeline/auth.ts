import type { App } from '../../src/services/app.ts';
import type { ApiPrincipal } from '../../src/services/api-keys.ts';
import type { AdminPrincipal } from '../../src/services/admins.ts';
import type { SessionPrincipal } from '../../src/services/sessions.ts';
import type { MaybePromise } from '../../src/platform/maybe-promise.ts';
import { AppError } from '../../src/core/errors.ts';
import { hasScope } from '../../src/core/scopes.ts';
import type { CredentialGuard } from '../credential-guard.ts';
import type { RouteSpec } from '../route.ts';
import type { Request } from './request.ts';

/** Who is calling, by the route's `auth`: at most one of them is set, but a signed-in admin on the public API is both `admin` and `apiKey`. */
export interface Principals {
  apiKey: ApiPrincipal | null;
  admin: AdminPrincipal | null;
  session: SessionPrincipal | null;
}

const NOBODY: Principals = Object.freeze({ apiKey: null, admin: null, session: null });
// A signed-in admin on the public API: every scope, the plan's budget in a bucket of its own.
const adminAsCaller = (admin: AdminPrincipal): Principals => ({ apiKey: admin.api, admin, session: null });
const byKey = (apiKey: ApiPrincipal): Principals => ({ apiKey, admin: null, session: null });
const byAdmin = (admin: AdminPrincipal): Principals => ({ apiKey: null, admin, session: null });

/**
 * The route's credentials: an API key (or a signed-in admin's bearer session) on `apiKey` routes, an
 * admin's session by cookie or bearer on `admin` routes, a meeting session that still stands on
 * `session` routes. A credential found in the services' caches is answered as a value, a lookup as a
 * promise, so that the pipeline awaits only lookups (src/platform/maybe-promise.ts).
 */
export function authenticate(app: App, guard: CredentialGuard, spec: RouteSpec, info: Request): MaybePromise<Principals> {
  // A credential not in the services' caches is looked up only for an address that has not sent too many unknown ones.
  const gate = () => guard.check(info.ip);
  if (spec.auth === 'apiKey') {
    const authorization = info.headers.authorization;
    if (authorization !== undefined && app.services.admins.isSessionBearer(authorization)) {
      const found = app.services.admins.authenticate(authorization, undefined, gate);
      return found instanceof Promise ? guard.looked(found, info.ip).then(adminAsCaller) : adminAsCaller(found);
    }
    // A cached key comes back as a value, a lookup as a promise: await only that.
    const found = app.services.apiKeys.authenticate(authorization, gate);
    return found instanceof Promise ? guard.looked(found, info.ip).then(byKey) : byKey(found);
  }
  if (spec.auth === 'admin') {
    const found = app.services.admins.authenticate(info.headers.authorization, info.headers.cookie, gate);
    return found instanceof Promise ? guard.looked(found, info.ip).then(byAdmin) : byAdmin(found);
  }
  if (spec.auth === 'session') {
    const session = app.services.sessions.authenticate(info.headers.authorization);
    return app.services.sessions.assertStanding(app.sql, session, spec.erasedAccount ?? 'refuse').then(() => ({ apiKey: null, admin: null, session }));
  }
  return NOBODY;
}

export function assertScope(spec: RouteSpec, apiKey: ApiPrincipal | null): void {
  if (apiKey && spec.scope && !hasScope(apiKey.scopes, spec.scope)) {
    throw new AppError('insufficient_scope', { details: { required: spec.scope, granted: [...apiKey.scopes] } });
  }
}

/**
 * An admin route's `:orgId` must be the admin's own organization. Checked before validation, and without
 * looking the other organization up: the answer is the same whether it exists or not.
 */
export function assertOwnOrg(spec: RouteSpec, admin: AdminPrincipal | null, params: Record<string, string>): void {
  if (spec.auth === 'admin' && params.orgId !== undefined && params.orgId !== admin!.orgId) throw new AppError('org_mismatch');
}
