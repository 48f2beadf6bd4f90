import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import { hmacSha256Hex, safeEqual, sha256, sha256Hex } from '../platform/crypto.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { afterCommit } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId, randomToken } from '../platform/ids.ts';
import { hashPassword, prepareDummyHash, verifyDummy, verifyPassword } from '../platform/passwords.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import { SCOPES, type Scope } from '../core/scopes.ts';
import type { ApiPrincipal } from './api-keys.ts';
import { getOrg } from './orgs.ts';
import { SignInThrottle } from './sign-in-throttle.ts';
import type { MaybePromise } from '../platform/maybe-promise.ts';

export const ADMIN_ROLES = ['owner', 'admin'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];

/** Sessions last 12 hours from sign-in (not sliding). */
export const ADMIN_SESSION_TTL_MS = 12 * 60 * 60_000;
export const SESSION_COOKIE = 'aula_session';

const TOKEN_PREFIX = 'aula_as_';
const TOKEN_FORMAT = /^aula_as_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer +(\S+)\s*$/i;
const SESSION_BEARER = /^Bearer +aula_as_/i;
const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

export interface AdminRecord {
  id: string;
  orgId: string;
  email: string;
  role: AdminRole;
  createdAt: string;
}

/** A live admin session as the cache keeps it (by the SHA-256 of its token). */
export interface AdminSession {
  sessionId: string;
  adminId: string;
  orgId: string;
  email: string;
  role: AdminRole;
  plan: PlanName;
  /** ms since the epoch */
  expiresAt: number;
  csrfHash: Buffer;
  /** The same admin as a public-API caller: every scope, the plan's budget, its own rate bucket. */
  api: ApiPrincipal;
}

/** Who a request on the admin surface (or a public-API request with a session bearer) comes from. */
export interface AdminPrincipal extends AdminSession {
  /** `cookie` sessions are ambient, so their mutations need the CSRF header; `bearer` ones are not. */
  via: 'cookie' | 'bearer';
  token: string;
}

export interface SignInResult {
  admin: { id: string; email: string; role: AdminRole; orgId: string };
  sessionToken: string;
  csrfToken: string;
  expiresAt: string;
}

/** Known sessions, revoked ones, and tokens nobody issued (remembered for a minute, with no write). */
type Cached = AdminSession | { revoked: true } | { unknown: true };

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/**
 * The CSRF token of a session, derived from its token (HMAC with the token as key), so a same-origin
 * `GET /auth/me` can hand it to a page again after a reload, and knowing it reveals nothing of the token.
 */
export const csrfTokenFor = (sessionToken: string): string =>
  Buffer.from(hmacSha256Hex(sessionToken, 'aula:admin-csrf:v1'), 'hex').toString('base64url');

/** Reads one cookie from a Cookie header; the first of that name wins (browsers send the most specific path first). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let v = part.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
    return v;
  }
  return undefined;
}

/**
 * Organization owners and admins: created by the CLI, signed in with email and password (argon2id),
 * holding sessions whose 256-bit token is stored only as SHA-256. Sessions are cached for a minute by
 * token hash; sign-out and disabling publish on the bus so every node drops them at once.
 */
export class Admins {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #bus: Bus;
  readonly #cache: TtlCache<Cached>;
  readonly #throttle: SignInThrottle;

  constructor(sql: Sql, clock: Clock, bus: Bus) {
    this.#sql = sql;
    this.#clock = clock;
    this.#bus = bus;
    this.#cache = new TtlCache(clock, 60_000, 10_000);
    this.#throttle = new SignInThrottle(clock);
    bus.subscribe('admin-sessions', (m) => {
      if (Array.isArray(m.hashes)) for (const h of m.hashes) this.#cache.delete(String(h));
      else this.#cache.clear();
    });
  }

  /** Creates an owner or admin; the caller has checked the password's length. */
  async create(db: Db, input: { orgId: string; email: string; role: AdminRole; password: string }): Promise<AdminRecord> {
    await getOrg(db, input.orgId);
    const email = normalizeEmail(input.email);
    const passwordHash = await hashPassword(input.password);
    const now = iso(this.#clock.now());
    try {
      const [row] = await db<{ id: string; createdAt: Date }[]>`insert into admins (id, org_id, email, role, password_hash, created_at, updated_at)
        values (${newId('adm')}, ${input.orgId}, ${email}, ${input.role}, ${passwordHash}, ${now}, ${now}) returning id, created_at`;
      return { id: row!.id, orgId: input.orgId, email, role: input.role, createdAt: row!.createdAt.toISOString() };
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new AppError('admin_exists', { message: `An owner or admin with email ${email} already exists in ${input.orgId}.`, details: { email } });
      }
      throw err;
    }
  }

