import { isDeepStrictEqual } from 'node:util';
import { meetingData } from '../../actors/meeting/meeting.views.ts';
import type { MeetingEventData, MeetingFacts } from '../../actors/meeting/meeting.types.ts';
import type { EndedReason, MeetingStatus } from '../core/domain.ts';
import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Db } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { AppError, invalidField } from '../core/errors.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import { newId, newSlug } from '../platform/ids.ts';
import { decodeCursor, encodeCursor, ts, type PageQuery } from './common.ts';
import type { EventType, Outbox } from '../platform/outbox.ts';
import type { UserRow, Users } from './users.ts';
import type { Classes } from './classes.ts';
import type { RoomClients } from './live/clients.ts';

/** How far in the past a meeting may be scheduled (a start of "now" sent a little late still goes through). */
export const SCHEDULE_GRACE_MS = 5 * 60_000;
export const ACCESS_MODES = ['ORG_MEMBERS', 'ENROLLED', 'INVITED'] as const;

export type AccessMode = (typeof ACCESS_MODES)[number];
import { MEETING_KINDS, type MeetingKind } from '../core/room.ts';
import { CHAT_DEFAULTS, type ChatMode } from '../core/chat.ts';

/** A meeting's settings, every one decided (the defaults of its kind where it was created without them). */
export type MeetingSettings = {
  waitingRoom: boolean;
  muteOnEntry: boolean;
  recordAutomatically: boolean;
  lectureMode: boolean;
  allowStudentScreenShare: boolean;
  /** The room's chat (src/core/chat.ts): who writes to the room, and whether students may write privately to the hosts. */
  chat: ChatMode;
  privateChatToHosts: boolean;
  /** At most this many people in the room at once (hosts included; they still get in); null: the plan's cap. */
  maxParticipants: number | null;
}; // a type, not an interface: it is stored as JSON

/** A meeting as the API creates it: a CLASS needs its class; ENROLLED access needs a CLASS. */
export interface MeetingCreate {
  externalId?: string | undefined;
  title: string;
  type: MeetingKind;
  classId?: string | undefined;
  batchId?: string | undefined;
  hostUserId: string;
  scheduledStart: string;
  durationMinutes: number;
  slug?: string | undefined;
  settings?: Partial<MeetingSettings> | undefined;
  access?: { mode: AccessMode } | undefined;
}

/** The fields a meeting update changes (at least one); only the settings given change. */
export interface MeetingUpdate {
  title?: string | undefined;
  hostUserId?: string | undefined;
  scheduledStart?: string | undefined;
  durationMinutes?: number | undefined;
  settings?: Partial<MeetingSettings> | undefined;
  access?: { mode: AccessMode } | undefined;
}

export interface MeetingListQuery extends PageQuery {
  status?: MeetingStatus | undefined;
  classId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  externalId?: string | undefined;
  /** Meetings this user (service id or externalId) hosts or was in. */
  userId?: string | undefined;
}

