import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import { sha256, sha256Hex } from '../platform/crypto.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId, randomToken } from '../platform/ids.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import type { Scope } from '../core/scopes.ts';
import type { Logger } from '../platform/logger.ts';
import { getOrg } from './orgs.ts';
import { recordAudit, type AuditActor } from './audit-log.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';
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
  /** A rolled key's end (ms since the epoch): refused from then on, on every node, whatever its cache holds. */
  expiresAt?: number | null;
}

/** An API key as the console lists it: never the key, only its first 12 characters. */
export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  /** ACTIVE; EXPIRING (rolled, still valid until expiresAt); EXPIRED; REVOKED. */
  status: 'ACTIVE' | 'EXPIRING' | 'EXPIRED' | 'REVOKED';
  createdAt: string;
  /** Coarse: to about a flush interval (10 s), and at most a minute behind on a busy key. */
  lastUsedAt: string | null;
  revokedAt: string | null;
  expiresAt: string | null;
  rolledFrom: string | null;
  replacedBy: string | null;
}

interface KeyRow {
  id: string;
  orgId: string;
  name: string;
  keyHash: Buffer;
  keyPrefix: string;
  scopes: Scope[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  expiresAt: Date | null;
  rolledFrom: string | null;
  replacedBy: string | null;
}

const KEY_COLUMNS = 'id, org_id, name, key_hash, key_prefix, scopes, created_at, last_used_at, revoked_at, expires_at, rolled_from, replaced_by';
const KEY_FORMAT = /^aula_sk_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer +(\S+)\s*$/i;
const RECENT_HEADERS = 10_000;
/** A key's use is recorded at most once a minute per node; uses in between only cost a map read. */
export const LAST_USED_GRANULARITY_MS = 60_000;
/** How often a node writes the uses it has noted, in one statement. */
export const LAST_USED_FLUSH_MS = 10_000;
/** The longest overlap a roll may give the old key (as Stripe's dashboard offers: up to 7 days). */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;
/** Keys an organization may hold that still work (revoked and expired ones do not count). */
export const MAX_ACTIVE_KEYS = 100;

export function toApiKeyRecord(r: KeyRow, now: number): ApiKeyRecord {
  const status = r.revokedAt ? 'REVOKED' : r.expiresAt ? (r.expiresAt.getTime() <= now ? 'EXPIRED' : 'EXPIRING') : 'ACTIVE';
  return {
    id: r.id,
    name: r.name,
    prefix: r.keyPrefix,
    scopes: r.scopes,
    status,
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
    expiresAt: r.expiresAt?.toISOString() ?? null,
    rolledFrom: r.rolledFrom,
    replacedBy: r.replacedBy,
  };
}

/**
 * A key as a node caches it: the principal, its end as a number (Infinity: none), and whether it was used
 * since the last flush (a flag, so a request reads no clock for it).
 */
interface CachedKey extends ApiPrincipal {
  until: number;
  used: boolean;
}

export interface CreateKeyOptions {
  /** Who creates it: recorded in the audit log in the same transaction. */
  actor?: AuditActor;
  /** Refuse with limit_reached when the organization already holds this many working keys. */
  maxActive?: number;
  requestId?: string;
}

/** API keys: shown once at creation, stored as SHA-256 (keys carry 256 bits of entropy, so no KDF is needed). */
export class ApiKeys {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #bus: Bus;
  /** Known keys, revoked ones, and unknown ones (for a minute: a client repeating a wrong key costs one query a minute). */
  readonly #cache: TtlCache<CachedKey | { revoked: true } | { unknown: true }>;
  /**
   * Authorization headers of well-formed keys seen lately, to their hash (oldest dropped past
   * RECENT_HEADERS). Keys are stored only as hashes; this process holds the few in use, as it holds
   * every request's header while it runs.
   */
  readonly #recent = new Map<string, string>();
  /** Keys used since the last flush (each pushed once, by the request that set its flag). */
  #used: CachedKey[] = [];
  /** Uses seen by a flush and not written yet (a minute had not passed since the last write): key id to time (ms). */
  readonly #seen = new Map<string, number>();
  /** When this node last wrote each key's last use (ms), for the keys written in the last minute. */
  readonly #written = new Map<string, number>();
  #flushing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #log: Logger | null = null;

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

