import type { z } from 'zod';
import type { OutboxEffect, Refusal, ReplyEffect, SendEffect, TimerCancelEffect, TimerSetEffect } from '../../src/core/actor-effects.ts';
import type { RoomUser } from '../meeting/meeting.types.ts';
import type { MeetingKind, WaitingStatus } from '../../src/core/room.ts';
import type { WaitingListEntry, WaitingListMessage, WaitingMessage } from '../../src/core/room-protocol.ts';
import type { waitingRoomEvent, waitingRoomInput } from './waiting-room.schemas.ts';

export type WaitingRoomInput = z.infer<typeof waitingRoomInput>;
export type WaitingRoomEvent = z.infer<typeof waitingRoomEvent>;
export type { WaitingStatus };

export interface WaitingEntry {
  queueId: string;
  sessionId: string;
  user: RoomUser;
  status: WaitingStatus;
  /** ms */
  requestedAt: number;
  admittedAt: number | null;
  /** user id of the admitting host */
  admittedBy: string | null;
  /** ms of the last change of status */
  updatedAt: number;
}

/** JSON only: this is what `getPersistedSnapshot()` stores. */
export interface WaitingRoomContext {
  meeting: WaitingRoomInput;
  /** by queueId; entries stay after they leave WAITING so STATUS keeps answering */
  entries: Record<string, WaitingEntry>;
}

/** data of participant.waiting and participant.admitted. */
export interface WaitingEventData {
  meetingId: string;
  externalMeetingId: string | null;
  kind: MeetingKind;
  queueId: string;
  user: RoomUser;
  requestedAt: string;
  admittedAt: string | null;
  admittedBy: string | null;
}

// what the waiting room tells sockets is the room protocol's (src/core/room-protocol.ts): the hosts' list, and the entry's outcome
export type { WaitingListEntry };
export type WaitingRoomMessage = WaitingListMessage | Exclude<WaitingMessage, { type: 'waiting' }>;

export interface EntryView {
  ok: true;
  queueId: string;
  status: WaitingStatus;
  requestedAt: string;
  admittedAt: string | null;
}

/** The reply to each event (a Refusal where the machine may refuse it): the contract of the waiting room's typed client. */
export interface WaitingRoomReplies {
  ENQUEUE: EntryView;
  ADMIT: EntryView;
  DENY: EntryView;
  LEAVE: EntryView;
  STATUS: EntryView;
  LIST: { ok: true; entries: WaitingListEntry[] };
  TIMER: { ok: true };
  MEETING_ENDED: { ok: true };
}

export type WaitingRoomReplyBody = Refusal | WaitingRoomReplies[keyof WaitingRoomReplies];

export type WaitingRoomEffect =
  | OutboxEffect<'participant.waiting' | 'participant.admitted', WaitingEventData>
  | TimerSetEffect
  | TimerCancelEffect
  | SendEffect<WaitingRoomMessage>
  | ReplyEffect<WaitingRoomReplyBody>;
