/**
 * The messages between the room page in an iframe (`/embed/:slug`) and the embedding SDK
 * (`/sdk/svc-embed.js`) in the customer's page, over `postMessage`. Defined once here; the page and the
 * SDK both import it (docs/sdk.md lists the events and commands for customers).
 *
 * Every message carries `svc: "aula-embed"`, the protocol version and the frame id the SDK chose, so
 * that a page with several frames, or other scripts posting messages, cannot be confused with a frame.
 * Origins are checked on both sides: the page posts only to the parent origin it verified against the
 * organization's allowed origins, and accepts commands only from that origin and from `window.parent`;
 * the SDK accepts messages only from Aula's origin and from the frame it created.
 */
import type { MediaErrorCode } from '../../src/core/room-protocol.ts';

export const EMBED_SOURCE = 'aula-embed';
export const EMBED_VERSION = 1;

/** How the SDK tells the page its frame id and its own origin: in the iframe URL's fragment, `#frame=<id>&parent=<origin>` (a fragment never reaches a server or a log). */
export const FRAME_PARAM = 'frame';
export const PARENT_PARAM = 'parent';

export interface EmbedParticipant {
  id: string;
  name: string;
  role: 'HOST' | 'COHOST' | 'PARTICIPANT' | 'VIEWER';
}

export interface EmbedPoll {
  id: string;
  question: string;
  type: 'YES_NO' | 'TRUE_FALSE' | 'SINGLE_CHOICE' | 'MULTIPLE_CHOICE' | 'FREE_TEXT';
  quiz: boolean;
}

/** Events the page sends to the SDK, by name, with their argument. */
export interface EmbedEvents {
  /** The page loaded and listens for commands. */
  ready: Record<string, never>;
  /** The user is in the waiting room. */
  waiting: { queueId: string; meeting: { id: string; title: string } };
  /** A host admitted the user; `joined` follows. */
  admitted: { queueId: string };
  /** The user is in the room. */
  joined: { participant: EmbedParticipant; meeting: { id: string; title: string } };
  /** The user left the room (themselves, removed by a host, or turned away from the waiting room). */
  left: { reason: 'left' | 'removed' | 'denied' | 'expired' | 'user_deactivated' | 'replaced' };
  /**
   * The meeting ended for everyone; `reason` is the meeting's endedReason (HOST_ENDED, ROOM_FINISHED,
   * PLAN_LIMIT, API, TIMEOUT), null only if the page did not hear it before its socket closed.
   */
  'meeting-ended': { reason: string | null };
  'participant-joined': { participant: EmbedParticipant };
  'participant-left': { participant: EmbedParticipant };
  'hand-raised': { participant: EmbedParticipant };
  'hand-lowered': { participant: EmbedParticipant };
  /** A host locked the room (nobody new may join; hosts and cohosts still may), or unlocked it. */
  'room-locked': Record<string, never>;
  'room-unlocked': Record<string, never>;
  /** A host opened a poll or quiz, or closed it (its results are in the room, and in poll.closed for the backend). */
  'poll-opened': { poll: EmbedPoll };
  'poll-closed': { poll: EmbedPoll };
  /** A host answered a question (in text, or live); `yours` when this user asked it. */
  'question-answered': { question: { id: string; text: string; answer: string | null; answeredLive: boolean; yours: boolean } };
  /** Who speaks now (the loudest voice for a moment), or null when nobody does. */
  'active-speaker': { participant: EmbedParticipant | null };
  /** The page of people the room shows changed (1-based), or how many pages there are. */
  'page-changed': { page: number; pages: number };
  /**
   * The user's audio and video cannot get through their network (`code`), with the words the room shows
   * them: `media_blocked` (nothing reaches the media server and no relay is configured),
   * `relay_unreachable` (the relays could not be reached either), `ice_failed` (paths were found and none
   * connected). Sent again with `code: null` when media gets through again.
   */
  'media-error': { code: MediaErrorCode | null; message: string | null };
  /**
   * A chat message the room shows this user (the room's, or their private conversation with the hosts:
   * `private`), theirs included; not the history a join brings.
   */
  /** The class started being recorded (by a host, the backend, or automatically), or the recording stopped. */
  'recording-started': { recordingId: string };
  'recording-stopped': { recordingId: string };
  'chat-message': { message: { id: string; from: EmbedParticipant; text: string; sentAt: string; private: boolean } };
  /**
   * Something went wrong; `code` is the API's error code (docs/api.md), e.g. `join_token_used`, or the
   * SDK's own `origin_not_allowed`: the page never said `ready` (the server refuses to be framed by an
   * origin the organization did not allow, and the browser tells the parent nothing else).
   */
  error: { code: string; message: string };
}

