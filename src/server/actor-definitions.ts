import { afterCommit } from '../platform/db/tx.ts';
import { Recordings } from '../services/recordings.ts';
import { isDeepStrictEqual } from 'node:util';
import { forgetsHistory, MEETING_MACHINE_VERSION, meetingMachine, occupancy } from '../../actors/meeting/meeting.machine.ts';
import { meetingEvent } from '../../actors/meeting/meeting.schemas.ts';
import type { MeetingContext, MeetingEffect, MeetingInput } from '../../actors/meeting/meeting.types.ts';
import { Polls } from '../services/polls.ts';
import { Questions } from '../services/questions.ts';
import { Attendance, attendanceRules, type AttendanceRules } from '../services/attendance.ts';
import { WAITING_ROOM_MACHINE_VERSION, waitingRoomMachine } from '../../actors/waiting-room/waiting-room.machine.ts';
import { waitingRoomEvent } from '../../actors/waiting-room/waiting-room.schemas.ts';
import type { Db } from '../platform/db/index.ts';
import { defineActor, type ActorDefinition } from '../platform/runtime/actor-runtime.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import type { MeetingRow } from '../services/meetings.ts';
import { meetingFacts, settingsOf, toMeetingRecord } from '../services/meetings.ts';
import { iso } from '../core/clock.ts';
import { waitingRoomActor } from '../platform/runtime/actor-ids.ts';
import { WEBHOOK_ENDPOINT_MACHINE_VERSION, webhookEndpointMachine } from '../../actors/webhook-endpoint/webhook-endpoint.machine.ts';
import { webhookEndpointEvent } from '../../actors/webhook-endpoint/webhook-endpoint.schemas.ts';
import type { WebhookEndpointContext, WebhookEndpointEffect, WebhookEndpointInput } from '../../actors/webhook-endpoint/webhook-endpoint.types.ts';
import type { EntryView, WaitingRoomContext, WaitingRoomEffect, WaitingRoomInput } from '../../actors/waiting-room/waiting-room.types.ts';
import { meetingAnswerOf, waitingEntryAnswer } from '../services/live/command-answers.ts';
import type { MaintenanceContext, MaintenanceEffect, MaintenanceInput } from '../../actors/maintenance/maintenance.types.ts';
import { notifyEndpointDisabled } from '../services/notifications/notify.ts';
import { MAINTENANCE_MACHINE_VERSION, maintenanceMachine } from '../../actors/maintenance/maintenance.machine.ts';
import { maintenanceEvent } from '../../actors/maintenance/maintenance.schemas.ts';
import { purgeExpired } from '../services/retention.ts';

/** What the meetings row says of a room's admission: locked by a host, or holding as many as it allows (live rooms only). */
function admission(c: MeetingContext): { locked: boolean; full: boolean } {
  if (c.status !== 'LIVE') return { locked: false, full: false };
  const { locked, full } = occupancy(c);
  return { locked, full };
}

type MeetingActorRow = MeetingRow & { plan: PlanName; attendanceRules: Partial<AttendanceRules> | null };

async function meetingRow(db: Db, meetingId: string): Promise<MeetingActorRow | null> {
  const [row] = await db<MeetingActorRow[]>`select m.*, c.external_id as external_class_id, c.course_id, o.plan, o.attendance_rules
    from meetings m join organizations o on o.id = m.org_id left join classes c on c.id = m.class_id where m.id = ${meetingId}`;
  return row ?? null;
}

/** What a node's configuration gives its actors. */
export interface ActorSettings {
  /** AULA_ROOM_GRACE_SECONDS: how long a dropped participant keeps their place and media. */
  roomGraceSeconds: number;
  /** After each hourly purge commits: recordings past their organization's retention are deleted (with their files). */
  recordingRetention?: (at: number) => Promise<unknown>;
}

