import type { RecordingPhase, RecordingStatus, RoomRecording } from '../../src/core/recording.ts';
import type { z } from 'zod';
import type { DisconnectEffect, OutboxEffect, Refusal, ReplyEffect, SendEffect, TimerCancelEffect, TimerSetEffect } from '../../src/core/actor-effects.ts';
import type { EndedReason, MeetingStatus } from '../../src/core/domain.ts';
import type { PollStatus, PollType, QuestionStatus } from '../../src/core/classroom.ts';
import type { ClassroomState, ClientSettings, Device, MeetingKind, MediaCandidate, MediaPlacement, PollResults, PollView, QuestionView, RoomMessage, RosterEntry } from '../../src/core/room.ts';
import type { RoomRole } from '../../src/core/room-access.ts';
import type { meetingEvent, meetingFacts, meetingInput, roomSettings, roomUser } from './meeting.schemas.ts';

export type MeetingInput = z.infer<typeof meetingInput>;
export type MeetingEvent = z.infer<typeof meetingEvent>;
export type { EndedReason, MeetingStatus };
// the room's vocabulary as its clients see it is core's (src/core/room.ts); the actor speaks it
export type { ClassroomState, ClientSettings, Device, MediaCandidate, MediaPlacement, PollResults, PollView, QuestionView, RoomMessage, RosterEntry, RoomRole };
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

/** JSON only: this is what `getPersistedSnapshot()` stores. Times are ms since the epoch. */
export interface MeetingContext {
  meeting: MeetingFacts;
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
  /** The reconnect grace of this node's configuration (absent in older snapshots: RECONNECT_GRACE_MS). */
  reconnectGraceMs?: number;
  /** When attendance was finalized (ms); null until then. */
  attendanceFinalizedAt?: number | null;
  /** A host locked the room (absent in older snapshots: unlocked). */
  locked?: boolean;
  /** When each person refused at the locked door last made the hosts hear of it (ms; pruned after KNOCK_INTERVAL_MS). */
  knocks?: Record<string, number>;
  /** The recording in progress (absent in older snapshots: none). */
  recording?: ActiveRecording | null;
  /** Who a host put in the spotlight (absent in older snapshots: nobody). Kept while they are away; pages show it only for someone in the room. */
  spotlight?: string | null;
  /** The meeting's own cap on people in the room (null: the plan's alone), and the plan's (absent in older snapshots: none). */
  maxParticipants?: number | null;
  planMaxParticipants?: number;
  /** Polls and quizzes of this meeting, oldest first (absent in older snapshots: none). */
  polls?: Poll[];
  /** Q&A, oldest first (absent in older snapshots: none). */
  questions?: Question[];
}

/** A person as poll responses and Q&A keep them: the room's user without the email. */
export type PersonRef = Pick<RoomUser, 'id' | 'externalId' | 'name' | 'role'>;

/**
 * One person's answer to an open poll. An anonymous poll's answer names no one and has no time, and its
 * poll keeps them in the order of their content, so neither the snapshot nor what the poll's close writes
 * can be lined up with who was in the room when.
 */
export interface PollAnswer {
  /** The person's voter key (meeting.schemas.ts `voter`), for one answer per person; never written anywhere else. Snapshots from before 0016 hold the user id. */
  voter: string;
  /** null in an anonymous poll (and for a guest). */
  user: PersonRef | null;
  choices: number[];
  text: string | null;
  /** ms; null in an anonymous poll. */
  at: number | null;
}

/** A poll (a quiz when `correct` names options), as the meeting actor keeps it. */
export interface Poll {
  pollId: string;
  question: string;
  type: PollType;
  anonymous: boolean;
  options: string[];
  /** Indexes of the correct options; empty for a poll that is not a quiz. */
  correct: number[];
  status: PollStatus;
  /** A host shared the results with everyone. */
  shared: boolean;
  /** User ids (null for a guest, or for the meeting's own end closing it). */
  createdBy: string | null;
  closedBy: string | null;
  /** ms */
  createdAt: number;
  closedAt: number | null;
  /** Votes per option, and how many answered. */
  votes: number[];
  answered: number;
  /** The latest FREE_TEXT answers, newest last (POLL_LIMITS.liveTexts). */
  texts: string[];
  /** Every answer while the poll is open (an anonymous poll's in the order of their content); emptied when it closes (they are written to the database then). */
  answers: PollAnswer[];
}

/** A Q&A question, as the meeting actor keeps it. */
export interface Question {
  questionId: string;
  text: string;
  anonymous: boolean;
  /** Who asked a named question; null for an anonymous one, whose asker is kept nowhere. */
  askedBy: { participantId: string; user: PersonRef } | null;
  /**
   * The asker's voter key (meeting.schemas.ts `voter`): they see the question as theirs and cannot upvote
   * it, and nothing else can tell whose it is. Absent in snapshots from before 0016.
   */
  asker?: string;
  /** ms */
  askedAt: number;
  /** Who upvoted (voter keys, as PollAnswer's; user ids in snapshots from before 0016), while it is OPEN; emptied once answered or dismissed. */
  upvoters: string[];
  upvotes: number;
  status: QuestionStatus;
  /** The host's written answer; null when answered live (or not answered). */
  answer: string | null;
  answeredLive: boolean;
  /** User id of the host who answered or dismissed it. */
  answeredBy: string | null;
  answeredAt: number | null;
  dismissedAt: number | null;
}

/** What the meeting actor knows of its meeting: the identity part of its context and of meeting.* events. */
export type MeetingFacts = z.infer<typeof meetingFacts>;

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
  kind: MeetingKind;
  participantId: string;
  user: RoomUser;
  device: Device;
  joinedAt: string;
  leftAt: string | null;
  durationSeconds: number | null;
}