export type { MediaErrorCode };
export type EmbedEventName = keyof EmbedEvents;
/** One event with its argument, as the page posts it. */
export type EmbedEvent = { [E in EmbedEventName]: { event: E; data: EmbedEvents[E] } }[EmbedEventName];
export const EMBED_EVENTS = [
  'ready',
  'waiting',
  'admitted',
  'joined',
  'left',
  'meeting-ended',
  'participant-joined',
  'participant-left',
  'hand-raised',
  'hand-lowered',
  'room-locked',
  'room-unlocked',
  'poll-opened',
  'poll-closed',
  'question-answered',
  'active-speaker',
  'page-changed',
  'media-error',
  'chat-message',
  'recording-started',
  'recording-stopped',
  'error',
] as const satisfies readonly EmbedEventName[];

/** Commands the SDK sends to the page. `destroy` is the SDK's own (it leaves, then removes the frame). */
export const EMBED_COMMANDS = ['mute', 'unmute', 'toggleVideo', 'raiseHand', 'lowerHand', 'leave', 'set-layout', 'set-page', 'audio-only'] as const;
export type EmbedCommand = (typeof EMBED_COMMANDS)[number];

/** The layouts of the room's stage: everyone in a grid, or the speaker big with the others beside (web/room/layout.ts). */
export const LAYOUT_MODES = ['grid', 'speaker'] as const;
export type LayoutMode = (typeof LAYOUT_MODES)[number];

/** The value each command takes (the others take none): a layout, a page (1-based), audio only on or off. */
export interface EmbedCommandValues {
  'set-layout': LayoutMode;
  'set-page': number;
  'audio-only': boolean;
}

/** Whether a command's value is one it takes. */
export function validCommandValue(command: EmbedCommand, value: unknown): boolean {
  switch (command) {
    case 'set-layout':
      return (LAYOUT_MODES as readonly unknown[]).includes(value);
    case 'set-page':
      return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 10_000;
    case 'audio-only':
      return typeof value === 'boolean';
    default:
      return value === undefined;
  }
}

/** What the SDK's `createFrame` options tell the page, in the iframe URL's fragment: `prejoin=0` (join at once), `layout=speaker`. */
export const PREJOIN_PARAM = 'prejoin';
export const LAYOUT_PARAM = 'layout';

export interface EmbedEventMessage<E extends EmbedEventName = EmbedEventName> {
  svc: typeof EMBED_SOURCE;
  v: typeof EMBED_VERSION;
  frameId: string;
  kind: 'event';
  event: E;
  data: EmbedEvents[E];
}

export interface EmbedCommandMessage {
  svc: typeof EMBED_SOURCE;
  v: typeof EMBED_VERSION;
  frameId: string;
  kind: 'command';
  command: EmbedCommand;
  /** set-layout, set-page and audio-only only (EmbedCommandValues). */
  value?: unknown;
}

/** A frame id: what the SDK generates, and all the page accepts in its fragment. */
export const FRAME_ID = /^[A-Za-z0-9_-]{8,64}$/;

export function isEmbedEvent(data: unknown, frameId: string): data is EmbedEventMessage {
  const m = data as Partial<EmbedEventMessage> | null;
  return !!m && typeof m === 'object' && m.svc === EMBED_SOURCE && m.v === EMBED_VERSION && m.frameId === frameId && m.kind === 'event' && (EMBED_EVENTS as readonly string[]).includes(m.event as string);
}

export function isEmbedCommand(data: unknown, frameId: string): data is EmbedCommandMessage {
  const m = data as Partial<EmbedCommandMessage> | null;
  return !!m && typeof m === 'object' && m.svc === EMBED_SOURCE && m.v === EMBED_VERSION && m.frameId === frameId && m.kind === 'command' && (EMBED_COMMANDS as readonly string[]).includes(m.command as string) && validCommandValue(m.command!, m.value);
}
