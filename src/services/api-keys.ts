import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import { sha256, sha256Hex } from '../platform/crypto.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';
import { newId, randomToken } from '../platform/ids.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import type { Scope } from '../core/scopes.ts';
import { getOrg } from './orgs.ts';
import type { MaybePromise } from '../platform/maybe-promise.ts';

/** Who calls the public API: an API key, or a signed-in admin with a bearer session (src/services/admins.ts). */
export interface ApiPrincipal {
  /** The API key's id; for a signed-in admin, the admin's id (`adm_…`; `mem_…` for those added before 0.2). Idempotency records are scoped by it. */
  keyId: string;
  orgId: string;
  plan: PlanName;
  scopes: ReadonlySet<Scope>;
  rateLimitPerMinute: number;
  /** The rate-limit bucket: the key's id, or `admin:<adminId>:<orgId>` for a signed-in admin. */
  rateKey: string;
  /** Set for a signed-in admin. */
  adminId?: string;
}

const KEY_FORMAT = /^aula_sk_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer +(\S+)\s*$/i;
const RECENT_HEADERS = 10_000;

/** API keys: shown once at creation, stored as SHA-256 (keys carry 256 bits of entropy, so no KDF is needed). */
export class ApiKeys {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #bus: Bus;
  /** Known keys, revoked ones, and unknown ones (for a minute: a client repeating a wrong key costs one query a minute). */
  readonly #cache: TtlCache<ApiPrincipal | { revoked: true } | { unknown: true }>;
  /**
   * Authorization headers of well-formed keys seen lately, to their hash (oldest dropped past
   * RECENT_HEADERS). Keys are stored only as hashes; this process holds the few in use, as it holds
   * every request's header while it runs.
   */
  readonly #recent = new Map<string, string>();

  constructor(sql: Sql, clock: Clock, bus: Bus) {
    this.#sql = sql;
    this.#clock = clock;
    this.#bus = bus;
    this.#cache = new TtlCache(clock, 60_000, 100_000);
    bus.subscribe('api-keys', (m) => {
      if (typeof m.hash === 'string') this.#cache.delete(m.hash);
      else this.#cache.clear();
    });
  }

  async create(db: Db, input: { orgId: string; name: string; scopes: Scope[] }) {
    await getOrg(db, input.orgId);
    const key = `aula_sk_${randomToken(32)}`;
    const id = newId('key');
    const [row] = await db<{ id: string; createdAt: Date }[]>`insert into api_keys (id, org_id, name, key_hash, key_prefix, scopes, created_at)
      values (${id}, ${input.orgId}, ${input.name}, ${sha256(key)}, ${key.slice(0, 12)}, ${input.scopes}, ${iso(this.#clock.now())})
      returning id, created_at`;
    return { id: row!.id, orgId: input.orgId, name: input.name, scopes: input.scopes, key, createdAt: row!.createdAt };
  }

  async revoke(db: Db, keyId: string): Promise<boolean> {
    const rows = await db<{ keyHash: Buffer }[]>`update api_keys set revoked_at = ${iso(this.#clock.now())}
      where id = ${keyId} and revoked_at is null returning key_hash`;
    if (rows[0]) await this.#bus.publish('api-keys', { hash: rows[0].keyHash.toString('hex') });
    return rows.length > 0;
  }

  /**
   * Resolves `Authorization: Bearer <key>` to the key's organization and scopes, or throws the distinct refusal.
   * A cached key is answered synchronously (no promise, no microtask on the hot path); only a cache miss
   * returns a promise, so callers await the result only when it is one.
   */
  authenticate(header: string | undefined, beforeQuery?: () => void): MaybePromise<ApiPrincipal> {
    if (!header) throw new AppError('auth_missing');
    // A header seen lately skips the parse and the hash; the entry it finds is still the one
    // revocation and plan changes delete (keyed by the hash), so a stale header only costs a lookup.
    const seen = this.#recent.get(header);
    if (seen !== undefined) {
      const p = this.#cache.get(seen);
      if (p) return principal(p);
    }
    const m = BEARER.exec(header);
    if (!m || !KEY_FORMAT.test(m[1]!)) throw new AppError('auth_malformed');
    const hex = sha256Hex(m[1]!);
    if (seen === undefined) {
      if (this.#recent.size >= RECENT_HEADERS) this.#recent.delete(this.#recent.keys().next().value!);
      this.#recent.set(header, hex);
    }
    const p = this.#cache.get(hex);
    if (p) return principal(p);
    beforeQuery?.();
    return this.#load(hex);
  }

  async #load(hex: string): Promise<ApiPrincipal> {
    const [row] = await this.#sql<{ id: string; orgId: string; scopes: Scope[]; revokedAt: Date | null; plan: PlanName }[]>`
      select k.id, k.org_id, k.scopes, k.revoked_at, o.plan from api_keys k join organizations o on o.id = k.org_id
      where k.key_hash = ${Buffer.from(hex, 'hex')}`;
    if (!row) {
      this.#cache.set(hex, { unknown: true });
      throw new AppError('api_key_invalid');
    }
    const p: ApiPrincipal | { revoked: true } = row.revokedAt
      ? { revoked: true }
      : { keyId: row.id, orgId: row.orgId, plan: row.plan, scopes: new Set(row.scopes), rateLimitPerMinute: PLANS[row.plan].rateLimitPerMinute, rateKey: row.id };
    this.#cache.set(hex, p);
    return principal(p);
  }
}

function principal(p: ApiPrincipal | { revoked: true } | { unknown: true }): ApiPrincipal {
  if ('revoked' in p) throw new AppError('api_key_revoked');
  if ('unknown' in p) throw new AppError('api_key_invalid');
  return p;
}