const meetingDefinition = (settings: ActorSettings) => defineActor<MeetingContext, MeetingEffect, MeetingInput>({
  name: 'meeting',
  version: MEETING_MACHINE_VERSION,
  machine: meetingMachine,
  events: meetingEvent,
  async input(db, meetingId) {
    const m = await meetingRow(db, meetingId);
    if (!m) return null;
    const r = toMeetingRecord(m);
    return {
      ...meetingFacts(m),
      settings: m.settings,
      planMaxMinutes: PLANS[m.plan].maxMeetingMinutes,
      status: m.status,
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      endedReason: m.endedReason,
      notBefore: r.updatedAt,
      attendanceSettleMinutes: attendanceRules(m.attendanceRules).settleMinutes,
      maxParticipants: settingsOf(m).maxParticipants,
      planMaxParticipants: PLANS[m.plan].maxParticipants,
      reconnectGraceSeconds: settings.roomGraceSeconds,
    };
  },
  orgOf: (c) => c.meeting.orgId,
  init: (at) => ({ type: 'INIT', at }),
  compact: (event, before, after) => forgetsHistory(event as { type: string }, before, after),
  async project(tx, meetingId, c, at) {
    const ts = (v: number | null) => (v === null ? null : iso(v));
    const { locked, full } = admission(c);
    await tx`update meetings set status = ${c.status}, started_at = ${ts(c.startedAt)}, ended_at = ${ts(c.endedAt)},
        ended_reason = ${c.endedReason}, cancelled_at = ${ts(c.cancelledAt)}, locked = ${locked}, at_capacity = ${full}, updated_at = ${iso(at)}
      where id = ${meetingId} and (status, started_at, ended_at, ended_reason, cancelled_at, locked, at_capacity)
        is distinct from (${c.status}, ${ts(c.startedAt)}::timestamptz, ${ts(c.endedAt)}::timestamptz, ${c.endedReason}, ${ts(c.cancelledAt)}::timestamptz, ${locked}, ${full})`;
    if (c.removedSessions.length) {
      // A removed participant's session can no longer be refreshed or reconnect.
      await tx`update meeting_sessions set revoked_at = ${iso(at)}, revoked_reason = 'removed'
        where id in ${tx(c.removedSessions)} and revoked_at is null`;
    }
    if (c.status === 'CANCELLED') {
      await tx`update meeting_sessions set revoked_at = ${iso(at)}, revoked_reason = 'meeting_cancelled' where meeting_id = ${meetingId} and revoked_at is null`;
    }
  },
  async effect(tx, meetingId, context, effect, at, env) {
    const orgId = context.meeting.orgId;
    if (effect.type === 'attendance') await Attendance.recordStay(tx, orgId, meetingId, effect, at);
    else if (effect.type === 'attendance.finalize') await Attendance.finalize(tx, env.outbox, meetingId, at);
    else if (effect.type === 'poll') await Polls.record(tx, orgId, meetingId, effect.poll);
    else if (effect.type === 'question') await Questions.record(tx, orgId, meetingId, effect.question);
    else if (effect.type === 'recording') await Recordings.record(tx, orgId, meetingId, effect.recording, at);
  },
  followUps(meetingId, before, after) {
    const was = before.status;
    const now = after.status;
    const closed = (s: string) => s === 'ENDED' || s === 'CANCELLED';
    return closed(now) && !closed(was) ? [{ actorId: waitingRoomActor(meetingId), event: { type: 'MEETING_ENDED' } }] : [];
  },
  // Every node drops its cached row of a meeting whose status or admission moved (a minted link must see
  // ENDED at once, an exchange a lock).
  notices(meetingId, b, a) {
    const changed = b.status !== a.status || !isDeepStrictEqual(admission(b), admission(a));
    return changed ? [{ channel: 'meetings', message: { meetingIds: [meetingId], orgId: a.meeting.orgId } }] : [];
  },
  // cancel and end, from the API with an Idempotency-Key: the meeting as the projection left it
  answer: (tx, meetingId, c) => meetingAnswerOf(tx, c.meeting.orgId, meetingId),
});

export const waitingRoomDefinition = defineActor<WaitingRoomContext, WaitingRoomEffect, WaitingRoomInput>({
  name: 'waiting-room',
  version: WAITING_ROOM_MACHINE_VERSION,
  machine: waitingRoomMachine,
  events: waitingRoomEvent,
  async input(db, meetingId) {
    const m = await meetingRow(db, meetingId);
    if (!m) return null;
    return { meetingId: m.id, orgId: m.orgId, externalMeetingId: m.externalId, kind: m.kind };
  },
  orgOf: (c) => c.meeting.orgId,
  // admit and deny, from the API with an Idempotency-Key: the entry as the command left it
  answer: (_tx, _meetingId, _c, reply) => waitingEntryAnswer(reply as unknown as EntryView),
});

