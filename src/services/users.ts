import { ERASED_NAME } from '../core/domain.ts';
import { ERASE_TIMER_PREFIX } from '../../actors/meeting/meeting.views.ts';
import type { UserRole } from '../core/domain.ts';
import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Db } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import { decodeCursor, encodeCursor, ts, type PageQuery } from './common.ts';
import type { Outbox } from '../platform/outbox.ts';


/** A user as the API creates or updates it (by externalId); an omitted optional field keeps its value, null clears it. */
export interface UserInput {
  externalId: string;
  fullName: string;
  email?: string | null | undefined;
  role: UserRole;
  avatarUrl?: string | null | undefined;
}

export const USER_STATUSES = ['ACTIVE', 'DEACTIVATED'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

/** A user as the API shows it. */
export interface UserRecord {
  id: string;
  externalId: string;
  fullName: string;
  email: string | null;
  role: UserRole;
  avatarUrl: string | null;
  status: UserStatus;
  createdAt: string;
  updatedAt: string;
  deactivatedAt: string | null;
}

export interface UserListQuery extends PageQuery {
  status?: UserStatus | undefined;
  role?: UserRole | undefined;
  externalId?: string | undefined;
  /** Words found in the name, email or externalId, case-insensitively (the console's search). */
  q?: string | undefined;
}

/** `q` as a LIKE pattern that matches it literally anywhere. */
const contains = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export interface UserRow {
  id: string;
  orgId: string;
  externalId: string;
  fullName: string;
  email: string | null;
  role: UserRole;
  avatarUrl: string | null;
  status: UserStatus;
  createdAt: Date;
  updatedAt: Date;
  deactivatedAt: Date | null;
  revokedBefore: Date | null;
  /** The person deleted their account: personal data erased (DELETE /users/me). */
  erasedAt: Date | null;
  /** The row's version (Postgres's xmin, changed by every update) where it was read by `get`. */
  rowVersion?: string;
}

export const toUserRecord = (u: UserRow): UserRecord => ({
  id: u.id,
  externalId: u.externalId,
  fullName: u.fullName,
  email: u.email,
  role: u.role,
  avatarUrl: u.avatarUrl,
  status: u.status,
  createdAt: u.createdAt.toISOString(),
  updatedAt: u.updatedAt.toISOString(),
  deactivatedAt: ts(u.deactivatedAt),
});

/** The user shape of user.* events. */
export { ERASED_NAME };

export const userEventData = (u: UserRow) => ({
  userId: u.id,
  externalId: u.externalId,
  email: u.email,
  name: u.fullName,
  role: u.role,
  status: u.status,
  avatarUrl: u.avatarUrl,
  createdAt: u.createdAt.toISOString(),
  updatedAt: u.updatedAt.toISOString(),
  deactivatedAt: ts(u.deactivatedAt),
});

export class Users {
  readonly #clock: Clock;
  readonly #bus: Bus;
  /** Hot-path cache for join-link minting, keyed by org and by both id and externalId. */
  readonly #cache: TtlCache<UserRow>;

  readonly #outbox: Outbox;

  constructor(clock: Clock, bus: Bus, outbox: Outbox) {
    this.#outbox = outbox;
    this.#clock = clock;
    this.#bus = bus;
    this.#cache = new TtlCache(clock, 30_000);
    bus.subscribe('users', (m) => {
      for (const k of (m.keys as string[] | undefined) ?? []) this.#cache.delete(k);
    });
  }

  #invalidate(db: Db, u: UserRow): void {
    afterCommit(db, () => this.#bus.publish('users', { keys: [`${u.orgId}:${u.id}`, `${u.orgId}:${u.externalId}`, `${u.orgId}:ext:${u.externalId}`] }));
  }

  /** Creates or updates by externalId; emits user.created or, when something changed, user.updated. */
  upsert(pool: Db, orgId: string, input: UserInput): Promise<{ user: UserRow; created: boolean }> {
    return inTx(pool, async (db) => {
      const now = iso(this.#clock.now());
      const [inserted] = await db<UserRow[]>`insert into users (id, org_id, external_id, full_name, email, role, avatar_url, created_at, updated_at)
        values (${newId('usr')}, ${orgId}, ${input.externalId}, ${input.fullName}, ${input.email ?? null}, ${input.role},
          ${input.avatarUrl ?? null}, ${now}, ${now})
        on conflict (org_id, external_id) do nothing returning *`;
      if (inserted) {
        await this.#outbox.emit(db, orgId, 'user.created', userEventData(inserted), this.#clock.now());
        return { user: inserted, created: true };
      }
      const [current] = await db<UserRow[]>`select * from users where org_id = ${orgId} and external_id = ${input.externalId} for update`;
      // the person deleted their account: what the backend sends does not bring their data back
      if (current!.erasedAt) return { user: current!, created: false };
      const next = {
        fullName: input.fullName,
        role: input.role,
        email: input.email === undefined ? current!.email : input.email,
        avatarUrl: input.avatarUrl === undefined ? current!.avatarUrl : input.avatarUrl,
      };
      const changed = (Object.keys(next) as (keyof typeof next)[]).some((k) => next[k] !== current![k]);
      if (!changed) return { user: current!, created: false };
      const [updated] = await db<UserRow[]>`update users set full_name = ${next.fullName}, role = ${next.role}, email = ${next.email},
        avatar_url = ${next.avatarUrl}, updated_at = ${now} where id = ${current!.id} returning *`;
      await this.#outbox.emit(db, orgId, 'user.updated', userEventData(updated!), this.#clock.now());
      this.#invalidate(db, updated!);
      return { user: updated!, created: false };
    });
  }

  /**
   * Finds by service id or externalId (a service id wins), or by externalId only when `by` says so,
   * or throws user_not_found.
   */
  async get(db: Db, orgId: string, idOrExternal: string, forUpdate = false, by: 'any' | 'external' = 'any'): Promise<UserRow> {
    const match = by === 'external' ? db`external_id = ${idOrExternal}` : db`(id = ${idOrExternal} or external_id = ${idOrExternal})`;
    const rows = await db<UserRow[]>`select *, xmin::text as row_version from users where org_id = ${orgId} and ${match}
      order by (id = ${idOrExternal}) desc limit 1 ${forUpdate ? db`for update` : db``}`;
    if (!rows[0]) throw new AppError('user_not_found', { details: { id: idOrExternal } });
    return rows[0];
  }

  /** Cached read for the join-link hot path; every change to a user invalidates it on every node. */
  async getCached(db: Db, orgId: string, idOrExternal: string, by: 'any' | 'external' = 'any'): Promise<UserRow> {
    const key = by === 'external' ? `${orgId}:ext:${idOrExternal}` : `${orgId}:${idOrExternal}`;
    const hit = this.#cache.get(key);
    if (hit) return hit;
    const u = await this.get(db, orgId, idOrExternal, false, by);
    this.#cache.set(key, u);
    return u;
  }

  /** Drops a cached row found stale; the next `getCached` reads it again. */
  forgetCached(u: UserRow): void {
    for (const k of [`${u.orgId}:${u.id}`, `${u.orgId}:${u.externalId}`, `${u.orgId}:ext:${u.externalId}`]) this.#cache.delete(k);
  }

  async list(db: Db, orgId: string, q: UserListQuery): Promise<{ items: UserRow[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<UserRow[]>`select * from users where org_id = ${orgId}
      ${q.status ? db`and status = ${q.status}` : db``}
      ${q.role ? db`and role = ${q.role}` : db``}
      ${q.externalId ? db`and external_id = ${q.externalId}` : db``}
      ${q.q ? db`and (full_name ilike ${contains(q.q)} or email ilike ${contains(q.q)} or external_id ilike ${contains(q.q)})` : db``}
      ${after ? db`and id < ${after[0]!}` : db``}
      order by id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }

  /**
   * Deactivates the user, revokes every join link minted for them so far and every meeting session
   * they hold. Deactivating twice is a no-op that returns the current state.
   */
  /**
   * The person deletes their own account (DELETE /users/me): deactivated as by `deactivate` (links and
   * sessions revoked, sockets closed) and their personal data erased: the name becomes `Deleted user`,
   * email and avatar are dropped, and so is their name on meeting sessions. Reports read names from the
   * user, so attendance, polls and Q&A keep their numbers and lose the name. The meeting actors that may
   * remember the name (in memory and in their snapshots) are told in the same transaction, by a durable
   * timer due at once (ERASE_TIMER_PREFIX). user.deactivated is sent, with the erased payload, when the user
   * was active. Erasing twice changes nothing.
   */
  erase(pool: Db, orgId: string, userId: string): Promise<UserRow> {
    return inTx(pool, async (db) => {
      const current = await this.get(db, orgId, userId, true);
      if (current.erasedAt) return current;
      const at = this.#clock.now();
      const now = iso(at);
      const [u] = await db<UserRow[]>`update users set status = 'DEACTIVATED', deactivated_at = coalesce(deactivated_at, ${now}), revoked_before = ${now},
        full_name = ${ERASED_NAME}, email = null, avatar_url = null, erased_at = ${now}, updated_at = ${now} where id = ${current.id} returning *`;
      await db`update meeting_sessions set revoked_at = coalesce(revoked_at, ${now}), revoked_reason = coalesce(revoked_reason, 'user_deactivated'),
        display_name = ${ERASED_NAME} where user_id = ${current.id}`;
      // Which actors: those whose snapshot or deltas hold the user, and every live meeting of the organization
      // (a transition of a room they act in right now may not be written yet). A timer, not a message: it
      // commits with the erasure, and whichever node owns the actor fires it (DurableTimers), retried until
      // done; the actor stays the only writer of its state and forgets the name in memory too, and the
      // timer's transition writes its whole state and deletes its deltas (the meeting's `compact`).
      const held = JSON.stringify(current.id);
      await db`insert into actor_timers (actor_id, name, shard, due_at)
        select s.actor_id, ${ERASE_TIMER_PREFIX + current.id}, s.shard, ${now}
        from meetings m join actor_snapshots s on s.actor_id = 'meeting:' || m.id
        where m.org_id = ${orgId} and (m.status = 'LIVE' or strpos(s.snapshot::text, ${held}) > 0
          or exists (select 1 from actor_deltas d where d.actor_id = s.actor_id and strpos(d.patch::text, ${held}) > 0))
        on conflict (actor_id, name) do update set due_at = excluded.due_at`;
      if (current.status === 'ACTIVE') await this.#outbox.emit(db, orgId, 'user.deactivated', userEventData(u!), at);
      this.#invalidate(db, u!);
      afterCommit(db, () => this.#bus.publish('user-deactivated', { orgId, userId: u!.id, erased: true }));
      return u!;
    });
  }

  deactivate(pool: Db, orgId: string, idOrExternal: string): Promise<UserRow> {
    return inTx(pool, async (db) => {
      const current = await this.get(db, orgId, idOrExternal, true);
      if (current.status === 'DEACTIVATED') return current;
      const at = this.#clock.now();
      const now = iso(at);
      const [u] = await db<UserRow[]>`update users set status = 'DEACTIVATED', deactivated_at = ${now}, revoked_before = ${now},
        updated_at = ${now} where id = ${current.id} returning *`;
      await db`update meeting_sessions set revoked_at = ${now}, revoked_reason = 'user_deactivated'
        where user_id = ${current.id} and revoked_at is null`;
      await this.#outbox.emit(db, orgId, 'user.deactivated', userEventData(u!), at);
      this.#invalidate(db, u!);
      afterCommit(db, () => this.#bus.publish('user-deactivated', { orgId, userId: u!.id }));
      return u!;
    });
  }
}
