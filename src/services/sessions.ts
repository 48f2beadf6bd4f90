import { iso, type Clock } from '../core/clock.ts';
import type postgres from 'postgres';
import { Batcher } from '../platform/db/batch.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { inTx, isPool } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import { RoomAccess } from '../core/room-access.ts';
import type { LiveLoad, MeetingRow, Meetings } from './meetings.ts';
import type { MeetingKind, MeetingSession, WaitingStatus } from '../core/room.ts';
import type { RoomClients } from './live/clients.ts';
import type { AccessClaims, JoinClaims, Tokens } from './tokens.ts';
import type { RoomRole } from '../core/room-access.ts';
import type { UserRow, Users } from './users.ts';

export const ACCESS_TTL_MS = 60 * 60_000;
export const REFRESH_WINDOW_MS = 24 * 60 * 60_000;

export interface SessionPrincipal {
  sessionId: string;
  orgId: string;
  meetingId: string;
  slug: string;
  userId: string;
  expiresAt: number;
  expired: boolean;
}

interface SessionRow {
  id: string;
  orgId: string;
  meetingId: string;
  userId: string;
  jti: string;
  deviceId: string;
  role: RoomRole;
  displayName: string;
  redirectUrl: string | null;
  createdAt: Date;
  refreshUntil: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
  queueId: string | null;
}

interface WaitingView {
  queueId: string;
  status: WaitingStatus;
}

interface Resolved {
  session: SessionRow;
  meeting: MeetingRow;
  user: UserRow;
}

const BEARER = /^Bearer +(\S+)\s*$/i;

/** A first exchange's rows, decided on cached rows of these versions. */
interface NewSession {
  id: string;
  jti: string;
  deviceId: string;
  orgId: string;
  meetingId: string;
  meetingVersion: string;
  userId: string;
  userVersion: string;
  role: RoomRole;
  displayName: string;
  redirectUrl: string | null;
  queueId: string | null;
  single: boolean;
  needs: 'enrollment' | 'invitation' | null;
  createdAt: string;
  refreshUntil: string;
}

/** Statements in flight and rows per statement for first exchanges: a share of the pool, and a bound on one statement's locks. */
const SESSION_INSERTS = { concurrency: 2, maxItems: 64 };

/**
 * Writes each first exchange whose user and meeting rows are still the versions it was decided on, whose
 * access-list row exists and whose token is unspent: the spend and the session, in one statement for all.
 * Tokens are spent in jti order, so two statements spending the same tokens cannot deadlock.
 */
async function insertSessions(sql: Sql, rows: NewSession[]): Promise<(SessionRow | null)[]> {
  const written = await sql<SessionRow[]>`with input as (
      select * from jsonb_to_recordset(${sql.json(rows as unknown as postgres.JSONValue)}) as i (id text, jti text, "deviceId" text, "orgId" text,
        "meetingId" text, "meetingVersion" text, "userId" text, "userVersion" text, role text, "displayName" text, "redirectUrl" text,
        "queueId" text, single boolean, needs text, "createdAt" timestamptz, "refreshUntil" timestamptz)
    ), checked as (
      select i.* from input i
        join users u on u.id = i."userId" and u.xmin = i."userVersion"::xid
        join meetings m on m.id = i."meetingId" and m.xmin = i."meetingVersion"::xid
      where (i.needs is distinct from 'enrollment' or exists (select 1 from enrollments e where e.class_id = m.class_id and e.user_id = u.id and e.status = 'ACTIVE'))
        and (i.needs is distinct from 'invitation' or exists (select 1 from meeting_invitations v where v.meeting_id = m.id and v.user_id = u.id))
      for share of u
    ), spent as (
      insert into join_token_uses (jti, device_id, session_id, used_at)
      select jti, "deviceId", id, "createdAt" from checked where single order by jti
      on conflict (jti) do nothing returning session_id
    )
    insert into meeting_sessions (id, org_id, meeting_id, user_id, jti, device_id, role, display_name, redirect_url, created_at, refresh_until, queue_id)
    select id, "orgId", "meetingId", "userId", jti, "deviceId", role, "displayName", "redirectUrl", "createdAt", "refreshUntil", "queueId"
    from checked c where not c.single or c.id in (select session_id from spent)
    returning *`;
  const byId = new Map(written.map((s) => [s.id, s]));
  return rows.map((r) => byId.get(r.id) ?? null);
}