  /**
   * Checks email and password and opens a session. An unknown organization or email, and a wrong password,
   * all answer `invalid_credentials` after the same argon2 work; a disabled admin learns so only after
   * giving the right password. Wrong passwords are throttled per account and client address
   * (SignInThrottle), so nobody can lock the owner out by failing on purpose.
   */
  async signIn(db: Db, input: { orgId: string; email: string; password: string }, address: string): Promise<SignInResult> {
    prepareDummyHash();
    const email = normalizeEmail(input.email);
    await this.#throttle.check(db, input.orgId, email, address);
    const [m] = await db<{ id: string; orgId: string; email: string; role: AdminRole; passwordHash: string; disabledAt: Date | null }[]>`
      select id, org_id, email, role, password_hash, disabled_at from admins where org_id = ${input.orgId} and email = ${email}`;
    const ok = m ? await verifyPassword(m.passwordHash, input.password) : await verifyDummy(input.password);
    if (!m || !ok) {
      await this.#throttle.failed(db, input.orgId, email, address);
      throw new AppError('invalid_credentials');
    }
    await this.#throttle.succeeded(db, input.orgId, email, address);
    if (m.disabledAt) throw new AppError('admin_disabled');
    return this.openSession(db, m);
  }

  /** Opens a session for an admin whose credentials were checked (a password, or an accepted invitation). */
  async openSession(db: Db, m: { id: string; orgId: string; email: string; role: AdminRole }): Promise<SignInResult> {
    const now = this.#clock.now();
    const token = TOKEN_PREFIX + randomToken(32);
    const csrf = csrfTokenFor(token);
    const expiresAt = now + ADMIN_SESSION_TTL_MS;
    await db`insert into admin_sessions (id, admin_id, org_id, token_hash, csrf_token_hash, created_at, expires_at, last_seen_at)
      values (${newId('as', now)}, ${m.id}, ${m.orgId}, ${sha256(token)}, ${sha256(csrf)}, ${iso(now)}, ${iso(expiresAt)}, ${iso(now)})`;
    return { admin: { id: m.id, email: m.email, role: m.role, orgId: m.orgId }, sessionToken: token, csrfToken: csrf, expiresAt: iso(expiresAt) };
  }

  /** Revokes the session the request came with. */
  async signOut(db: Db, principal: AdminPrincipal): Promise<void> {
    const rows = await db<{ tokenHash: Buffer }[]>`update admin_sessions set revoked_at = ${iso(this.#clock.now())}
      where id = ${principal.sessionId} and revoked_at is null returning token_hash`;
    await this.#forget(rows.map((r) => r.tokenHash));
  }