const ms = (v: Date | string | null) => (v === null ? null : new Date(v).getTime());

export const webhookDefinition = defineActor<WebhookEndpointContext, WebhookEndpointEffect, WebhookEndpointInput>({
  name: 'webhook',
  version: WEBHOOK_ENDPOINT_MACHINE_VERSION,
  machine: webhookEndpointMachine,
  events: webhookEndpointEvent,
  async input(db, endpointId) {
    const [row] = await db<{ orgId: string; url: string; status: 'ACTIVE' | 'DISABLED'; disabledReason: WebhookEndpointInput['disabledReason']; disabledAt: Date | null; failingSince: Date | null; previousSecretExpiresAt: Date | null }[]>`
      select org_id, url, status, disabled_reason, disabled_at, failing_since, previous_secret_expires_at from webhook_endpoints where id = ${endpointId}`;
    if (!row) return null;
    return {
      endpointId,
      orgId: row.orgId,
      url: row.url,
      status: row.status,
      disabledReason: row.disabledReason,
      disabledAt: ms(row.disabledAt),
      failingSince: ms(row.failingSince),
      rotationExpiresAt: ms(row.previousSecretExpiresAt),
    };
  },
  orgOf: (c) => c.orgId,
  init: (at) => ({ type: 'INIT', at }),
  async project(tx, endpointId, c, at) {
    if (c.status === 'DELETED') {
      await tx`delete from webhook_endpoints where id = ${endpointId}`;
      return;
    }
    const ts = (v: number | null) => (v === null ? null : iso(v));
    await tx`update webhook_endpoints set status = ${c.status}, disabled_reason = ${c.disabledReason}, disabled_at = ${ts(c.disabledAt)},
        failing_since = ${ts(c.failingSince)}, updated_at = ${iso(at)}
      where id = ${endpointId} and (status, disabled_reason, disabled_at, failing_since)
        is distinct from (${c.status}, ${c.disabledReason}, ${ts(c.disabledAt)}::timestamptz, ${ts(c.failingSince)}::timestamptz)`;
    // Disabled: its queued retries stop (the delivery log keeps what was tried; redeliver resends).
    if (c.status === 'DISABLED') {
      await tx`update webhook_messages set status = 'CANCELLED', claimed_until = null, updated_at = ${iso(at)}
        where endpoint_id = ${endpointId} and status = 'PENDING'`;
    }
  },
  async effect(tx, endpointId, c, effect, at, env) {
    if (effect.type === 'notify.disabled') {
      const [row] = await tx<{ url: string }[]>`select url from webhook_endpoints where id = ${endpointId}`;
      await notifyEndpointDisabled(tx, {
        orgId: c.orgId,
        endpointId,
        url: row?.url ?? c.url,
        reason: effect.reason,
        failingSince: effect.failingSince,
        at,
        ...(env.baseUrl() ? { baseUrl: env.baseUrl() } : {}),
      });
    } else if (effect.type === 'secret.expired') {
      await tx`update webhook_endpoints set previous_secret_sealed = null, previous_secret_expires_at = null
        where id = ${endpointId} and previous_secret_expires_at <= ${iso(at)}`;
    }
  },
});

/** Cluster housekeeping: one actor per job (`maintenance:retention`), run by whichever node owns it. */
export const maintenanceDefinition = (settings: ActorSettings) => defineActor<MaintenanceContext, MaintenanceEffect, MaintenanceInput>({
  name: 'maintenance',
  version: MAINTENANCE_MACHINE_VERSION,
  machine: maintenanceMachine,
  events: maintenanceEvent,
  input: async (_db, name) => (name === 'retention' ? { name } : null),
  // housekeeping emits no events; nothing reaches an outbox
  orgOf: () => '',
  init: (at) => ({ type: 'INIT', at }),
  async effect(tx, _name, _context, effect, at) {
    if (effect.type !== 'purge') return;
    await purgeExpired(tx, at);
    // a recording's files are not in the transaction: they go after it, as DELETE does
    if (settings.recordingRetention) afterCommit(tx, () => void settings.recordingRetention!(at).catch(() => {}));
  },
});

export const actorDefinitions = (settings: ActorSettings): ActorDefinition[] => [meetingDefinition(settings), waitingRoomDefinition, webhookDefinition, maintenanceDefinition(settings)];
export const RETENTION_ACTOR = 'maintenance:retention';

