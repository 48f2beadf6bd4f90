import { z } from 'zod';
import { ENDED_REASONS, MEETING_STATUSES, USER_ROLES } from '../../src/core/domain.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { DEVICES, MEETING_KINDS } from '../../src/core/room.ts';
import { POLL_LIMITS, POLL_TYPES, QUESTION_LIMITS } from '../../src/core/classroom.ts';
import { CHAT_MODES } from '../../src/core/chat.ts';

export const id = z.string().min(1).max(255);
/** Milliseconds since the epoch, stamped by the host from its injected clock. */
export const at = z.number().int().nonnegative();
const isoTime = z.iso.datetime();
/**
 * One person in polls and Q&A, whatever their sessions and devices: a keyed hash of the person and the
 * meeting, made by the rooms service with a key this actor never sees (src/services/polls.ts voterHash).
 * It tells an anonymous answer or question apart from others' without saying whose it is.
 */
export const voter = z.string().min(16).max(64);

/** A person as webhook payloads show them: id and externalId are null for guests. */
export const roomUser = z.object({
  id: id.nullable(),
  externalId: id.nullable(),
  name: z.string().min(1).max(300),
  email: z.string().max(320).nullable(),
  role: z.enum(USER_ROLES),
});

export const roomSettings = z.object({
  muteOnEntry: z.boolean(),
  lectureMode: z.boolean(),
  allowStudentScreenShare: z.boolean(),
  recordAutomatically: z.boolean(),
  waitingRoom: z.boolean(),
  /** Optional: snapshots made before the chat had settings read as CHAT_DEFAULTS. */
  chat: z.enum(CHAT_MODES).optional(),
  privateChatToHosts: z.boolean().optional(),
});

/** What the host builds from the meeting row to create the actor. */
/**
 * What the meeting actor knows of its meeting: the identity part of its context and of meeting.* events
 * (services/meetings.ts `meetingFacts` builds it from the row). Defined once, here.
 */
export const meetingFacts = z.object({
  meetingId: id,
  orgId: id,
  externalMeetingId: id.nullable(),
  kind: z.enum(MEETING_KINDS),
  title: z.string(),
  /** MEETING, or CLASSROOM for a class session (the spec's meeting.* payloads name it so). */
  type: z.string(),
  slug: z.string(),
  hostUserId: id,
  classId: id.nullable(),
  externalClassId: id.nullable(),
  courseId: id.nullable(),
  batchId: id.nullable(),
  scheduledStart: isoTime,
  scheduledEnd: isoTime,
});

export const meetingInput = meetingFacts.extend({
  settings: roomSettings,
  planMaxMinutes: z.number().int().positive(),
  status: z.enum(MEETING_STATUSES),
  startedAt: isoTime.nullable().optional(),
  endedAt: isoTime.nullable().optional(),
  endedReason: z.enum(ENDED_REASONS).nullable().optional(),
  /** When the schedule was last set (the row's updatedAt): a meeting scheduled in the past still gets its grace from then. */
  notBefore: isoTime.optional(),
  /** The organization's attendance settle window: the report is final this long after the end (default 5). */
  attendanceSettleMinutes: z.number().int().min(0).max(1440).optional(),
  /** How long a dropped participant keeps their place (and media) before they leave, in seconds (default 15; AULA_ROOM_GRACE_SECONDS). */
  reconnectGraceSeconds: z.number().int().min(1).max(600).optional(),
  /** The meeting's own cap on people in the room (null: the plan's alone) and the plan's. */
  maxParticipants: z.number().int().positive().nullable().optional(),
  planMaxParticipants: z.number().int().positive().optional(),
});

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), at, ...shape });

/** Sent once by the host after creating the actor from a row: arms the timers the current state needs. */
export const initEvent = ev('INIT', {});
/** Where a room's media could go: a worker of a node, chosen by load (media/load.ts). */
export const mediaCandidate = z.object({ nodeId: id, worker: z.number().int().nonnegative() });

/**
 * A media-gateway connection opened for a participant; the same participantId again is a reconnect, and
 * its new connection replaces the old ones. `media` is where the caller would place the room's media if
 * it has none yet (the room going LIVE).
 */
