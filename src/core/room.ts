/**
 * The live room as its clients see it: what the meeting actor tells sockets (RoomMessage and the views in
 * it), where the room's media is placed, and the meeting session a page holds. Types and constants only,
 * with no import of zod: the actors, the media rooms, the HTTP layer and the browser's room page share
 * these shapes, and the actors' and HTTP's zod schemas are checked against them.
 */
import type { PollStatus, PollType } from './classroom.ts';
import type { ChatSettings } from './chat.ts';
import type { RoomRecording } from './recording.ts';
import type { EndedReason } from './domain.ts';
import type { RoomRole } from './room-access.ts';

/** The devices a room socket may say it is. */
export const DEVICES = ['web', 'android', 'ios', 'unknown'] as const;
export type Device = (typeof DEVICES)[number];

/** The kinds of meeting: a meeting, or a class session. */
export const MEETING_KINDS = ['MEETING', 'CLASS'] as const;
export type MeetingKind = (typeof MEETING_KINDS)[number];

/** Where a waiting-room entry stands. */
export const WAITING_STATUSES = ['WAITING', 'ADMITTED', 'DENIED', 'EXPIRED', 'LEFT'] as const;
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

/** A worker of a node, as a room's media may be placed on it. */
export interface MediaCandidate {
  nodeId: string;
  worker: number;
}

/** Where the room's media lives: a worker of a node. `rev` grows with every (re-)placement. */
export interface MediaPlacement extends MediaCandidate {
  rev: number;
}

/** A poll as everyone in the room sees it; the correct options only once it closed. */
export interface PollView {
  pollId: string;
  question: string;
  type: PollType;
  anonymous: boolean;
  quiz: boolean;
  options: string[];
  status: PollStatus;
  shared: boolean;
  createdAt: string;
  closedAt: string | null;
  correct: number[] | null;
}

/** A poll's live results: for hosts, and for everyone once shared. */
export interface PollResults {
  pollId: string;
  answered: number;
  votes: number[];
  texts: string[];
  correct: number[];
  /** To hosts and cohosts, while a named poll is open: the user ids of who answered (the page shows who has not). */
  answeredBy?: string[];
}

/** A question as the room sees it (dismissed ones are gone from the room); the asker only when not anonymous. */
export interface QuestionView {
  questionId: string;
  text: string;
  anonymous: boolean;
  askedBy: { participantId: string; name: string } | null;
  askedAt: string;
  upvotes: number;
  status: 'OPEN' | 'ANSWERED';
  answer: string | null;
  answeredLive: boolean;
  answeredAt: string | null;
}

/** Polls and Q&A as one participant sees them when joining. */
export interface ClassroomState {
  polls: PollView[];
  /** Hosts: every poll's; others: the shared ones'. */
  pollResults: PollResults[];
  /** Open polls this person answered. */
  answeredPolls: string[];
  questions: QuestionView[];
  /** Open questions this person upvoted, and the questions they asked. */
  upvotedQuestions: string[];
  ownQuestions: string[];
}

/** The settings a client of the room needs (a part of the meeting's settings). */
export interface ClientSettings extends ChatSettings {
  waitingRoom: boolean;
  muteOnEntry: boolean;
  lectureMode: boolean;
  allowStudentScreenShare: boolean;
}

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
  /** To everyone: the class is being recorded (and whether a host paused it), or no longer (null). */
  | { type: 'recording'; recording: RoomRecording | null }
  /** To hosts: someone was kept out of the locked room (at most once a minute per person): unlock to let them in. */
  | { type: 'knock'; userId: string; name: string; at: string }
  /** To hosts: a participant asks to speak. */
  | { type: 'unmute-requested'; participantId: string; name: string }
  /** To everyone: a host locked or unlocked the room. */
  | { type: 'locked'; locked: boolean; by: string }
  /** To everyone: a host put one person in the spotlight (big on every page), or took it away (null). */
  | { type: 'spotlight'; participantId: string | null; by: string }
  /** To everyone: a poll opened, closed or was shared. */
  | { type: 'poll'; poll: PollView }
  /** To hosts as answers come in; to everyone once shared. */
  | { type: 'poll-results'; results: PollResults }
  /** To everyone: a question was asked or answered. */
  | { type: 'question'; question: QuestionView }
  | { type: 'question-upvotes'; questionId: string; upvotes: number }
  /** To everyone: a host dismissed a question; it leaves the room's list. */
  | { type: 'question-dismissed'; questionId: string }
  /** To everyone, just before their sockets close (4002 meeting_ended): the meeting ended, and why (the meeting's endedReason). */
  | { type: 'ended'; reason: EndedReason };

/** A meeting session, as the join-token exchange and the refresh answer it (docs/api.md). */
export interface MeetingSession {
  accessToken: string;
  tokenType: 'Bearer';
  expiresAt: string;
  mediaToken: string | null;
  mediaUrl: string;
  role: RoomRole;
  waitingRoom: { queueId: string; status: WaitingStatus } | null;
  meeting: {
    id: string;
    kind: MeetingKind;
    slug: string;
    title: string;
    status: string;
    orgId: string;
    settings: { muteOnEntry: boolean; lectureMode: boolean; allowStudentScreenShare: boolean; recordAutomatically: boolean } & ChatSettings;
  };
  user: { id: string; externalId: string; displayName: string };
  redirectUrl: string | null;
}
