import type { AnyStateMachine } from 'xstate';
import type { z } from 'zod';
import { MEETING_MACHINE_VERSION, meetingMachine } from '../../actors/meeting/meeting.machine.ts';
import { meetingEvent } from '../../actors/meeting/meeting.schemas.ts';
import type { MeetingContext } from '../../actors/meeting/meeting.types.ts';
import { WAITING_ROOM_MACHINE_VERSION, waitingRoomMachine } from '../../actors/waiting-room/waiting-room.machine.ts';
import { waitingRoomEvent } from '../../actors/waiting-room/waiting-room.schemas.ts';
import type { Db } from '../db/index.ts';
import { PLANS, type PlanName } from '../plans.ts';
import type { MeetingRow } from '../services/meetings.ts';
import { toMeetingRecord } from '../services/meetings.ts';
import { iso } from '../clock.ts';

/** What the host needs to know about one kind of actor. Actor ids are `<kind>:<entityId>`. */
export interface ActorKind {
  kind: string;
  version: number;
  machine: AnyStateMachine;
  events: z.ZodType;
  /** Input for a fresh actor from the database, or null when the entity does not exist. */
  input(db: Db, entityId: string): Promise<Record<string, unknown> | null>;
  /** The organization whose outbox receives this actor's events. */
  orgOf(context: Record<string, unknown>): string;
  /** Sent to a fresh actor before anything else. */
  init?: (at: number) => Record<string, unknown>;
  /** Writes the actor's state back to its domain row, in the snapshot's transaction. */
  project?(tx: Db, entityId: string, context: Record<string, unknown>): Promise<void>;
  /** Events for other actors once a transition has committed (e.g. the waiting room hears the meeting ended). */
  followUps?(entityId: string, before: Record<string, unknown>, after: Record<string, unknown>): { actorId: string; event: Record<string, unknown> }[];
}

async function meetingRow(db: Db, meetingId: string): Promise<(MeetingRow & { plan: PlanName }) | null> {
  const [row] = await db<(MeetingRow & { plan: PlanName })[]>`select m.*, c.external_id as external_class_id, c.course_id, o.plan
    from meetings m join organizations o on o.id = m.org_id left join classes c on c.id = m.class_id where m.id = ${meetingId}`;
  return row ?? null;
}

export const meetingKind: ActorKind = {
  kind: 'meeting',
  version: MEETING_MACHINE_VERSION,
  machine: meetingMachine,
  events: meetingEvent,
  async input(db, meetingId) {
    const m = await meetingRow(db, meetingId);
    if (!m) return null;
    const r = toMeetingRecord(m);
    return {
      meetingId: m.id,
      orgId: m.orgId,
      externalMeetingId: m.externalId,
      kind: m.kind,
      title: m.title,
      type: r.type,
      slug: m.slug,
      hostUserId: m.hostUserId,
      classId: m.classId,
      externalClassId: m.externalClassId,
      courseId: m.courseId,
      batchId: m.batchId,
      scheduledStart: r.scheduledStart,
      scheduledEnd: r.scheduledEnd,
      settings: m.settings,
      planMaxMinutes: PLANS[m.plan].maxMeetingMinutes,
      status: m.status,
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      endedReason: m.endedReason,
      notBefore: r.updatedAt,
    };
  },
  orgOf: (c) => (c as unknown as MeetingContext).meeting.orgId,
  init: (at) => ({ type: 'INIT', at }),
  async project(tx, meetingId, context) {
    const c = context as unknown as MeetingContext;
    const ts = (v: number | null) => (v === null ? null : iso(v));
    await tx`update meetings set status = ${c.status}, started_at = ${ts(c.startedAt)}, ended_at = ${ts(c.endedAt)},
        ended_reason = ${c.endedReason}, cancelled_at = ${ts(c.cancelledAt)}, updated_at = now()
      where id = ${meetingId} and (status, started_at, ended_at, ended_reason, cancelled_at)
        is distinct from (${c.status}, ${ts(c.startedAt)}::timestamptz, ${ts(c.endedAt)}::timestamptz, ${c.endedReason}, ${ts(c.cancelledAt)}::timestamptz)`;
    if (c.removedSessions.length) {
      // A removed participant's session can no longer be refreshed or reconnect.
      await tx`update meeting_sessions set revoked_at = now(), revoked_reason = 'removed'
        where id in ${tx(c.removedSessions)} and revoked_at is null`;
    }
    if (c.status === 'CANCELLED') {
      await tx`update meeting_sessions set revoked_at = now(), revoked_reason = 'meeting_cancelled' where meeting_id = ${meetingId} and revoked_at is null`;
    }
  },
  followUps(meetingId, before, after) {
    const was = (before as unknown as MeetingContext).status;
    const now = (after as unknown as MeetingContext).status;
    const closed = (s: string) => s === 'ENDED' || s === 'CANCELLED';
    return closed(now) && !closed(was) ? [{ actorId: waitingRoomActor(meetingId), event: { type: 'MEETING_ENDED' } }] : [];
  },
};

export const waitingRoomKind: ActorKind = {
  kind: 'waiting-room',
  version: WAITING_ROOM_MACHINE_VERSION,
  machine: waitingRoomMachine,
  events: waitingRoomEvent,
  async input(db, meetingId) {
    const m = await meetingRow(db, meetingId);
    if (!m) return null;
    return { meetingId: m.id, orgId: m.orgId, externalMeetingId: m.externalId, kind: m.kind };
  },
  orgOf: (c) => (c as { meeting: { orgId: string } }).meeting.orgId,
};

export const ACTOR_KINDS: ActorKind[] = [meetingKind, waitingRoomKind];

export const meetingActor = (meetingId: string) => `meeting:${meetingId}`;
export const waitingRoomActor = (meetingId: string) => `waiting-room:${meetingId}`;