/**
 * data of poll.closed: every response, naming its person unless the poll is anonymous. An anonymous poll's
 * responses have `user` null, come in the order of their content and carry the poll's `closedAt` as
 * `respondedAt`: no person, no order of arrival, no time of their own.
 */
export interface PollClosedData {
  pollId: string;
  meetingId: string;
  externalMeetingId: string | null;
  kind: MeetingKind;
  question: string;
  type: PollType;
  anonymous: boolean;
  quiz: boolean;
  /** `correct` on quizzes only. */
  options: { index: number; text: string; votes: number; correct?: boolean }[];
  answered: number;
  /** `correct` on quizzes only. */
  responses: { user: PersonRef | null; choices: number[]; text: string | null; correct?: boolean; respondedAt: string }[];
  createdAt: string;
  createdBy: string | null;
  closedAt: string;
  /** null when the meeting's end closed it. */
  closedBy: string | null;
}

/** data of question.answered. */
export interface QuestionAnsweredData {
  questionId: string;
  meetingId: string;
  externalMeetingId: string | null;
  kind: MeetingKind;
  text: string;
  anonymous: boolean;
  /** User id; null for an anonymous question. */
  askedBy: string | null;
  answeredBy: string | null;
  /** null when answered live. */
  answer: string | null;
  answeredLive: boolean;
  askedAt: string;
  answeredAt: string;
  upvotes: number;
}

export type MeetingOutbox =
  | OutboxEffect<'meeting.started' | 'meeting.ended' | 'meeting.cancelled', MeetingEventData>
  | OutboxEffect<'participant.joined' | 'participant.left', ParticipantEventData>
  | OutboxEffect<'poll.closed', PollClosedData>
  | OutboxEffect<'question.answered', QuestionAnsweredData>
  | OutboxEffect<'recording.started', RecordingEventData>;

export type Ok = { ok: true };
export type JoinedReply = { ok: true; participantId: string; roster: RosterEntry[]; settings: ClientSettings; rev: number; media: MediaPlacement | null; locked: boolean; spotlight: string | null; classroom: ClassroomState; recording: RoomRecording | null };
export type StatusReply = { ok: true; status: MeetingStatus; endedReason: EndedReason | null };
export type LeftReply = { ok: true; left: string[] };
export type MediaReply = { ok: true; media: MediaPlacement | null };
export type RoomStateReply = { ok: true; status: MeetingStatus; rev: number; roster: RosterEntry[]; settings: ClientSettings; media: MediaPlacement | null; locked: boolean; recording: RoomRecording | null };

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
  ALLOW_UNMUTE_ALL: { ok: true; allowed: string[] };
  /** `told`: the hosts heard of it (false: the room is not locked, or this person knocked within the minute). */
  KNOCK: { ok: true; told: boolean };
  START_RECORDING: { ok: true; recording: RoomRecording };
  STOP_RECORDING: { ok: true; recordingId: string };
  PAUSE_RECORDING: { ok: true; paused: boolean };
  ASK_UNMUTE: Ok;
  HAND: { ok: true; raisedAt: string | null; lowered: string[] };
  LOWER_ALL_HANDS: { ok: true; lowered: string[] };
  FLOOR: Ok;
  LOCK: { ok: true; locked: boolean };
  SPOTLIGHT: { ok: true; participantId: string | null };
  OPEN_POLL: { ok: true; poll: PollView };
  ANSWER_POLL: Ok;
  CLOSE_POLL: { ok: true; poll: PollView; results: PollResults };
  SHARE_POLL: { ok: true; poll: PollView; results: PollResults };
  ASK_QUESTION: { ok: true; question: QuestionView };
  UPVOTE_QUESTION: { ok: true; upvotes: number };
  ANSWER_QUESTION: { ok: true; question: QuestionView };
  DISMISS_QUESTION: Ok;
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

/** A poll opened or closed (with its answers): the host writes it (src/services/polls.ts). */
export interface PollSavedEffect {
  type: 'poll';
  poll: Poll;
}

/** A question was asked, upvoted, answered or dismissed: the host writes it (src/services/questions.ts). */
export interface QuestionSavedEffect {
  type: 'question';
  question: Question;
}

export type MeetingEffect =
  | MeetingOutbox
  | RecordingSavedEffect
  | PollSavedEffect
  | QuestionSavedEffect
  | AttendanceStayEffect
  | AttendanceFinalizeEffect
  | TimerSetEffect
  | TimerCancelEffect
  | SendEffect<RoomMessage>
  | DisconnectEffect
  | ReplyEffect<MeetingReplyBody>;

// ---- recordings (meeting.recording.ts) ----------------------------------------------------------

/** The recording in progress, as the actor keeps it (ms). */
export interface ActiveRecording {
  recordingId: string;
  startedAt: number;
  /** A user id (null: the public API, or started automatically). */
  startedBy: string | null;
  automatic: boolean;
  /** When a host paused it; null while it runs. */
  pausedAt: number | null;
  /** Time spent paused before now. */
  pausedMs: number;
}

/** The row the host writes for a recording change (src/services/recordings.ts Recordings.record). */
export interface RecordingSavedEffect {
  type: 'recording';
  recording: ActiveRecording & { phase: RecordingPhase; endedAt: number | null };
}

/** recording.* webhook data, as the spec shapes it (no media URL, ever). */
export interface RecordingEventData {
  recordingId: string;
  meetingId: string;
  externalMeetingId: string | null;
  kind: string;
  status: RecordingStatus;
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number | null;
  fileSizeBytes: number | null;
  mimeType: string | null;
  failureReason: string | null;
  deletedAt: string | null;
}
