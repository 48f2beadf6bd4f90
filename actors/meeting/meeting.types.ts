import type { z } from 'zod';
import type { DisconnectEffect, OutboxEffect, Refusal, ReplyEffect, SendEffect, TimerCancelEffect, TimerSetEffect } from '../effects.ts';
import type { EndedReason, MeetingStatus } from '../../src/domain.ts';
import type { DEVICES, mediaCandidate, meetingEvent, meetingInput, ROOM_ROLES, roomSettings, roomUser } from './meeting.schemas.ts';

export type MeetingInput = z.infer<typeof meetingInput>;
export type MeetingEvent = z.infer<typeof meetingEvent>;
export type { EndedReason, MeetingStatus };
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
  /** A host muted the microphone; it stays off until a host allows unmuting (RoomAccess.send). */
  micLocked: boolean;
  /** Lecture mode: a host gave this participant the floor. */
  floor: boolean;
  /** Asked the hosts to let them speak; cleared when allowed or given the floor. */
  askedToUnmute: boolean;
  /** muteOnEntry applied: the first microphone of this participant starts paused by the server. */
  enteredMuted: boolean;
  /** ms when the hand went up; null (or absent, in snapshots from before hands) when it is down */
  handRaisedAt?: number | null;
}

export type MediaCandidate = z.infer<typeof mediaCandidate>;
/** Where the room's media lives: a worker of a node. `rev` grows with every (re-)placement. */
export interface MediaPlacement extends MediaCandidate {
  rev: number;
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
  /** Placed when the room goes LIVE, re-placed when its media node or worker dies; null otherwise. */
  media: MediaPlacement | null;
  /** Grows with every roster and settings change, so the media rooms applies only newer room state. */
  rev: number;
  /** How long after the end attendance settles (absent in snapshots from before attendance: the default). */
  attendanceSettleMs?: number;
  /** When attendance was finalized (ms); null until then. */
  attendanceFinalizedAt?: number | null;
  /** A host locked the room (absent in older snapshots: unlocked). */
  locked?: boolean;
  /** The meeting's own cap on people in the room (null: the plan's alone), and the plan's (absent in older snapshots: none). */
  maxParticipants?: number | null;
  planMaxParticipants?: number;
}

/** The settings a client of the room needs. */
export type ClientSettings = Pick<RoomSettings, 'waitingRoom' | 'muteOnEntry' | 'lectureMode' | 'allowStudentScreenShare'>;

export interface RosterEntry {
  participantId: string;
  userId: string | null;
  name: string;
  roomRole: RoomRole;
  joinedAt: string;
  micLocked: boolean;
  floor: boolean;
  askedToUnmute: boolean;
  enteredMuted: boolean;
  /** when the hand went up (first raised first), null when it is down */
  handRaisedAt: string | null;
  /** false while the reconnect grace runs */
  connected: boolean;
}

/** What the meeting actor knows of its meeting: the identity part of its context and of meeting.* events. */
export type MeetingFacts = MeetingContext['meeting'];

/** data of meeting.created/updated/started/ended/cancelled: built by `meetingData` (meeting.views.ts) alone. */
export type MeetingEventData = Omit<MeetingFacts, 'orgId'> & {
  status: MeetingStatus;
  startedAt: string | null;
  endedAt: string | null;
  durationSeconds: number | null;
  /** only on ENDED */
  endedReason?: EndedReason | null;
};

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
  | { type: 'roster'; rev: number; participants: RosterEntry[] }
  | { type: 'settings'; rev: number; settings: ClientSettings }
  /** The room's media was placed or moved: clients (re)connect their transports. Internal fields are stripped before a socket sees it. */
  | { type: 'media'; media: MediaPlacement | null }
  /** To the participant: a host muted your microphone. */
  | { type: 'muted'; by: string }
  /** To the participant: a host allows you to unmute. */
  | { type: 'unmute-allowed'; by: string }
  /** To the participant: you were given the floor (true) or it was taken back. */
  | { type: 'floor'; give: boolean; by: string }
  /** To hosts: a participant asks to speak. */
  | { type: 'unmute-requested'; participantId: string; name: string }
  /** To everyone: a host locked or unlocked the room. */
  | { type: 'locked'; locked: boolean; by: string };

export type Ok = { ok: true };
export type JoinedReply = { ok: true; participantId: string; roster: RosterEntry[]; settings: ClientSettings; rev: number; media: MediaPlacement | null; locked: boolean };
export type StatusReply = { ok: true; status: MeetingStatus; endedReason: EndedReason | null };
export type LeftReply = { ok: true; left: string[] };
export type MediaReply = { ok: true; media: MediaPlacement | null };
export type RoomStateReply = { ok: true; status: MeetingStatus; rev: number; roster: RosterEntry[]; settings: ClientSettings; media: MediaPlacement | null; locked: boolean };

/** The reply to each event (a Refusal where the machine may refuse it): the contract of the meeting's typed client. */
export interface MeetingReplies {
  INIT: StatusReply;
  JOIN: JoinedReply;
  DISCONNECT: Ok;
  LEAVE: LeftReply;
  REMOVE: LeftReply;
  MUTE: Ok;
  MUTE_ALL: { ok: true; muted: string[] };
  ALLOW_UNMUTE: Ok;
  ASK_UNMUTE: Ok;
  HAND: { ok: true; raisedAt: string | null; lowered: string[] };
  LOWER_ALL_HANDS: { ok: true; lowered: string[] };
  FLOOR: Ok;
  LOCK: { ok: true; locked: boolean };
  END: StatusReply;
  CANCEL: StatusReply;
  DEACTIVATE_USER: LeftReply;
  UPDATE: Ok;
  TIMER: Ok;
  PLACE_MEDIA: MediaReply;
  ROOM_STATE: RoomStateReply;
}

export type MeetingReplyBody = Refusal | MeetingReplies[keyof MeetingReplies];

/** A stay in the room began (`leftAt` null) or ended: the host writes it as an attendance interval. */
export interface AttendanceStayEffect {
  type: 'attendance';
  participantId: string;
  userId: string | null;
  joinedAt: number;
  leftAt: number | null;
}

/** The settle window after the end passed: the host writes the final report and sends attendance.finalized. */
export interface AttendanceFinalizeEffect {
  type: 'attendance.finalize';
}

export type MeetingEffect =
  | MeetingOutbox
  | AttendanceStayEffect
  | AttendanceFinalizeEffect
  | TimerSetEffect
  | TimerCancelEffect
  | SendEffect<RoomMessage>
  | DisconnectEffect
  | ReplyEffect<MeetingReplyBody>;
