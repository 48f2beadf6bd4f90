import { z } from 'zod';
import { iso, type Clock } from '../clock.ts';
import type { Db } from '../db/index.ts';
import { inTx } from '../db/tx.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { ROOM_ROLES } from './join-links.ts';
import type { MeetingRow, Meetings } from './meetings.ts';
import { emitEvent } from './outbox.ts';
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
  waitingRoom: z.object({ queueId: z.string(), status: z.enum(['WAITING', 'ADMITTED', 'DENIED', 'EXPIRED']) }).nullable(),
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
}

interface WaitingRow {
  id: string;
  status: 'WAITING' | 'ADMITTED' | 'DENIED' | 'EXPIRED';
}

const BEARER = /^Bearer +(\S+)\s*$/i;

/** Join-token exchange, meeting sessions and their refresh. */
export class Sessions {
  readonly #clock: Clock;
  readonly #tokens: Tokens;
  readonly #meetings: Meetings;
  #baseUrl = '';

  constructor(clock: Clock, tokens: Tokens, meetings: Meetings) {
    this.#clock = clock;
    this.#tokens = tokens;
    this.#meetings = meetings;
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
  exchange(pool: Db, token: string, deviceId: string): Promise<MeetingSession> {
    const claims = this.#tokens.join.read(token);
    if (!claims) return Promise.reject(new AppError('join_token_invalid'));
    return inTx(pool, async (db) => {
      const now = this.#clock.now();
      // Reopening a spent single-use link on the device that spent it resumes that session.
      if (claims.s) {
        const [use] = await db<{ deviceId: string; sessionId: string }[]>`select device_id, session_id from join_token_uses where jti = ${claims.j}`;
        if (use) {
          if (use.deviceId !== deviceId) throw new AppError('join_token_used');
          const session = await this.#session(db, use.sessionId);
          return this.#resume(db, session, 'join');
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
      const [session] = await db<SessionRow[]>`insert into meeting_sessions
          (id, org_id, meeting_id, user_id, jti, device_id, role, display_name, redirect_url, created_at, refresh_until)
        values (${sessionId}, ${claims.o}, ${meeting.id}, ${user.id}, ${claims.j}, ${deviceId}, ${claims.r},
          ${claims.n ?? user.fullName}, ${claims.d}, ${iso(now)}, ${iso(now + REFRESH_WINDOW_MS)}) returning *`;
      let waiting: WaitingRow | null = null;
      if (meeting.settings.waitingRoom && claims.r !== 'HOST' && claims.r !== 'COHOST') {
        waiting = await this.#enqueue(db, meeting, session!, user);
      }
      return this.#present(session!, meeting, user, waiting);
    });
  }

  /** A fresh session for up to 24 hours after the exchange, unless revoked, deactivated or ended since. */
  refresh(pool: Db, principal: SessionPrincipal): Promise<MeetingSession> {
    return inTx(pool, async (db) => this.#resume(db, await this.#session(db, principal.sessionId), 'refresh'));
  }

  async #resume(db: Db, session: SessionRow, via: 'join' | 'refresh'): Promise<MeetingSession> {
    const now = this.#clock.now();
    const user = await this.#user(db, session.orgId, session.userId);
    if (session.revokedAt) {
      if (session.revokedReason === 'user_deactivated') throw new AppError(via === 'join' ? 'join_token_revoked' : 'user_deactivated');
      if (session.revokedReason === 'meeting_cancelled') throw new AppError('meeting_ended');
      throw new AppError('session_revoked', { details: { reason: session.revokedReason } });
    }
    if (user.status !== 'ACTIVE') throw new AppError('user_deactivated');
    if (now > session.refreshUntil.getTime()) throw new AppError(via === 'join' ? 'join_token_expired' : 'session_expired');
    const meeting = await this.#meetings.get(db, session.orgId, session.meetingId);
    if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') throw new AppError('meeting_ended', { details: { status: meeting.status } });
    // Access is a standing condition: a student removed from the class or an invitation withdrawn ends it too.
    await this.#checkAccess(db, meeting, user, session.role);
    const [waiting] = await db<WaitingRow[]>`select id, status from waiting_room_entries where session_id = ${session.id}
      order by requested_at desc limit 1`;
    return this.#present(session, meeting, user, waiting ?? null);
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
    const privileged = role === 'HOST' || role === 'COHOST' || user.id === meeting.hostUserId;
    if (meeting.accessMode === 'ENROLLED' && user.role === 'STUDENT' && !privileged) {
      const rows = await db`select 1 from enrollments where class_id = ${meeting.classId} and user_id = ${user.id} and status = 'ACTIVE'`;
      if (!rows.length) throw new AppError('not_enrolled', { details: { classId: meeting.classId } });
    }
    if (meeting.accessMode === 'INVITED' && !privileged) {
      const rows = await db`select 1 from meeting_invitations where meeting_id = ${meeting.id} and user_id = ${user.id}`;
      if (!rows.length) throw new AppError('not_invited');
    }
  }

  async #enqueue(db: Db, meeting: MeetingRow, session: SessionRow, user: UserRow): Promise<WaitingRow> {
    const now = this.#clock.now();
    const [entry] = await db<WaitingRow[]>`insert into waiting_room_entries (id, meeting_id, session_id, user_id, status, requested_at)
      values (${newId('wr', now)}, ${meeting.id}, ${session.id}, ${user.id}, 'WAITING', ${iso(now)}) returning id, status`;
    await emitEvent(db, meeting.orgId, 'participant.waiting', {
      meetingId: meeting.id,
      externalMeetingId: meeting.externalId,
      kind: meeting.kind,
      queueId: entry!.id,
      user: { id: user.id, externalId: user.externalId, name: session.displayName, email: user.email, role: user.role },
      requestedAt: iso(now),
      admittedAt: null,
      admittedBy: null,
    }, now);
    return entry!;
  }

  #present(session: SessionRow, meeting: MeetingRow, user: UserRow, waiting: WaitingRow | null): MeetingSession {
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
      waitingRoom: waiting ? { queueId: waiting.id, status: waiting.status } : null,
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