/** A meeting as the API shows it. */
export interface MeetingRecord {
  id: string;
  externalId: string | null;
  slug: string;
  kind: MeetingKind;
  type: MeetingKind;
  title: string;
  status: MeetingStatus;
  hostUserId: string;
  classId: string | null;
  externalClassId: string | null;
  courseId: string | null;
  batchId: string | null;
  scheduledStart: string;
  scheduledEnd: string;
  durationMinutes: number;
  settings: MeetingSettings;
  access: { mode: AccessMode };
  startedAt: string | null;
  endedAt: string | null;
  durationSeconds: number | null;
  endedReason: EndedReason | null;
  cancelledAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface MeetingRow {
  id: string;
  orgId: string;
  externalId: string | null;
  slug: string;
  kind: MeetingKind;
  title: string;
  classId: string | null;
  batchId: string | null;
  hostUserId: string;
  scheduledStart: Date;
  durationMinutes: number;
  settings: MeetingSettings;
  accessMode: AccessMode;
  status: MeetingStatus;
  startedAt: Date | null;
  endedAt: Date | null;
  endedReason: EndedReason | null;
  cancelledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** The room's actor locked it, or it is full: the exchange refuses newcomers (hosts and cohosts get in). */
  locked: boolean;
  atCapacity: boolean;
  // joined from classes
  externalClassId: string | null;
  courseId: string | null;
  /** The row's version (Postgres's xmin, changed by every update) where it was read by `get`. */
  rowVersion?: string;
}

export const toMeetingRecord = (m: MeetingRow): MeetingRecord => ({
  id: m.id,
  externalId: m.externalId,
  slug: m.slug,
  kind: m.kind,
  type: m.kind,
  title: m.title,
  status: m.status,
  hostUserId: m.hostUserId,
  classId: m.classId,
  externalClassId: m.externalClassId,
  courseId: m.courseId,
  batchId: m.batchId,
  scheduledStart: m.scheduledStart.toISOString(),
  scheduledEnd: new Date(m.scheduledStart.getTime() + m.durationMinutes * 60_000).toISOString(),
  durationMinutes: m.durationMinutes,
  settings: settingsOf(m),
  access: { mode: m.accessMode },
  startedAt: ts(m.startedAt),
  endedAt: ts(m.endedAt),
  durationSeconds: m.startedAt && m.endedAt ? Math.round((m.endedAt.getTime() - m.startedAt.getTime()) / 1000) : null,
  endedReason: m.endedReason,
  cancelledAt: ts(m.cancelledAt),
  createdAt: m.createdAt.toISOString(),
  updatedAt: m.updatedAt.toISOString(),
});

/** What the meeting actor knows of its meeting (its input; the identity part of meeting.* events), from the row. */
export function meetingFacts(m: MeetingRow): MeetingFacts {
  const r = toMeetingRecord(m);
  return {
    meetingId: m.id,
    orgId: m.orgId,
    externalMeetingId: m.externalId,
    kind: m.kind,
    title: m.title,
    // meeting.* event payloads name a class session's type CLASSROOM, as the spec's payloads do
    type: m.kind === 'CLASS' ? 'CLASSROOM' : 'MEETING',
    slug: m.slug,
    hostUserId: m.hostUserId,
    classId: m.classId,
    externalClassId: m.externalClassId,
    courseId: m.courseId,
    batchId: m.batchId,
    scheduledStart: r.scheduledStart,
    scheduledEnd: r.scheduledEnd,
  };
}

/** The data of meeting.* events, by the same rule the meeting actor uses (`meetingData`). */
export function meetingEventData(m: MeetingRow): MeetingEventData {
  return meetingData({
    meeting: meetingFacts(m),
    status: m.status,
    startedAt: m.startedAt?.getTime() ?? null,
    endedAt: m.endedAt?.getTime() ?? null,
    endedReason: m.endedReason,
  });
}

const defaults = (kind: MeetingKind, s: Partial<MeetingSettings> = {}): MeetingSettings => ({
  waitingRoom: s.waitingRoom ?? false,
  muteOnEntry: s.muteOnEntry ?? false,
  recordAutomatically: s.recordAutomatically ?? false,
  lectureMode: s.lectureMode ?? false,
  allowStudentScreenShare: s.allowStudentScreenShare ?? kind === 'MEETING',
  chat: s.chat ?? CHAT_DEFAULTS.chat,
  privateChatToHosts: s.privateChatToHosts ?? CHAT_DEFAULTS.privateChatToHosts,
  maxParticipants: s.maxParticipants ?? null,
});

/** Settings as stored, completed for rows written before a setting existed. */
export const settingsOf = (m: Pick<MeetingRow, 'kind' | 'settings'>): MeetingSettings => defaults(m.kind, m.settings);

/** How many of an organization's meetings are live, against its plan's limit. */
export interface LiveLoad {
  live: number;
  limit: number;
  plan: PlanName;
  full: boolean;
}

/** How long an exchange may trust a count of an organization's live meetings. */
const LIVE_LOAD_TTL_MS = 2_000;

/** A meeting of the organization by its id or external id, as the API reads it (meeting_not_found if none). */
export async function readMeeting(db: Db, orgId: string, idOrExternal: string, forUpdate = false): Promise<MeetingRow> {
  const rows = await db<MeetingRow[]>`select m.*, m.xmin::text as row_version, c.external_id as external_class_id, c.course_id
    from meetings m left join classes c on c.id = m.class_id
    where m.org_id = ${orgId} and (m.id = ${idOrExternal} or m.external_id = ${idOrExternal})
    order by (m.id = ${idOrExternal}) desc limit 1 ${forUpdate ? db`for update of m` : db``}`;
  if (!rows[0]) throw new AppError('meeting_not_found', { details: { id: idOrExternal } });
  return rows[0];
}

export class Meetings {
  readonly #clock: Clock;
  readonly #bus: Bus;
  readonly #users: Users;
  readonly #classes: Classes;
  readonly #cache: TtlCache<MeetingRow>;
  /** Live meetings per organization, for the exchanges of meetings not yet live (a room join counts afresh). */
  readonly #liveLoads: TtlCache<LiveLoad>;
  readonly #rooms: RoomClients;

