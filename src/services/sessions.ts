import { z } from 'zod';
import { iso, type Clock } from '../clock.ts';
import type { Db } from '../db/index.ts';
import { inTx } from '../db/tx.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { ROOM_ROLES } from './join-links.ts';
import { RoomAccess } from '../rooms/access.ts';
import type { MeetingRow, Meetings } from './meetings.ts';
import type { RoomClients } from '../rooms/clients.ts';
import type { AccessClaims, RoomRole, Tokens } from './tokens.ts';
import type { UserRow } from './users.ts';

export const ACCESS_TTL_MS = 60 * 60_000;
export const REFRESH_WINDOW_MS = 24 * 60 * 60_000;

export const exchangeBody = z.strictObject({
  token: z.string().min(1).max(4096),
  deviceId: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').describe('Stable per-device (per-tab) string.'),
});

const settingsShape = z.object({
  muteOnEntry: z.boolean(),
  lectureMode: z.boolean(),
  allowStudentScreenShare: z.boolean(),
  recordAutomatically: z.boolean(),
});

export const meetingSession = z.object({
  accessToken: z.string(),
  tokenType: z.literal('Bearer'),
  expiresAt: z.string(),
  mediaToken: z.string().nullable(),
  mediaUrl: z.string(),
  role: z.enum(ROOM_ROLES),
  waitingRoom: z.object({ queueId: z.string(), status: z.enum(['WAITING', 'ADMITTED', 'DENIED', 'EXPIRED', 'LEFT']) }).nullable(),
  meeting: z.object({
    id: z.string(),
    kind: z.enum(['MEETING', 'CLASS']),
    slug: z.string(),
    title: z.string(),
    status: z.string(),
    orgId: z.string(),
    settings: settingsShape,
  }),
  user: z.object({ id: z.string(), externalId: z.string(), displayName: z.string() }),
  redirectUrl: z.string().nullable(),
});
export type MeetingSession = z.infer<typeof meetingSession>;

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
  status: 'WAITING' | 'ADMITTED' | 'DENIED' | 'EXPIRED' | 'LEFT';
}

interface Resolved {
  session: SessionRow;
  meeting: MeetingRow;
  user: UserRow;
}

const BEARER = /^Bearer +(\S+)\s*$/i;

/** Join-token exchange, meeting sessions and their refresh. */
/** A revoked session is refused with the reason the user should hear. */
function assertNotRevoked(session: SessionRow, via: 'join' | 'refresh'): void {
  if (!session.revokedAt) return;
  if (session.revokedReason === 'user_deactivated') throw new AppError(via === 'join' ? 'join_token_revoked' : 'user_deactivated');
  if (session.revokedReason === 'meeting_cancelled') throw new AppError('meeting_ended');
  throw new AppError('session_revoked', { details: { reason: session.revokedReason } });
}

export class Sessions {
  readonly #clock: Clock;
  readonly #tokens: Tokens;
  readonly #meetings: Meetings;
  readonly #rooms: RoomClients;
  #baseUrl = '';

  constructor(clock: Clock, tokens: Tokens, meetings: Meetings, rooms: RoomClients) {
    this.#clock = clock;
    this.#tokens = tokens;
    this.#meetings = meetings;
    this.#rooms = rooms;
  }

  setBaseUrl(url: string): void {
    this.#baseUrl = url;
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

  /** Exchanges a join token for a meeting session, checking access again as of now. */
  async exchange(pool: Db, token: string, deviceId: string): Promise<MeetingSession> {
    const claims = this.#tokens.join.read(token);
    if (!claims) throw new AppError('join_token_invalid');
    const resolved = await inTx(pool, async (db): Promise<Resolved> => {
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
      if (user.revokedBefore && claims.i <= user.revokedBefore.getTime()) throw new AppError('join_token_revoked');
      if (user.status !== 'ACTIVE') throw new AppError('user_deactivated');
      const meeting = await this.#meetings.get(db, claims.o, claims.m);
      if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') throw new AppError('meeting_ended', { details: { status: meeting.status } });
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
    });
    return this.#present(resolved, await this.#waiting(resolved));
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
    if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') throw new AppError('meeting_ended', { details: { status: meeting.status } });
    // Access is a standing condition: a student removed from the class or an invitation withdrawn ends it too.
    await this.#checkAccess(db, meeting, user, session.role);
    return { session, meeting, user };
  }

  /** The accessToken is good only on its own meeting's routes, and only until it expires. */
  assertMeetingRoute(principal: SessionPrincipal, slug: string): void {
    if (principal.slug !== slug) throw new AppError('session_wrong_meeting');
    if (principal.expired) throw new AppError('access_token_expired');
  }

  /** The caller's own waiting-room entry, as the waiting-room actor has it. */
  async waitingStatus(db: Db, principal: SessionPrincipal, slug: string, queueId: string) {
    this.assertMeetingRoute(principal, slug);
    const session = await this.#session(db, principal.sessionId);
    assertNotRevoked(session, 'refresh'); // a deactivated user's waiting page learns so, and is never let in
    if (session.queueId !== queueId) throw new AppError('not_found', { message: 'No such waiting-room entry for this session.' });
    const entry = await this.#rooms.waitingRoom.status(session.meetingId, { queueId });
    return { queueId, status: entry.status, requestedAt: entry.requestedAt, admittedAt: entry.admittedAt };
  }

  /** After admission: the room token (mediaToken) for the session, on the device that holds it. */
  async roomToken(pool: Db, principal: SessionPrincipal, slug: string, queueId: string, deviceId: string) {
    const status = await this.waitingStatus(pool, principal, slug, queueId);
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

  /** ENROLLED: students need an active enrollment; INVITED: everyone but the host and host-role links needs an invitation. */
  async #checkAccess(db: Db, meeting: MeetingRow, user: UserRow, role: RoomRole): Promise<void> {
    const privileged = RoomAccess.bypassesAccessList(role, user.id, meeting.hostUserId);
    if (meeting.accessMode === 'ENROLLED' && user.role === 'STUDENT' && !privileged) {
      const rows = await db`select 1 from enrollments where class_id = ${meeting.classId} and user_id = ${user.id} and status = 'ACTIVE'`;
      if (!rows.length) throw new AppError('not_enrolled', { details: { classId: meeting.classId } });
    }
    if (meeting.accessMode === 'INVITED' && !privileged) {
      const rows = await db`select 1 from meeting_invitations where meeting_id = ${meeting.id} and user_id = ${user.id}`;
      if (!rows.length) throw new AppError('not_invited');
    }
  }

  #present({ session, meeting, user }: Resolved, waiting: WaitingView | null): MeetingSession {
    const now = this.#clock.now();
    const exp = Math.min(now + ACCESS_TTL_MS, session.refreshUntil.getTime());
    const claims: AccessClaims = { s: session.id, o: session.orgId, m: meeting.id, g: meeting.slug, u: user.id, e: exp };
    const admitted = !waiting || waiting.status === 'ADMITTED';
    const wsBase = this.#baseUrl.replace(/^http/, 'ws');
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
          recordAutomatically: meeting.settings.recordAutomatically,
        },
      },
      user: { id: user.id, externalId: user.externalId, displayName: session.displayName },
      redirectUrl: session.redirectUrl,
    };
  }
}