export const joinEvent = ev('JOIN', {
  participantId: id,
  sessionId: id,
  user: roomUser,
  roomRole: z.enum(ROOM_ROLES),
  device: z.enum(DEVICES),
  connectionId: id,
  media: mediaCandidate.nullable().optional(),
  /** false: the organization has as many meetings live as its plan allows, so this join may not start the meeting (absent: it may). */
  planAllowsStart: z.boolean().optional(),
  /** Who this is in polls and Q&A, so the reply lists their own answers and questions (absent: only named ones are found). */
  voter: voter.optional(),
  /** The id a recording gets if this join starts a meeting that records automatically (absent: its plan does not record). */
  recordingId: id.optional(),
});
/** A connection dropped (not an explicit leave). */
export const disconnectEvent = ev('DISCONNECT', { participantId: id, connectionId: id });
export const leaveEvent = ev('LEAVE', { participantId: id });
export const removeEvent = ev('REMOVE', { participantId: id, by: id });
/** A host mutes a participant's microphone: the server pauses it and it stays off until a host allows unmuting. */
export const muteEvent = ev('MUTE', { participantId: id, by: id });
/** A host mutes every participant who is not a host or cohost (Zoom's "mute all"), the same lock as MUTE. */
export const muteAllEvent = ev('MUTE_ALL', { by: id });
/** A host lets a muted participant unmute again (permission, not a forced unmute). */
export const allowUnmuteEvent = ev('ALLOW_UNMUTE', { participantId: id, by: id });
/** A host lets every muted participant unmute again (the locks of MUTE and MUTE_ALL are lifted; lecture mode's floor is not given). */
export const allowUnmuteAllEvent = ev('ALLOW_UNMUTE_ALL', { by: id });
/**
 * Someone was refused at the door of this locked room (the join-token exchange says so): the hosts are
 * told, at most once a minute per person (KNOCK_INTERVAL_MS), so they can unlock or let them be.
 */
export const knockEvent = ev('KNOCK', { userId: id, name: z.string().min(1).max(300) });
/** A host (`by`) or the public API (`byApi`) starts recording the class. */
export const startRecordingEvent = ev('START_RECORDING', { recordingId: id, by: id.optional(), byApi: z.literal(true).optional() });
/** Stops the recording in progress (the API names it: `recordingId`). */
export const stopRecordingEvent = ev('STOP_RECORDING', { recordingId: id.optional(), by: id.optional(), byApi: z.literal(true).optional() });
/** Pauses (nothing is recorded meanwhile) or resumes the recording in progress. */
export const pauseRecordingEvent = ev('PAUSE_RECORDING', { paused: z.boolean(), by: id.optional(), byApi: z.literal(true).optional() });
/** A participant whose microphone is locked (host mute, lecture mode) asks the hosts to let them speak. */
export const askUnmuteEvent = ev('ASK_UNMUTE', { participantId: id });
/** A participant raises or lowers their own hand, or a host lowers someone's (`by` is who asks). */
export const handEvent = ev('HAND', { participantId: id, by: id, raise: z.boolean() });
/** A host lowers every raised hand. */
export const lowerAllHandsEvent = ev('LOWER_ALL_HANDS', { by: id });
/** A host locks the room (nobody new may join; hosts and cohosts still may) or unlocks it. */
export const lockEvent = ev('LOCK', { by: id, locked: z.boolean() });
/** A host shows one person big on every page, or nobody (null). */
export const spotlightEvent = ev('SPOTLIGHT', { by: id, participantId: id.nullable() });
/** A host opens a poll (a quiz when `correct` names options); the draft was checked (draftProblem) and its options made (pollOptions). */
export const openPollEvent = ev('OPEN_POLL', {
  pollId: id,
  by: id,
  question: z.string().min(1).max(POLL_LIMITS.questionChars),
  pollType: z.enum(POLL_TYPES),
  anonymous: z.boolean(),
  options: z.array(z.string().min(1).max(POLL_LIMITS.optionChars)).max(POLL_LIMITS.maxOptions),
  correct: z.array(z.number().int().nonnegative()).max(POLL_LIMITS.maxOptions),
});
/** A participant answers the open poll: option indexes, or text for FREE_TEXT. One answer each. */
export const answerPollEvent = ev('ANSWER_POLL', {
  pollId: id,
  participantId: id,
  voter,
  choices: z.array(z.number().int().nonnegative()).max(POLL_LIMITS.maxOptions),
  text: z.string().max(POLL_LIMITS.answerChars).nullable(),
});
/** A host closes a poll (`share`: show everyone the results too); the meeting's end closes an open one itself. */
export const closePollEvent = ev('CLOSE_POLL', { pollId: id, by: id, share: z.boolean() });
/** A host shows everyone a closed poll's results. */
export const sharePollEvent = ev('SHARE_POLL', { pollId: id, by: id });
export const askQuestionEvent = ev('ASK_QUESTION', {
  questionId: id,
  participantId: id,
  voter,
  text: z.string().min(1).max(QUESTION_LIMITS.textChars),
  anonymous: z.boolean(),
});
/** One upvote per participant per question; not one's own. */
export const upvoteQuestionEvent = ev('UPVOTE_QUESTION', { questionId: id, participantId: id, voter });
/** A host answers in text, or (answer null) marks it answered live. */
export const answerQuestionEvent = ev('ANSWER_QUESTION', { questionId: id, by: id, answer: z.string().min(1).max(QUESTION_LIMITS.answerChars).nullable() });
export const dismissQuestionEvent = ev('DISMISS_QUESTION', { questionId: id, by: id });
/** Lecture mode: a host gives a participant the floor (they may send audio) or takes it back. */
export const floorEvent = ev('FLOOR', { participantId: id, by: id, give: z.boolean() });
/**
 * Places (or re-places) the room's media, compare-and-set on the placement's revision: `rev` is the
 * revision the caller saw (0 for none). A stale `rev` changes nothing; the reply has the placement in force.
 */
