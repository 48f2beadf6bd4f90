import type { z } from 'zod';
import type { DisconnectEffect, OutboxEffect, Refusal, ReplyEffect, SendEffect, TimerCancelEffect, TimerSetEffect } from '../effects.ts';
import type { DEVICES, MEETING_ENDED_REASONS, MEETING_STATUSES, meetingEvent, meetingInput, ROOM_ROLES, roomSettings, roomUser } from './meeting.schemas.ts';

export type MeetingInput = z.infer<typeof meetingInput>;
export type MeetingEvent = z.infer<typeof meetingEvent>;
export type MeetingStatus = (typeof MEETING_STATUSES)[number];
export type EndedReason = (typeof MEETING_ENDED_REASONS)[number];
export type RoomRole = (typeof ROOM_ROLES)[number];
export type Device = (typeof DEVICES)[number];
export type RoomUser = z.infer<typeof roomUser>;
export type RoomSettings = z.infer<typeof roomSettings>;

export interface Participant {
  participantId: string;
  sessionId: string;
  user: RoomUser;
  roomRole: RoomRole;
  device: Device;
  /** ms */
  joinedAt: number;
  /** open media-gateway connections; empty while the reconnect grace runs */
  connections: string[];
  /** ms; set when the last connection dropped */
  disconnectedAt: number | null;
  muted: boolean;
}

/** JSON only: this is what `getPersistedSnapshot()` stores. Times are ms since the epoch. */
export interface MeetingContext {
  meeting: {
    meetingId: string;
    orgId: string;
    externalMeetingId: string | null;
    kind: 'MEETING' | 'CLASS';
    title: string;
    type: string;
    slug: string;
    hostUserId: string;
    classId: string | null;
    externalClassId: string | null;
    courseId: string | null;
    batchId: string | null;
    scheduledStart: string;
    scheduledEnd: string;
  };
  settings: RoomSettings;
  planMaxMinutes: number;
  /** The no-show deadline counts from the later of the scheduled end and this (ms). */
  noShowFloor: number | null;
  /** Mirrors the row's status, for the host to write back. */
  status: MeetingStatus;
  startedAt: number | null;
  endedAt: number | null;
  endedReason: EndedReason | null;
  cancelledAt: number | null;
  planCapAt: number | null;
  /** When the room last became empty while LIVE, and when its grace ends; null while someone is in. */
  emptySince: number | null;
  emptyGraceAt: number | null;
  participants: Record<string, Participant>;
  /** Sessions removed by a host: they may not join again. */
  removedSessions: string[];
}

/** The settings a client of the room needs. */
export type ClientSettings = Pick<RoomSettings, 'muteOnEntry' | 'lectureMode' | 'allowStudentScreenShare'>;

export interface RosterEntry {
  participantId: string;
  userId: string | null;
  name: string;
  roomRole: RoomRole;
  joinedAt: string;
  muted: boolean;
}

/** data of meeting.created/updated/started/ended/cancelled, as `meetingEventData` in src/services/meetings.ts. */
export interface MeetingEventData {
  meetingId: string;
  externalMeetingId: string | null;
  kind: 'MEETING' | 'CLASS';
  title: string;
  type: string;
  status: MeetingStatus;
  slug: string;
  hostUserId: string;
  classId: string | null;
  externalClassId: string | null;
  courseId: string | null;
  batchId: string | null;
  scheduledStart: string;
  scheduledEnd: string;
  startedAt: string | null;
  endedAt: string | null;
  durationSeconds: number | null;
  /** only on ENDED */
  endedReason?: EndedReason | null;
}

/** data of participant.joined/left. */
export interface ParticipantEventData {
  meetingId: string;
  externalMeetingId: string | null;
  kind: 'MEETING' | 'CLASS';
  participantId: string;
  user: RoomUser;
  device: Device;
  joinedAt: string;
  leftAt: string | null;
  durationSeconds: number | null;
}

export type MeetingOutbox =
  | OutboxEffect<'meeting.started' | 'meeting.ended' | 'meeting.cancelled', MeetingEventData>
  | OutboxEffect<'participant.joined' | 'participant.left', ParticipantEventData>;

export type RoomMessage =
  | { type: 'roster'; participants: RosterEntry[] }
  | { type: 'mute-request'; by: string }
  | { type: 'settings'; settings: ClientSettings };

export type MeetingReplyBody =
  | Refusal
  | { ok: true; participantId: string; roster: RosterEntry[]; settings: ClientSettings }
  | { ok: true; status: MeetingStatus; endedReason: EndedReason | null }
  | { ok: true; left: string[] }
  | { ok: true };

export type MeetingEffect =
  | MeetingOutbox
  | TimerSetEffect
  | TimerCancelEffect
  | SendEffect<RoomMessage>
  | DisconnectEffect
  | ReplyEffect<MeetingReplyBody>;