  readonly #outbox: Outbox;

  constructor(clock: Clock, bus: Bus, outbox: Outbox, users: Users, classes: Classes, rooms: RoomClients) {
    this.#outbox = outbox;
    this.#clock = clock;
    this.#bus = bus;
    this.#users = users;
    this.#classes = classes;
    this.#rooms = rooms;
    this.#cache = new TtlCache(clock, 30_000);
    this.#liveLoads = new TtlCache(clock, LIVE_LOAD_TTL_MS);
    bus.subscribe('meetings', (m) => {
      for (const k of (m.keys as string[] | undefined) ?? []) this.#cache.delete(k);
      for (const id of (m.meetingIds as string[] | undefined) ?? []) this.#cache.deleteWhere((row) => row.id === id);
      // a meeting of the organization went live or ended: its count of live meetings changed
      if (typeof m.orgId === 'string') this.#liveLoads.delete(m.orgId);
    });
  }

  #invalidate(db: Db, m: MeetingRow): void {
    const keys = [`${m.orgId}:${m.id}`, `slug:${m.slug}`];
    if (m.externalId) keys.push(`${m.orgId}:${m.externalId}`);
    afterCommit(db, () => this.#bus.publish('meetings', { keys }));
  }

  async #emit(db: Db, type: EventType, m: MeetingRow): Promise<void> {
    await this.#outbox.emit(db, m.orgId, type, meetingEventData(m), this.#clock.now());
  }