/** An ended or cancelled meeting takes no one in. */
function assertOpen(meeting: MeetingRow): void {
  if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') throw new AppError('meeting_ended', { details: { status: meeting.status } });
}

/** A locked or full live room takes in only hosts and cohosts (RoomAccess.admits, on the row its actor projects; the room join decides again). */
function assertAdmits(meeting: MeetingRow, role: RoomRole): void {
  if (meeting.status !== 'LIVE') return;
  const d = RoomAccess.admits(role, { locked: meeting.locked, full: meeting.atCapacity, cap: null });
  if (d) throw new AppError(d.code, { message: d.message });
}

/** A meeting that would go live while the organization has as many live as its plan allows is refused. */
export function assertCanStart(load: LiveLoad): void {
  if (load.full) throw new AppError('plan_limit_reached', { details: { limit: load.limit, live: load.live, plan: load.plan } });
}

/** ENROLLED: students need an active enrollment; INVITED: everyone but the host and host-role links needs an invitation. */
function accessListRow(meeting: MeetingRow, user: UserRow, role: RoomRole): 'enrollment' | 'invitation' | null {
  if (RoomAccess.bypassesAccessList(role, user.id, meeting.hostUserId)) return null;
  if (meeting.accessMode === 'ENROLLED') return user.role === 'STUDENT' ? 'enrollment' : null;
  if (meeting.accessMode === 'INVITED') return 'invitation';
  return null;
}

/** A revoked session is refused with the reason the user should hear. */
function assertNotRevoked(session: Pick<SessionRow, 'revokedAt' | 'revokedReason'>, via: 'join' | 'refresh'): void {
  if (!session.revokedAt) return;
  if (session.revokedReason === 'user_deactivated') throw new AppError(via === 'join' ? 'join_token_revoked' : 'user_deactivated');
  if (session.revokedReason === 'meeting_cancelled') throw new AppError('meeting_ended');
  throw new AppError('session_revoked', { details: { reason: session.revokedReason } });
}

/** How a client-side route names the session's meeting: `/meetings/:slug/...`, or `/orgs/:orgId/meetings/:id/...` (class sessions). */
export type MeetingRoute = { slug: string } | { orgId: string; meetingId: string };

/** Join-token exchange, meeting sessions and their refresh. */
export class Sessions {
  readonly #clock: Clock;
  readonly #tokens: Tokens;
  readonly #meetings: Meetings;
  readonly #users: Users;
  readonly #rooms: RoomClients;
  readonly #inserts = new WeakMap<Sql, Batcher<NewSession, SessionRow>>();
  /** The server's public base URL (known once it listens), for the room socket's address. */
  readonly #baseUrl: () => string;

  constructor(clock: Clock, tokens: Tokens, meetings: Meetings, users: Users, rooms: RoomClients, baseUrl: () => string) {
    this.#clock = clock;
    this.#tokens = tokens;
    this.#meetings = meetings;
    this.#users = users;
    this.#rooms = rooms;
    this.#baseUrl = baseUrl;
  }

