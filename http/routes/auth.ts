import { z } from 'zod';
import type { App } from '../../src/services/app.ts';
import { MAX_PASSWORD_LENGTH } from '../../src/platform/passwords.ts';
import { ADMIN_SESSION_TTL_MS, csrfTokenFor, ADMIN_ROLES, SESSION_COOKIE } from '../../src/services/admins.ts';
import { SIGN_IN_ACCOUNT_UNDER_ATTACK, SIGN_IN_FAILURE_WINDOW_MS, SIGN_IN_FAILURES_PER_ADDRESS } from '../../src/services/sign-in-throttle.ts';
import { route } from '../route.ts';
import { resolveOrgRef } from '../../src/services/orgs.ts';

const tag = 'Admin sessions';

/** Every attempt counts against the address, before the password is checked; the budget also allows a school behind one NAT. */
export const SIGN_IN_PER_IP_PER_MINUTE = 30;

const signInBody = z.strictObject({
  orgId: z.string().min(1).max(64).describe('The organization the owner or admin belongs to: its id, or its short name (`shortName`, set on PATCH /orgs/:orgId).'),
  email: z.string().min(1).max(320).describe('Compared without regard to case.'),
  password: z.string().min(1).max(MAX_PASSWORD_LENGTH),
});

const adminShape = z.object({ id: z.string(), email: z.string(), role: z.enum(ADMIN_ROLES), orgId: z.string() });

const signedIn = z.object({
  admin: adminShape,
  sessionToken: z.string().describe('aula_as_…: send as "Authorization: Bearer <sessionToken>" (no CSRF header needed), or rely on the cookie.'),
  csrfToken: z.string().describe('Send as X-CSRF-Token on every non-GET request authenticated by the cookie.'),
  expiresAt: z.string(),
});

const me = z.object({ admin: adminShape, csrfToken: z.string(), expiresAt: z.string() });

/**
 * Secure in production whatever the base URL says (TLS may end at a proxy that Aula's address does not
 * name), and whenever the public address is https; scoped to the API and never readable by scripts.
 */
export function sessionCookie(app: App, value: string, maxAgeSeconds: number): string {
  const secure = app.config.AULA_ENV === 'production' || app.baseUrl.startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/api/v1; Max-Age=${maxAgeSeconds}${secure}`;
}

export const authRoutes = [
  route(
    {
      method: 'post',
      path: '/auth/sign-in',
      tag,
      auth: 'none',
      ipLimit: { name: 'sign-in', perMinute: SIGN_IN_PER_IP_PER_MINUTE },
      summary: 'Sign in as an organization owner or admin.',
      description: `Sets the ${SESSION_COOKIE} cookie (HttpOnly, SameSite=Lax, Path=/api/v1, 12 hours) and answers the same session as a bearer token with its CSRF token. An unknown organization or email and a wrong password all answer invalid_credentials. At most ${SIGN_IN_PER_IP_PER_MINUTE} attempts per minute per client address. Wrong passwords are throttled per account and address: after ${SIGN_IN_FAILURES_PER_ADDRESS} within ${SIGN_IN_FAILURE_WINDOW_MS / 60_000} minutes that address waits (429 with Retry-After) while other addresses still sign in; an account with ${SIGN_IN_ACCOUNT_UNDER_ATTACK} wrong passwords in that window gives every address one guess.`,
      body: signInBody,
      response: signedIn,
      errors: ['invalid_credentials', 'admin_disabled', 'rate_limited'],
    },
    async ({ app, db, body, req }) => {
      const s = await app.services.admins.signIn(db, { ...body, orgId: await resolveOrgRef(db, body.orgId) }, req.ip);
      return {
        data: s,
        headers: { 'Set-Cookie': sessionCookie(app, s.sessionToken, ADMIN_SESSION_TTL_MS / 1000), 'Cache-Control': 'no-store' },
      };
    },
  ),
  route(
    {
      method: 'post',
      path: '/auth/sign-out',
      tag,
      auth: 'admin',
      summary: 'Sign out: revoke the session and clear the cookie.',
      response: z.object({ signedOut: z.literal(true) }),
    },
    async ({ app, db, admin }) => {
      await app.services.admins.signOut(db, admin!);
      return { data: { signedOut: true }, headers: { 'Set-Cookie': sessionCookie(app, '', 0) } };
    },
  ),
  route(
    {
      method: 'get',
      path: '/auth/me',
      tag,
      auth: 'admin',
      summary: 'The signed-in owner or admin, and the session\'s CSRF token.',
      description: 'A page reloaded with the cookie gets the CSRF token again here; other origins cannot read the answer.',
      response: me,
    },
    ({ admin }) => {
      const a = admin!;
      return {
        data: { admin: { id: a.adminId, email: a.email, role: a.role, orgId: a.orgId }, csrfToken: csrfTokenFor(a.token), expiresAt: new Date(a.expiresAt).toISOString() },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  ),
];