  /** Disables an owner or admin and revokes every session they hold. */
  async disable(db: Db, adminId: string): Promise<boolean> {
    const now = iso(this.#clock.now());
    const done = await db`update admins set disabled_at = ${now}, updated_at = ${now} where id = ${adminId} and disabled_at is null returning id`;
    const rows = await db<{ tokenHash: Buffer }[]>`update admin_sessions set revoked_at = ${now}
      where admin_id = ${adminId} and revoked_at is null returning token_hash`;
    await this.#forget(rows.map((r) => r.tokenHash));
    return done.length > 0;
  }

  /**
   * Disables an admin and revokes their sessions in the caller's transaction; every node drops the
   * sessions once it commits (before, a node reading the rows would cache them as valid). False when
   * they were already disabled.
   */
  async disableIn(tx: Db, adminId: string): Promise<boolean> {
    const now = iso(this.#clock.now());
    const done = await tx`update admins set disabled_at = ${now}, updated_at = ${now} where id = ${adminId} and disabled_at is null returning id`;
    const rows = await tx<{ tokenHash: Buffer }[]>`update admin_sessions set revoked_at = ${now}
      where admin_id = ${adminId} and revoked_at is null returning token_hash`;
    afterCommit(tx, () => this.#forget(rows.map((r) => r.tokenHash)));
    return done.length > 0;
  }

  /**
   * Every node drops its cached copy of the admin's open sessions once the caller's transaction commits,
   * so their next request reads the admin again (a changed role counts at once).
   */
  async rereadSessionsIn(tx: Db, adminId: string): Promise<void> {
    const rows = await tx<{ tokenHash: Buffer }[]>`select token_hash from admin_sessions where admin_id = ${adminId} and revoked_at is null`;
    afterCommit(tx, () => this.#forget(rows.map((r) => r.tokenHash)));
  }

  async #forget(hashes: Buffer[]): Promise<void> {
    if (hashes.length) await this.#bus.publish('admin-sessions', { hashes: hashes.map((h) => h.toString('hex')) });
  }

  /** Whether an Authorization header carries an admin session (`Bearer aula_as_…`) rather than an API key. */
  isSessionBearer(header: string): boolean {
    return SESSION_BEARER.test(header);
  }

  /**
   * Resolves the credential of an admin request: `Authorization: Bearer aula_as_…` if the header is there,
   * otherwise the `aula_session` cookie. A cached session is answered synchronously; only a lookup returns
   * a promise. Refusals: admin_session_missing, auth_malformed, admin_session_invalid,
   * admin_session_revoked, admin_session_expired.
   */
  authenticate(authorization: string | undefined, cookie: string | undefined, beforeQuery?: () => void): MaybePromise<AdminPrincipal> {
    let token: string | undefined;
    let via: AdminPrincipal['via'];
    if (authorization !== undefined) {
      const m = BEARER.exec(authorization);
      if (!m || !m[1]!.startsWith(TOKEN_PREFIX)) {
        throw new AppError('auth_malformed', { message: 'Admin routes take a signed-in session: the aula_session cookie or "Authorization: Bearer aula_as_…".' });
      }
      token = m[1]!;
      via = 'bearer';
    } else {
      token = readCookie(cookie, SESSION_COOKIE);
      if (!token) throw new AppError('admin_session_missing');
      via = 'cookie';
    }
    if (!TOKEN_FORMAT.test(token)) throw new AppError('admin_session_invalid');
    const hex = sha256Hex(token);
    const cached = this.#cache.get(hex);
    if (cached) return this.#principal(cached, via, token);
    beforeQuery?.();
    return this.#load(hex).then((s) => this.#principal(s, via, token));
  }

  /** Whether the X-CSRF-Token header matches the session's CSRF token (compared as SHA-256, in constant time). */
  csrfMatches(principal: AdminPrincipal, header: string | undefined): boolean {
    if (!header || header.length > 256) return false;
    return safeEqual(sha256(header), principal.csrfHash);
  }

  async #load(hex: string): Promise<Cached> {
    const [row] = await this.#sql<{
      id: string;
      adminId: string;
      orgId: string;
      csrfTokenHash: Buffer;
      expiresAt: Date;
      revokedAt: Date | null;
      email: string;
      role: AdminRole;
      disabledAt: Date | null;
      plan: PlanName;
    }[]>`
      select s.id, s.admin_id, s.org_id, s.csrf_token_hash, s.expires_at, s.revoked_at, m.email, m.role, m.disabled_at, o.plan
      from admin_sessions s join admins m on m.id = s.admin_id join organizations o on o.id = s.org_id
      where s.token_hash = ${Buffer.from(hex, 'hex')}`;
    if (!row) {
      this.#cache.set(hex, { unknown: true }); // no write for a token nobody issued
      throw new AppError('admin_session_invalid');
    }
    // last seen: once a cache lifetime per session, never for an unknown token
    if (!row.revokedAt) await this.#sql`update admin_sessions set last_seen_at = ${iso(this.#clock.now())} where id = ${row.id}`;
    const s: Cached =
      row.revokedAt || row.disabledAt
        ? { revoked: true }
        : {
            sessionId: row.id,
            adminId: row.adminId,
            orgId: row.orgId,
            email: row.email,
            role: row.role,
            plan: row.plan,
            expiresAt: row.expiresAt.getTime(),
            csrfHash: row.csrfTokenHash,
            api: {
              keyId: row.adminId,
              orgId: row.orgId,
              plan: row.plan,
              scopes: ALL_SCOPES,
              rateLimitPerMinute: PLANS[row.plan].rateLimitPerMinute,
              rateKey: `admin:${row.adminId}:${row.orgId}`,
              adminId: row.adminId,
            },
          };
    this.#cache.set(hex, s);
    return s;
  }

  #principal(s: Cached, via: AdminPrincipal['via'], token: string): AdminPrincipal {
    if ('revoked' in s) throw new AppError('admin_session_revoked');
    if ('unknown' in s) throw new AppError('admin_session_invalid');
    if (s.expiresAt <= this.#clock.now()) throw new AppError('admin_session_expired');
    return { ...s, via, token };
  }
}