  /** Reads `Authorization: Bearer <accessToken>`; expiry is reported, not refused, so refresh can use it. */
  authenticate(header: string | undefined): SessionPrincipal {
    if (!header) throw new AppError('auth_missing', { message: 'Send the meeting session as "Authorization: Bearer <accessToken>".' });
    const m = BEARER.exec(header);
    if (!m) throw new AppError('auth_malformed');
    const c = this.#tokens.access.read(m[1]!);
    if (!c) throw new AppError('session_invalid');
    return { sessionId: c.s, orgId: c.o, meetingId: c.m, slug: c.g, userId: c.u, expiresAt: c.e, expired: c.e <= this.#clock.now() };
  }

  /**
   * Whether the session still stands, decided as `refresh` decides it (revoked: the reason's code; the user
   * deactivated: user_deactivated), whatever the accessToken's age: every accessToken route asks this
   * before it runs (the pipeline does), so a token outlives neither a removal nor a deactivation. One read
   * by primary keys. `erasedAccount`: the person deleted their own account, which revoked the session; a
   * route that answers that deletion answers it again (DELETE /users/me), every other one refuses.
   */
  async assertStanding(db: Db, principal: SessionPrincipal, erasedAccount: 'answer' | 'refuse'): Promise<void> {
    const [row] = await db<{ revokedAt: Date | null; revokedReason: string | null; userStatus: string; erasedAt: Date | null }[]>`
      select s.revoked_at, s.revoked_reason, u.status as user_status, u.erased_at
      from meeting_sessions s join users u on u.id = s.user_id where s.id = ${principal.sessionId}`;
    if (!row) throw new AppError('session_invalid');
    if (row.erasedAt && erasedAccount === 'answer') return;
    assertNotRevoked(row, 'refresh');
    if (row.userStatus !== 'ACTIVE') throw new AppError('user_deactivated');
  }

  /** Exchanges a join token for a meeting session, checking access again as of now. */
  async exchange(pool: Db, token: string, deviceId: string): Promise<MeetingSession> {
    const claims = this.#tokens.join.read(token);
    if (!claims) throw new AppError('join_token_invalid');
    const resolved = (await this.#firstExchange(pool, claims, deviceId)) ?? (await inTx(pool, (db) => this.#exchangeIn(db, claims, deviceId)));
    return this.#present(resolved, await this.#waiting(resolved));
  }

  /**
   * The path every student takes, a token's first exchange, as one row of one statement: no round trip
   * of its own before it, one commit (shared with the exchanges that arrived meanwhile: see `Batcher`).
   * The user and the meeting come from the nodes' caches and the policy decides on them; the
   * statement writes the spend and the session only if both rows are still the versions decided on
   * (Postgres's xmin, which every update changes), the enrollment or invitation the policy asked for
   * exists, and the token is unspent. It share-locks the user's row, so a deactivation either commits
   * first (and the version differs) or waits and then revokes the new session. Null in every other
   * case (an expired, spent or refused token, a stale cache, a race lost): the exchange then runs whole
   * in a transaction on fresh rows, which says why or resumes.
   */
  async #firstExchange(pool: Db, claims: JoinClaims, deviceId: string): Promise<Resolved | null> {
    const now = this.#clock.now();
    if (!isPool(pool) || claims.e <= now) return null;
    let user: UserRow, meeting: MeetingRow;
    try {
      [user, meeting] = await Promise.all([this.#users.getCached(pool, claims.o, claims.u), this.#meetings.getCached(pool, claims.o, claims.m)]);
      if (user.id !== claims.u || meeting.id !== claims.m) return null;
      this.#assertUser(user, claims);
      assertOpen(meeting);
      assertAdmits(meeting, claims.r);
      if (meeting.status === 'SCHEDULED' && (await this.#meetings.liveLoad(pool, claims.o, 'cached')).full) return null;
    } catch (err) {
      if (err instanceof AppError) return null; // refused on cached rows: the transaction refuses on fresh ones
      throw err;
    }
    if (!user.rowVersion || !meeting.rowVersion) return null;
    const session = await this.#sessionInserts(pool).add({
      id: newId('ses', now),
      jti: claims.j,
      deviceId,
      orgId: claims.o,
      meetingId: meeting.id,
      meetingVersion: meeting.rowVersion,
      userId: user.id,
      userVersion: user.rowVersion,
      role: claims.r,
      displayName: claims.n ?? user.fullName,
      redirectUrl: claims.d,
      queueId: RoomAccess.waits(claims.r, meeting.settings) ? newId('wr', now) : null,
      single: claims.s,
      needs: accessListRow(meeting, user, claims.r),
      createdAt: iso(now),
      refreshUntil: iso(now + REFRESH_WINDOW_MS),
    }).catch(() => null); // the statement failed: this exchange does the work alone
    if (session) return { session, meeting, user };
    // A cached row may be stale: the next exchange reads it again.
    this.#users.forgetCached(user);
    this.#meetings.forgetCached(meeting);
    return null;
  }

  #sessionInserts(sql: Sql): Batcher<NewSession, SessionRow> {
    let b = this.#inserts.get(sql);
    if (!b) this.#inserts.set(sql, (b = new Batcher((rows) => insertSessions(sql, rows), SESSION_INSERTS)));
    return b;
  }

  /** The whole exchange in the caller's transaction: every case, and the reason for every refusal. */
  async #exchangeIn(db: Db, claims: JoinClaims, deviceId: string): Promise<Resolved> {
    const now = this.#clock.now();
    // Reopening a spent single-use link on the device that spent it resumes that session.
    if (claims.s) {
      const [use] = await db<{ deviceId: string; sessionId: string }[]>`select device_id, session_id from join_token_uses where jti = ${claims.j}`;
      if (use) {
        if (use.deviceId !== deviceId) throw new AppError('join_token_used');
        return this.#resume(db, await this.#session(db, use.sessionId), 'join');
      }
    }
    if (claims.e <= now) throw new AppError('join_token_expired', { details: { expiredAt: iso(claims.e) } });
    const user = await this.#user(db, claims.o, claims.u);
    this.#assertUser(user, claims);
    const meeting = await this.#meetings.get(db, claims.o, claims.m);
    assertOpen(meeting);
    try {
      assertAdmits(meeting, claims.r);
    } catch (err) {
      // someone at the locked door: the hosts hear of it (the actor tells them at most once a minute per person)
      if (err instanceof AppError && err.code === 'meeting_locked') {
        this.#rooms.meeting.knock(meeting.id, { userId: user.id, name: claims.n ?? user.fullName }).catch(() => undefined);
      }
      throw err;
    }
    if (meeting.status === 'SCHEDULED') assertCanStart(await this.#meetings.liveLoad(db, claims.o, 'fresh'));
    await this.#checkAccess(db, meeting, user, claims.r);

    const sessionId = newId('ses', now);
    if (claims.s) {
      const spent = await db`insert into join_token_uses (jti, device_id, session_id, used_at)
        values (${claims.j}, ${deviceId}, ${sessionId}, ${iso(now)}) on conflict (jti) do nothing returning jti`;
      if (!spent.length) {
        // A concurrent exchange won; it committed before our insert returned.
        const [use] = await db<{ deviceId: string; sessionId: string }[]>`select device_id, session_id from join_token_uses where jti = ${claims.j}`;
        if (!use || use.deviceId !== deviceId) throw new AppError('join_token_used');
        return this.#resume(db, await this.#session(db, use.sessionId), 'join');
      }
    }
    const waits = RoomAccess.waits(claims.r, meeting.settings);
    const [session] = await db<SessionRow[]>`insert into meeting_sessions
        (id, org_id, meeting_id, user_id, jti, device_id, role, display_name, redirect_url, created_at, refresh_until, queue_id)
      values (${sessionId}, ${claims.o}, ${meeting.id}, ${user.id}, ${claims.j}, ${deviceId}, ${claims.r},
        ${claims.n ?? user.fullName}, ${claims.d}, ${iso(now)}, ${iso(now + REFRESH_WINDOW_MS)}, ${waits ? newId('wr', now) : null}) returning *`;
    return { session: session!, meeting, user };
  }

  /** A token issued before the user's sessions were revoked, or a deactivated user, gets nothing. */
  #assertUser(user: UserRow, claims: JoinClaims): void {
    if (user.revokedBefore && claims.i <= user.revokedBefore.getTime()) throw new AppError('join_token_revoked');
    if (user.status !== 'ACTIVE') throw new AppError('user_deactivated');
  }

  /** A fresh session for up to 24 hours after the exchange, unless revoked, deactivated or ended since. */
  async refresh(pool: Db, principal: SessionPrincipal): Promise<MeetingSession> {
    const resolved = await inTx(pool, async (db) => this.#resume(db, await this.#session(db, principal.sessionId), 'refresh'));
    return this.#present(resolved, await this.#waiting(resolved));
  }

  /**
   * The session's waiting-room entry, as the waiting-room actor has it. Enqueueing is idempotent per
   * queue id, so every exchange, reload and refresh simply asks again (and repairs an entry whose first
   * enqueue never arrived).
   */
  async #waiting({ session, user }: Resolved): Promise<WaitingView | null> {
    if (!session.queueId) return null;
    const entry = await this.#rooms.waitingRoom.enqueue(session.meetingId, {
      queueId: session.queueId,
      sessionId: session.id,
      user: { id: user.id, externalId: user.externalId, name: session.displayName, email: user.email, role: user.role },
    });
    return { queueId: session.queueId, status: entry.status };
  }

  async #resume(db: Db, session: SessionRow, via: 'join' | 'refresh'): Promise<Resolved> {
    const now = this.#clock.now();
    const user = await this.#user(db, session.orgId, session.userId);
    assertNotRevoked(session, via);
    if (user.status !== 'ACTIVE') throw new AppError('user_deactivated');
    if (now > session.refreshUntil.getTime()) throw new AppError(via === 'join' ? 'join_token_expired' : 'session_expired');
    const meeting = await this.#meetings.get(db, session.orgId, session.meetingId);
    assertOpen(meeting);
    // Access is a standing condition: a student removed from the class or an invitation withdrawn ends it too.
    await this.#checkAccess(db, meeting, user, session.role);
    return { session, meeting, user };
  }

  /** The accessToken is good only on its own meeting's routes (by slug, or by organization and meeting id), and only until it expires. */
  assertMeetingRoute(principal: SessionPrincipal, meeting: MeetingRoute): void {
    const own = 'slug' in meeting ? principal.slug === meeting.slug : principal.orgId === meeting.orgId && principal.meetingId === meeting.meetingId;
    if (!own) throw new AppError('session_wrong_meeting');
    if (principal.expired) throw new AppError('access_token_expired');
  }

  /** The caller's session, on its own meeting's route, neither expired nor revoked (the pre-join network check). */
  async assertActive(db: Db, principal: SessionPrincipal, meeting: MeetingRoute): Promise<void> {
    this.assertMeetingRoute(principal, meeting);
    assertNotRevoked(await this.#session(db, principal.sessionId), 'refresh');
  }

  /** The caller's own waiting-room entry, as the waiting-room actor has it. */
  async waitingStatus(db: Db, principal: SessionPrincipal, meeting: MeetingRoute, queueId: string) {
    this.assertMeetingRoute(principal, meeting);
    const session = await this.#session(db, principal.sessionId);
    assertNotRevoked(session, 'refresh'); // a deactivated user's waiting page learns so, and is never let in
    if (session.queueId !== queueId) throw new AppError('not_found', { message: 'No such waiting-room entry for this session.' });
    const entry = await this.#rooms.waitingRoom.status(session.meetingId, { queueId });
    return { queueId, status: entry.status, requestedAt: entry.requestedAt, admittedAt: entry.admittedAt };
  }

  /** After admission: the room token (mediaToken) for the session, on the device that holds it. */
  async roomToken(pool: Db, principal: SessionPrincipal, meeting: MeetingRoute, queueId: string, deviceId: string) {
    const status = await this.waitingStatus(pool, principal, meeting, queueId);
    if (status.status === 'WAITING') throw new AppError('waiting_not_admitted', { details: { queueId } });
    if (status.status === 'DENIED') throw new AppError('waiting_denied');
    if (status.status !== 'ADMITTED') throw new AppError('waiting_expired', { details: { status: status.status } });
    const resolved = await inTx(pool, async (db) => this.#resume(db, await this.#session(db, principal.sessionId), 'refresh'));
    if (resolved.session.deviceId !== deviceId) throw new AppError('session_invalid', { message: 'The room token is issued only to the device that holds the session.' });
    const s = this.#present(resolved, { queueId, status: 'ADMITTED' });
    return { mediaToken: s.mediaToken!, mediaUrl: s.mediaUrl, expiresAt: s.expiresAt, role: s.role, queueId };
  }

  async #session(db: Db, id: string): Promise<SessionRow> {
    const [s] = await db<SessionRow[]>`select * from meeting_sessions where id = ${id}`;
    if (!s) throw new AppError('session_invalid');
    return s;
  }

  async #user(db: Db, orgId: string, userId: string): Promise<UserRow> {
    const [u] = await db<UserRow[]>`select * from users where id = ${userId} and org_id = ${orgId}`;
    if (!u) throw new AppError('not_a_member');
    return u;
  }

  /** The access-list row the policy asks of this user for this meeting, checked as of now. */
  async #checkAccess(db: Db, meeting: MeetingRow, user: UserRow, role: RoomRole): Promise<void> {
    const needs = accessListRow(meeting, user, role);
    if (needs === 'enrollment') {
      const rows = await db`select 1 from enrollments where class_id = ${meeting.classId} and user_id = ${user.id} and status = 'ACTIVE'`;
      if (!rows.length) throw new AppError('not_enrolled', { details: { classId: meeting.classId } });
    }
    if (needs === 'invitation') {
      const rows = await db`select 1 from meeting_invitations where meeting_id = ${meeting.id} and user_id = ${user.id}`;
      if (!rows.length) throw new AppError('not_invited');
    }
  }

  #present({ session, meeting, user }: Resolved, waiting: WaitingView | null): MeetingSession {
    const now = this.#clock.now();
    const exp = Math.min(now + ACCESS_TTL_MS, session.refreshUntil.getTime());
    const claims: AccessClaims = { s: session.id, o: session.orgId, m: meeting.id, g: meeting.slug, u: user.id, e: exp };
    const admitted = !waiting || waiting.status === 'ADMITTED';
    const wsBase = this.#baseUrl().replace(/^http/, 'ws');
    return {
      accessToken: this.#tokens.access.issue(claims),
      tokenType: 'Bearer',
      expiresAt: iso(exp),
      mediaToken: admitted ? this.#tokens.media.issue({ s: session.id, m: meeting.id, u: user.id, r: session.role, e: exp }) : null,
      mediaUrl: `${wsBase}/api/v1/meetings/${meeting.slug}/media`,
      role: session.role,
      waitingRoom: waiting,
      meeting: {
        id: meeting.id,
        kind: meeting.kind,
        slug: meeting.slug,
        title: meeting.title,
        status: meeting.status,
        orgId: meeting.orgId,
        settings: {
          muteOnEntry: meeting.settings.muteOnEntry,
          lectureMode: meeting.settings.lectureMode,
          allowStudentScreenShare: meeting.settings.allowStudentScreenShare,
          chat: meeting.settings.chat,
          privateChatToHosts: meeting.settings.privateChatToHosts,
          recordAutomatically: meeting.settings.recordAutomatically,
        },
      },
      user: { id: user.id, externalId: user.externalId, displayName: session.displayName },
      redirectUrl: session.redirectUrl,
    };
  }
}