  /**
   * The rules a schedule must keep beyond its schema: a start no more than SCHEDULE_GRACE_MS in the
   * past (on the server's clock), a duration within the organization's plan, a host who is not a STUDENT.
   */
  async #checkSchedule(db: Db, orgId: string, s: { scheduledStart?: string | Date; durationMinutes?: number; host?: UserRow; maxParticipants?: number | null | undefined }): Promise<void> {
    if (s.scheduledStart !== undefined && new Date(s.scheduledStart).getTime() < this.#clock.now() - SCHEDULE_GRACE_MS) {
      throw invalidField('scheduledStart', `scheduledStart may not be more than ${SCHEDULE_GRACE_MS / 60_000} minutes in the past.`);
    }
    if (s.durationMinutes !== undefined || (s.maxParticipants ?? null) !== null) {
      const [org] = await db<{ plan: PlanName }[]>`select plan from organizations where id = ${orgId}`;
      const plan = PLANS[org!.plan];
      if (s.durationMinutes !== undefined && s.durationMinutes > plan.maxMeetingMinutes) {
        throw invalidField('durationMinutes', `durationMinutes may be at most ${plan.maxMeetingMinutes} on the ${org!.plan} plan.`, { limit: plan.maxMeetingMinutes, plan: org!.plan });
      }
      if (s.maxParticipants != null && s.maxParticipants > plan.maxParticipants) {
        throw invalidField('settings.maxParticipants', `maxParticipants may be at most ${plan.maxParticipants} on the ${org!.plan} plan.`, { limit: plan.maxParticipants, plan: org!.plan });
      }
    }
    if (s.host?.role === 'STUDENT') throw invalidField('hostUserId', 'A STUDENT cannot host a meeting.', { userId: s.host.id, role: s.host.role });
  }

  create(pool: Db, orgId: string, input: MeetingCreate): Promise<MeetingRow> {
    return inTx(pool, async (db) => {
      const host = await this.#users.get(db, orgId, input.hostUserId);
      if (host.status !== 'ACTIVE') throw new AppError('user_deactivated', { message: 'The host user is deactivated.', details: { hostUserId: host.id } });
      await this.#checkSchedule(db, orgId, { scheduledStart: input.scheduledStart, durationMinutes: input.durationMinutes, host, maxParticipants: input.settings?.maxParticipants });
      const cls = input.classId ? await this.#classes.get(db, orgId, input.classId) : null;
      if (input.externalId) {
        const [dupe] = await db<{ id: string }[]>`select id from meetings where org_id = ${orgId} and external_id = ${input.externalId}`;
        if (dupe) throw new AppError('meeting_exists', { details: { meetingId: dupe.id, externalId: input.externalId } });
      }
      const now = iso(this.#clock.now());
      const id = newId('mtg');
      for (let attempt = 0; ; attempt++) {
        const s = input.slug ?? newSlug();
        const rows = await db`insert into meetings (id, org_id, external_id, slug, kind, title, class_id, batch_id, host_user_id,
            scheduled_start, duration_minutes, settings, access_mode, status, created_at, updated_at)
          values (${id}, ${orgId}, ${input.externalId ?? null}, ${s}, ${input.type}, ${input.title}, ${cls?.id ?? null},
            ${input.batchId ?? null}, ${host.id}, ${input.scheduledStart}, ${input.durationMinutes},
            ${db.json(defaults(input.type, input.settings))}, ${input.access?.mode ?? 'ORG_MEMBERS'}, 'SCHEDULED', ${now}, ${now})
          on conflict (slug) do nothing returning id`;
        if (rows.length) break;
        if (input.slug) throw new AppError('slug_taken', { details: { slug: input.slug } });
        if (attempt > 5) throw new Error('could not allocate a meeting slug');
      }
      const m = await this.get(db, orgId, id);
      await this.#emit(db, 'meeting.created', m);
      // The meeting's actor arms its deadlines (a scheduled meeting nobody starts) from the committed row.
      afterCommit(db, () => this.#rooms.meeting.send(id, 'INIT'));
      return m;
    });
  }

  get(db: Db, orgId: string, idOrExternal: string, forUpdate = false): Promise<MeetingRow> {
    return readMeeting(db, orgId, idOrExternal, forUpdate);
  }

  /**
   * How many of the organization's meetings are live, against its plan's limit. `cached`: as read at
   * most LIVE_LOAD_TTL_MS ago (the exchange's fast path, which falls back to `fresh` when it says full).
   */
  async liveLoad(db: Db, orgId: string, read: 'cached' | 'fresh'): Promise<LiveLoad> {
    const hit = read === 'cached' ? this.#liveLoads.get(orgId) : undefined;
    if (hit) return hit;
    const [row] = await db<{ plan: PlanName; live: number }[]>`select o.plan, (select count(*)::int from meetings m where m.org_id = o.id and m.status = 'LIVE') as live
      from organizations o where o.id = ${orgId}`;
    const limit = PLANS[row!.plan].maxLiveMeetings;
    const load = { live: row!.live, limit, plan: row!.plan, full: row!.live >= limit };
    this.#liveLoads.set(orgId, load);
    return load;
  }

  async getCached(db: Db, orgId: string, idOrExternal: string): Promise<MeetingRow> {
    const key = `${orgId}:${idOrExternal}`;
    const hit = this.#cache.get(key);
    if (hit) return hit;
    const m = await this.get(db, orgId, idOrExternal);
    this.#cache.set(key, m);
    return m;
  }

  /** Drops a cached row found stale; the next `getCached` reads it again. */
  forgetCached(m: MeetingRow): void {
    this.#cache.delete(`${m.orgId}:${m.id}`);
    if (m.externalId) this.#cache.delete(`${m.orgId}:${m.externalId}`);
  }

  async getBySlug(db: Db, slug: string): Promise<MeetingRow | null> {
    const rows = await db<MeetingRow[]>`select m.*, c.external_id as external_class_id, c.course_id
      from meetings m left join classes c on c.id = m.class_id where m.slug = ${slug}`;
    return rows[0] ?? null;
  }

  async list(db: Db, orgId: string, q: MeetingListQuery): Promise<{ items: MeetingRow[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'time', 'id');
    const classId = q.classId ? (await this.#classes.get(db, orgId, q.classId)).id : null;
    const userId = q.userId ? (await this.#users.get(db, orgId, q.userId)).id : null;
    const rows = await db<MeetingRow[]>`select m.*, c.external_id as external_class_id, c.course_id
      from meetings m left join classes c on c.id = m.class_id
      where m.org_id = ${orgId}
      ${q.status ? db`and m.status = ${q.status}` : db``}
      ${classId ? db`and m.class_id = ${classId}` : db``}
      ${q.from ? db`and m.scheduled_start >= ${q.from}` : db``}
      ${q.to ? db`and m.scheduled_start < ${q.to}` : db``}
      ${q.externalId ? db`and m.external_id = ${q.externalId}` : db``}
      ${userId ? db`and (m.host_user_id = ${userId} or exists (select 1 from attendance_intervals a where a.meeting_id = m.id and a.user_id = ${userId}))` : db``}
      ${after ? db`and (m.scheduled_start, m.id) > (${after[0]!}::timestamptz, ${after[1]!})` : db``}
      order by m.scheduled_start, m.id limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    const last = items.at(-1);
    return { items, nextCursor: rows.length > q.limit && last ? encodeCursor([last.scheduledStart.toISOString(), last.id]) : null };
  }

  update(pool: Db, orgId: string, idOrExternal: string, patch: MeetingUpdate): Promise<MeetingRow> {
    return inTx(pool, async (db) => {
      const m = await this.get(db, orgId, idOrExternal, true);
      if (m.status === 'ENDED' || m.status === 'CANCELLED') {
        throw new AppError('invalid_state', { message: `A meeting that is ${m.status} cannot be changed.`, details: { status: m.status } });
      }
      if (m.status === 'LIVE' && (patch.scheduledStart || patch.access)) {
        throw new AppError('invalid_state', { message: 'The schedule and access mode of a LIVE meeting cannot be changed.', details: { status: m.status } });
      }
      if (patch.access?.mode === 'ENROLLED' && m.kind !== 'CLASS') {
        throw new AppError('validation_failed', { details: { fields: [{ field: 'access.mode', in: 'body', code: 'custom', message: 'ENROLLED needs type CLASS' }] } });
      }
      const host = patch.hostUserId ? await this.#users.get(db, orgId, patch.hostUserId) : null;
      if (host && host.status !== 'ACTIVE') throw new AppError('user_deactivated', { message: 'The host user is deactivated.' });
      await this.#checkSchedule(db, orgId, {
        ...(patch.scheduledStart !== undefined ? { scheduledStart: patch.scheduledStart } : {}),
        ...(patch.durationMinutes !== undefined ? { durationMinutes: patch.durationMinutes } : {}),
        ...(host ? { host } : {}),
        maxParticipants: patch.settings?.maxParticipants,
      });
      const next = {
        title: patch.title ?? m.title,
        hostUserId: host?.id ?? m.hostUserId,
        scheduledStart: patch.scheduledStart ? new Date(patch.scheduledStart) : m.scheduledStart,
        durationMinutes: patch.durationMinutes ?? m.durationMinutes,
        settings: { ...settingsOf(m), ...patch.settings },
        accessMode: patch.access?.mode ?? m.accessMode,
      };
      const changed =
        next.title !== m.title ||
        next.hostUserId !== m.hostUserId ||
        next.scheduledStart.getTime() !== m.scheduledStart.getTime() ||
        next.durationMinutes !== m.durationMinutes ||
        !isDeepStrictEqual(next.settings, settingsOf(m)) ||
        next.accessMode !== m.accessMode;
      if (!changed) return m;
      await db`update meetings set title = ${next.title}, host_user_id = ${next.hostUserId},
        scheduled_start = ${next.scheduledStart.toISOString()}, duration_minutes = ${next.durationMinutes},
        settings = ${db.json(next.settings)}, access_mode = ${next.accessMode}, updated_at = ${iso(this.#clock.now())}
        where id = ${m.id}`;
      const updated = await this.get(db, orgId, m.id);
      await this.#emit(db, 'meeting.updated', updated);
      this.#invalidate(db, updated);
      const r = toMeetingRecord(updated);
      afterCommit(db, () =>
        this.#rooms.meeting.send(m.id, 'UPDATE', {
          title: r.title,
          hostUserId: r.hostUserId,
          scheduledStart: r.scheduledStart,
          scheduledEnd: r.scheduledEnd,
          settings: r.settings,
          maxParticipants: r.settings.maxParticipants,
          notBefore: r.updatedAt,
        }),
      );
      return updated;
    });
  }

  /**
   * SCHEDULED to CANCELLED (meeting.cancelled, sessions revoked). The meeting's actor owns its status,
   * so this asks the actor; cancelling again is a no-op, and a LIVE meeting must be ended instead.
   */
  async cancel(db: Db, orgId: string, idOrExternal: string): Promise<MeetingRow> {
    return this.#command(db, orgId, idOrExternal, (id) => this.#rooms.meeting.cancel(id));
  }

  /** LIVE to ENDED with HOST_ENDED (meeting.ended), through the actor; ending again is a no-op, a SCHEDULED meeting is cancelled instead. */
  async end(db: Db, orgId: string, idOrExternal: string): Promise<MeetingRow> {
    return this.#command(db, orgId, idOrExternal, (id) => this.#rooms.meeting.end(id, { byApi: true }));
  }

  async #command(db: Db, orgId: string, idOrExternal: string, ask: (meetingId: string) => Promise<unknown>): Promise<MeetingRow> {
    const m = await this.get(db, orgId, idOrExternal);
    await ask(m.id);
    const fresh = await this.get(db, orgId, m.id);
    this.#invalidate(db, fresh);
    return fresh;
  }
}