  /** Writes noted uses every `flushMs` (off the request path); `stop` writes the last ones. */
  start(log: Logger, flushMs = LAST_USED_FLUSH_MS): void {
    this.#log = log;
    this.#timer ??= setInterval(() => void this.flushUsage(), flushMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.flushUsage(true);
  }

  async create(db: Db, input: { orgId: string; name: string; scopes: Scope[] }, opts: CreateKeyOptions = {}) {
    const key = `aula_sk_${randomToken(32)}`;
    const id = newId('key');
    const at = this.#clock.now();
    const row = await inTx(db, async (tx) => {
      await getOrg(tx, input.orgId);
      if (opts.maxActive !== undefined) {
        // the organization's row is locked first, so concurrent creates count one after another
        await tx`select id from organizations where id = ${input.orgId} for update`;
        const [c] = await tx<{ count: number }[]>`select count(*)::int as count from api_keys
          where org_id = ${input.orgId} and revoked_at is null and (expires_at is null or expires_at > ${iso(at)})`;
        if (c!.count >= opts.maxActive) {
          throw new AppError('limit_reached', {
            message: `An organization holds at most ${opts.maxActive} working API keys; revoke one first.`,
            details: { limit: opts.maxActive, count: c!.count, resource: 'api_keys' },
          });
        }
      }
      const [r] = await tx<KeyRow[]>`insert into api_keys (id, org_id, name, key_hash, key_prefix, scopes, created_at)
        values (${id}, ${input.orgId}, ${input.name}, ${sha256(key)}, ${key.slice(0, 12)}, ${input.scopes}, ${iso(at)})
        returning ${tx.unsafe(KEY_COLUMNS)}`;
      if (opts.actor) {
        await recordAudit(tx, at, {
          orgId: input.orgId,
          actor: opts.actor,
          action: 'api_key.created',
          target: { type: 'api_key', id },
          details: { name: input.name, prefix: r!.keyPrefix, scopes: input.scopes },
          requestId: opts.requestId ?? null,
        });
      }
      return r!;
    });
    return { id: row.id, orgId: input.orgId, name: input.name, scopes: input.scopes, key, createdAt: row.createdAt, record: toApiKeyRecord(row, at) };
  }

  /** One of the organization's keys; another organization's is answered as unknown. */
  async get(db: Db, orgId: string, id: string, forUpdate = false): Promise<KeyRow> {
    const [row] = await db<KeyRow[]>`select ${db.unsafe(KEY_COLUMNS)} from api_keys where org_id = ${orgId} and id = ${id} ${forUpdate ? db`for update` : db``}`;
    if (!row) throw new AppError('api_key_not_found', { details: { id } });
    return row;
  }