export const placeMediaEvent = ev('PLACE_MEDIA', { rev: z.number().int().nonnegative(), to: mediaCandidate });
/** The room as the media rooms needs it: roster with standings, settings, placement. Changes nothing. */
export const roomStateEvent = ev('ROOM_STATE', {});
/** Ends the room for everyone: `by` a HOST or COHOST participant, or `byApi` (the public API). */
export const endEvent = ev('END', { by: id.optional(), byApi: z.literal(true).optional() }).refine(
  (e) => (e.by === undefined) !== (e.byApi === undefined),
  { message: 'give exactly one of by and byApi' },
);
export const cancelEvent = ev('CANCEL', {});
/** `erased`: the person deleted their account; whatever is said of their leaving names them as erased. */
export const deactivateUserEvent = ev('DEACTIVATE_USER', { userId: id, erased: z.boolean().optional() });
/** The meeting row changed (PATCH, plan change): keeps the room's copy current. */
export const updateEvent = ev('UPDATE', {
  title: z.string().optional(),
  hostUserId: id.optional(),
  scheduledStart: isoTime.optional(),
  scheduledEnd: isoTime.optional(),
  settings: roomSettings.partial().optional(),
  planMaxMinutes: z.number().int().positive().optional(),
  notBefore: isoTime.optional(),
  maxParticipants: z.number().int().positive().nullable().optional(),
});
export const timerEvent = ev('TIMER', { name: z.string().min(1).max(300) });

export const meetingEvent = z.discriminatedUnion('type', [
  initEvent,
  joinEvent,
  disconnectEvent,
  leaveEvent,
  removeEvent,
  muteEvent,
  muteAllEvent,
  allowUnmuteEvent,
  allowUnmuteAllEvent,
  knockEvent,
  startRecordingEvent,
  stopRecordingEvent,
  pauseRecordingEvent,
  askUnmuteEvent,
  handEvent,
  lowerAllHandsEvent,
  floorEvent,
  lockEvent,
  spotlightEvent,
  openPollEvent,
  answerPollEvent,
  closePollEvent,
  sharePollEvent,
  askQuestionEvent,
  upvoteQuestionEvent,
  answerQuestionEvent,
  dismissQuestionEvent,
  placeMediaEvent,
  roomStateEvent,
  endEvent,
  cancelEvent,
  deactivateUserEvent,
  updateEvent,
  timerEvent,
]);