  /** The organization's keys, newest first. */
  async list(db: Db, orgId: string, q: PageQuery): Promise<{ items: ApiKeyRecord[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<KeyRow[]>`select ${db.unsafe(KEY_COLUMNS)} from api_keys where org_id = ${orgId}
      ${after ? db`and id < ${after[0]!}` : db``}
      order by id desc limit ${q.limit + 1}`;
    const now = this.#clock.now();
    const items = rows.slice(0, q.limit).map((r) => toApiKeyRecord(r, now));
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }

  /** Every key (of `orgId` when given), oldest first, with its organization: the operator's `aula keys list`. */
  async listAll(db: Db, orgId?: string): Promise<(ApiKeyRecord & { orgId: string })[]> {
    const rows = await db<KeyRow[]>`select ${db.unsafe(KEY_COLUMNS)} from api_keys ${orgId === undefined ? db`` : db`where org_id = ${orgId}`} order by created_at, id`;
    const now = this.#clock.now();
    return rows.map((r) => ({ ...toApiKeyRecord(r, now), orgId: r.orgId }));
  }

  /**
   * Revokes a key (of `orgId` when given); false when it was already revoked. Running nodes drop it from
   * their caches once the revocation commits (told over the bus): before the commit, a node reading the
   * row would cache it as still valid.
   */
  async revoke(db: Db, keyId: string, opts: { orgId?: string; actor?: AuditActor; requestId?: string } = {}): Promise<boolean> {
    const at = this.#clock.now();
    let hash: Buffer | null = null;
    await inTx(db, async (tx) => {
      const rows = await tx<{ keyHash: Buffer; orgId: string; name: string; keyPrefix: string }[]>`update api_keys set revoked_at = ${iso(at)}
        where id = ${keyId} and revoked_at is null ${opts.orgId === undefined ? tx`` : tx`and org_id = ${opts.orgId}`}
        returning key_hash, org_id, name, key_prefix`;
      const r = rows[0];
      if (!r) return;
      hash = r.keyHash;
      if (opts.actor) {
        await recordAudit(tx, at, {
          orgId: r.orgId,
          actor: opts.actor,
          action: 'api_key.revoked',
          target: { type: 'api_key', id: keyId },
          details: { name: r.name, prefix: r.keyPrefix },
          requestId: opts.requestId ?? null,
        });
      }
      afterCommit(tx, () => this.#forget(r.keyHash));
    });
    return hash !== null;
  }

  /**
   * Rolls a key: a new one with the same name and scopes, shown once; the old one keeps working for
   * `overlapSeconds` (0: it stops now) and is refused from then on by every node, which check each
   * cached key's expiry on every request. A revoked or already rolled key cannot be rolled.
   */
  async roll(db: Db, orgId: string, keyId: string, overlapSeconds: number, opts: { actor?: AuditActor; requestId?: string } = {}) {
    const key = `aula_sk_${randomToken(32)}`;
    const id = newId('key');
    const at = this.#clock.now();
    const expiresAt = at + overlapSeconds * 1000;
    const out = await inTx(db, async (tx) => {
      const old = await this.get(tx, orgId, keyId, true);
      const state = toApiKeyRecord(old, at).status;
      if (state !== 'ACTIVE') {
        throw new AppError('invalid_state', {
          message:
            state === 'REVOKED'
              ? 'A revoked key cannot be rolled; create a new one.'
              : `This key was already rolled (its successor is ${old.replacedBy}); roll that one, or revoke this one to end its overlap now.`,
          details: { id: keyId, status: state, replacedBy: old.replacedBy },
        });
      }
      const [fresh] = await tx<KeyRow[]>`insert into api_keys (id, org_id, name, key_hash, key_prefix, scopes, created_at, rolled_from)
        values (${id}, ${orgId}, ${old.name}, ${sha256(key)}, ${key.slice(0, 12)}, ${old.scopes}, ${iso(at)}, ${old.id})
        returning ${tx.unsafe(KEY_COLUMNS)}`;
      const [rolled] = await tx<KeyRow[]>`update api_keys set expires_at = ${iso(expiresAt)}, replaced_by = ${id} where id = ${old.id}
        returning ${tx.unsafe(KEY_COLUMNS)}`;
      if (opts.actor) {
        await recordAudit(tx, at, {
          orgId,
          actor: opts.actor,
          action: 'api_key.rolled',
          target: { type: 'api_key', id: old.id },
          details: { name: old.name, prefix: old.keyPrefix, newKeyId: id, newPrefix: fresh!.keyPrefix, overlapSeconds, oldExpiresAt: iso(expiresAt) },
          requestId: opts.requestId ?? null,
        });
      }
      // nodes holding the old key drop it, so they read its expiry before the overlap ends
      afterCommit(tx, () => this.#forget(old.keyHash));
      return { fresh: fresh!, rolled: rolled! };
    });
    return { key, record: toApiKeyRecord(out.fresh, at), previous: toApiKeyRecord(out.rolled, at) };
  }

  async #forget(hash: Buffer): Promise<void> {
    await this.#bus.publish('api-keys', { hash: hash.toString('hex') });
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
      if (p) return this.#principal(p);
    }
    const m = BEARER.exec(header);
    if (!m || !KEY_FORMAT.test(m[1]!)) throw new AppError('auth_malformed');
    const hex = sha256Hex(m[1]!);
    if (seen === undefined) {
      if (this.#recent.size >= RECENT_HEADERS) this.#recent.delete(this.#recent.keys().next().value!);
      this.#recent.set(header, hex);
    }
    const p = this.#cache.get(hex);
    if (p) return this.#principal(p);
    beforeQuery?.();
    return this.#load(hex);
  }

  async #load(hex: string): Promise<ApiPrincipal> {
    const [row] = await this.#sql<{ id: string; orgId: string; scopes: Scope[]; revokedAt: Date | null; expiresAt: Date | null; plan: PlanName }[]>`
      select k.id, k.org_id, k.scopes, k.revoked_at, k.expires_at, o.plan from api_keys k join organizations o on o.id = k.org_id
      where k.key_hash = ${Buffer.from(hex, 'hex')}`;
    if (!row) {
      this.#cache.set(hex, { unknown: true });
      throw new AppError('api_key_invalid');
    }
    const p: CachedKey | { revoked: true } = row.revokedAt
      ? { revoked: true }
      : {
          keyId: row.id,
          orgId: row.orgId,
          plan: row.plan,
          scopes: new Set(row.scopes),
          rateLimitPerMinute: PLANS[row.plan].rateLimitPerMinute,
          rateKey: row.id,
          expiresAt: row.expiresAt?.getTime() ?? null,
          until: row.expiresAt?.getTime() ?? Infinity,
          used: false,
        };
    this.#cache.set(hex, p);
    return this.#principal(p);
  }

  /** The cached answer for a key: refused if revoked, unknown or past its expiry; a use is noted at most once a minute. */
  #principal(p: CachedKey | { revoked: true } | { unknown: true }): ApiPrincipal {
    if ('revoked' in p) throw new AppError('api_key_revoked');
    if ('unknown' in p) throw new AppError('api_key_invalid');
    // The hot path reads no clock (a clock read costs about 0.13 µs on the bench's VM): only a rolled
    // key in its overlap is checked against the time, and a use only sets a flag.
    if (p.until !== Infinity && p.until <= this.#clock.now()) throw new AppError('api_key_expired', { details: { expiredAt: iso(p.until) } });
    if (!p.used) {
      p.used = true;
      this.#used.push(p);
    }
    return p;
  }

  /**
   * Takes the keys used since the last flush as used now (so a last use is known to a flush interval),
   * and writes, in one statement, each key whose last write by this node is a minute old or more; the
   * others wait for their minute (`all`: not when the node stops). A key's last_used_at only moves forward.
   */
  flushUsage(all = false): Promise<void> {
    if (this.#flushing) return this.#flushing.then(() => this.flushUsage(all));
    const now = this.#clock.now();
    for (const p of this.#used) {
      p.used = false;
      this.#seen.set(p.keyId, now);
    }
    this.#used = [];
    const batch = new Map<string, number>();
    for (const [id, at] of this.#seen) {
      const written = this.#written.get(id);
      if (!all && written !== undefined && now - written < LAST_USED_GRANULARITY_MS) continue;
      batch.set(id, at);
      this.#seen.delete(id);
      this.#written.set(id, at);
    }
    for (const [id, at] of this.#written) if (now - at >= LAST_USED_GRANULARITY_MS) this.#written.delete(id);
    if (batch.size === 0) return Promise.resolve();
    const ids = [...batch.keys()];
    const ats = [...batch.values()].map(iso);
    const run = this.#sql`update api_keys k set last_used_at = u.at
        from unnest(${ids}::text[], ${ats}::timestamptz[]) as u(id, at)
        where k.id = u.id and (k.last_used_at is null or k.last_used_at < u.at)`
      .then(
        () => undefined,
        (err: unknown) => {
          // kept for the next flush unless newer uses replaced them
          for (const [id, at] of batch) {
            if (!this.#seen.has(id)) this.#seen.set(id, at);
            if (this.#written.get(id) === at) this.#written.delete(id);
          }
          this.#log?.warn({ err, keys: batch.size }, 'API keys\' last use not written; trying again at the next flush');
        },
      )
      .finally(() => {
        this.#flushing = null;
      });
    this.#flushing = run;
    return run;
  }
}
