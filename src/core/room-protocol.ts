import type { EndedReason, MeetingStatus, UserRole } from './domain.ts';
import type { MediaSource } from './room-access.ts';
import type { PollType } from './classroom.ts';
import type { ClassroomState, ClientSettings, PollResults, PollView, QuestionView, RoomMessage, RosterEntry, WaitingStatus } from './room.ts';

/**
 * The room protocol: JSON text frames on `/api/v1/meetings/:slug/media`, defined once here as plain types
 * and constants (close codes, limits) with no import of zod, so the browser bundle imports this module
 * itself. The server parses client messages with the zod schemas of room-protocol.schemas.ts, each
 * checked at compile time to parse to exactly the type here. Every client message may carry an `id`; its
 * answer is `{ type: "ack", id, ok: true, ...result }` or `{ type: "ack", id, ok: false, error }`.
 * docs/room-protocol.md is the prose of this file.
 */

export const PROTOCOL_LIMITS = {
  /** A frame, either way. */
  frameBytes: 64 * 1024,
  /** A client message's `id`. */
  idChars: 64,
  /** An id the client names (a participant, a poll, a transport...). */
  refChars: 255,
  /** Simulcast layers are numbered 0 (lowest) to this. */
  maxLayer: 2,
} as const;

/** mediasoup's own objects (RTP parameters, capabilities, DTLS parameters): mediasoup checks them; the protocol knows only their outline. */
export type MediasoupObject = { [field: string]: unknown };

export const TRANSPORT_DIRECTIONS = ['send', 'recv'] as const;
export type TransportDirection = (typeof TRANSPORT_DIRECTIONS)[number];

export const MEDIA_KINDS = ['audio', 'video'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

// ---- client to server: the room ---------------------------------------------------------------

export type RoomCommand =
  | { type: 'ping'; id?: string }
  | { type: 'leave'; id?: string }
  | { type: 'end'; id?: string }
  | { type: 'remove'; id?: string; participantId: string }
  | { type: 'mute'; id?: string; participantId: string }
  | { type: 'mute-all'; id?: string }
  | { type: 'allow-unmute'; id?: string; participantId: string }
  | { type: 'ask-unmute'; id?: string }
  | { type: 'raise-hand'; id?: string }
  /** Without participantId: your own hand; another's: hosts and cohosts. */
  | { type: 'lower-hand'; id?: string; participantId?: string }
  | { type: 'lower-all-hands'; id?: string }
  | { type: 'floor'; id?: string; participantId: string; give: boolean }
  /** Hosts and cohosts: lock the room (nobody new may join) or unlock it. */
  | { type: 'lock'; id?: string; locked: boolean }
  /** Hosts and cohosts: a poll (a quiz when `correct` names the right options); YES_NO and TRUE_FALSE bring their own options. */
  | { type: 'open-poll'; id?: string; question: string; pollType: PollType; anonymous?: boolean; options?: string[]; correct?: number[] }
  /** Participants: the open poll's answer, option indexes (`choices`) or `text` for FREE_TEXT. */
  | { type: 'answer-poll'; id?: string; pollId: string; choices?: number[]; text?: string }
  /** Hosts and cohosts: close the poll (`share`: everyone sees the results), or share a closed one's. */
  | { type: 'close-poll'; id?: string; pollId: string; share?: boolean }
  | { type: 'share-poll'; id?: string; pollId: string }
  /** Anyone in the room: ask (optionally anonymously), upvote another's question. */
  | { type: 'ask-question'; id?: string; text: string; anonymous?: boolean }
  | { type: 'upvote-question'; id?: string; questionId: string }
  /** Hosts and cohosts: answer in text, or without `answer` mark it answered live; or dismiss it. */
  | { type: 'answer-question'; id?: string; questionId: string; answer?: string }
  | { type: 'dismiss-question'; id?: string; questionId: string }
  | { type: 'admit'; id?: string; queueId: string }
  | { type: 'deny'; id?: string; queueId: string };

// ---- client to server: media signaling (relayed to the node that hosts the room's media) -------

export type SignalingRequest =
  /** Starts (or restarts, after a `media` message) this participant's media: answers the router's capabilities. */
  | { type: 'media-join'; id?: string }
  | { type: 'transport-create'; id?: string; direction: TransportDirection }
  | { type: 'transport-connect'; id?: string; transportId: string; dtlsParameters: MediasoupObject }
  | { type: 'transport-restart-ice'; id?: string; transportId: string }
  /** The device's capabilities: from now on the participant receives every producer of the room (consumers start paused). */
  | { type: 'media-ready'; id?: string; rtpCapabilities: MediasoupObject }
  | { type: 'produce'; id?: string; transportId: string; kind: MediaKind; source: MediaSource; rtpParameters: MediasoupObject; paused?: boolean }
  | { type: 'producer-pause'; id?: string; producerId: string }
  | { type: 'producer-resume'; id?: string; producerId: string }
  | { type: 'producer-close'; id?: string; producerId: string }
  | { type: 'consumer-resume'; id?: string; consumerId: string }
  | { type: 'consumer-pause'; id?: string; consumerId: string }
  | { type: 'consumer-layers'; id?: string; consumerId: string; spatialLayer: number; temporalLayer?: number };

export const SIGNALING_REQUEST_TYPES = [
  'media-join',
  'transport-create',
  'transport-connect',
  'transport-restart-ice',
  'media-ready',
  'produce',
  'producer-pause',
  'producer-resume',
  'producer-close',
  'consumer-resume',
  'consumer-pause',
  'consumer-layers',
] as const satisfies readonly SignalingRequest['type'][];
// pure: a bundle that never asks (the browser's) leaves the set and its list out
export const SIGNALING_TYPES: ReadonlySet<string> = /* @__PURE__ */ new Set(SIGNALING_REQUEST_TYPES);
/** The list names every signaling request too (`satisfies` keeps anything else out of it). */
type Holds<T extends true> = T;
type AllSignalingListed = Holds<Exclude<SignalingRequest['type'], (typeof SIGNALING_REQUEST_TYPES)[number]> extends never ? true : false>;

export type ClientMessage = RoomCommand | SignalingRequest;
export type ClientMessageType = ClientMessage['type'];
/** A client message as the page writes it: the socket adds the `id`. */
export type Command<T extends ClientMessageType = ClientMessageType> = T extends ClientMessageType ? Omit<Extract<ClientMessage, { type: T }>, 'id'> : never;

// ---- server to client: acks ----------------------------------------------------------------------

/** An error as the API's catalog gives it (docs/api.md). */
export interface ProtocolError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

type Empty = Record<string, never>;

/** What an ack carries besides `type`, `id` and `ok`, by command (docs/room-protocol.md, the "result" columns). */
export interface AckResults {
  ping: Empty;
  leave: { left: string[] };
  end: { status: MeetingStatus; endedReason: EndedReason | null };
  remove: { left: string[] };
  mute: Empty;
  'mute-all': { muted: string[] };
  'allow-unmute': Empty;
  'ask-unmute': Empty;
  'raise-hand': { raisedAt: string | null };
  'lower-hand': { lowered: string[] };
  'lower-all-hands': { lowered: string[] };
  floor: Empty;
  lock: { locked: boolean };
  'open-poll': { poll: PollView };
  'answer-poll': Empty;
  'close-poll': { poll: PollView; results: PollResults };
  'share-poll': { poll: PollView; results: PollResults };
  'ask-question': { question: QuestionView };
  'upvote-question': { upvotes: number };
  'answer-question': { question: QuestionView };
  'dismiss-question': Empty;
  admit: WaitingEntryResult;
  deny: WaitingEntryResult;
  'media-join': { routerRtpCapabilities: MediasoupObject };
  'transport-create': { transportId: string; iceParameters: MediasoupObject; iceCandidates: MediasoupObject[]; dtlsParameters: MediasoupObject };
  'transport-connect': Empty;
  'transport-restart-ice': { iceParameters: MediasoupObject };
  'media-ready': { consumers: number };
  produce: { producerId: string; paused: boolean };
  'producer-pause': Empty;
  'producer-resume': Empty;
  'producer-close': Empty;
  'consumer-resume': Empty;
  'consumer-pause': Empty;
  'consumer-layers': Empty;
}
export type AckResult<T extends ClientMessageType> = AckResults[T];

/** A waiting-room entry as `admit` and `deny` answer it. */
export interface WaitingEntryResult {
  queueId: string;
  status: WaitingStatus;
  requestedAt: string;
  admittedAt: string | null;
}

export type Ack =
  | { type: 'ack'; id: string | null; ok: true; [field: string]: unknown }
  | { type: 'ack'; id: string | null; ok: false; error: ProtocolError };

// ---- server to client: media events ---------------------------------------------------------------

export const PRODUCER_PAUSE_REASONS = ['muted-by-host', 'floor', 'entry', 'policy'] as const;
export type ProducerPauseReason = (typeof PRODUCER_PAUSE_REASONS)[number];

/** Media events the media rooms send to participants. */
export type MediaEvent =
  | {
      type: 'consumer-new';
      consumerId: string;
      producerId: string;
      participantId: string;
      source: MediaSource;
      kind: MediaKind;
      rtpParameters: MediasoupObject;
      consumerType: string;
      producerPaused: boolean;
    }
  | { type: 'consumer-closed'; consumerId: string }
  | { type: 'consumer-paused'; consumerId: string }
  | { type: 'consumer-resumed'; consumerId: string }
  | { type: 'consumer-layers'; consumerId: string; spatialLayer: number | null; temporalLayer: number | null }
  /** To the producer's owner: the server paused or closed it (a host mute, lecture mode, the entry mute, a setting). */
  | { type: 'producer-paused'; producerId: string; source: MediaSource; reason: ProducerPauseReason }
  | { type: 'producer-closed'; producerId: string; source: MediaSource; reason: ProducerPauseReason }
  /** Who sends what, to everyone, whenever it changes: source -> 'on' | 'off' (paused). */
  | { type: 'media-state'; participants: { participantId: string; sources: Partial<Record<MediaSource, 'on' | 'off'>> }[] }
  | { type: 'active-speaker'; participantId: string | null }
  /** 0 (no connection) to 5 (excellent), from transport, producer and consumer scores; to everyone. */
  | { type: 'network-quality'; participants: { participantId: string; quality: number }[] };

// ---- server to client: the room and the waiting room ---------------------------------------------

/** What a socket hears when the room's media was placed or moved: (re)join the media (`media-join`, new transports, produce again). */
export interface MediaPlacedMessage {
  type: 'media';
  rev: number;
  available: boolean;
}

/** Once, after the socket joined the room. */
export interface JoinedMessage {
  type: 'joined';
  participantId: string;
  roster: RosterEntry[];
  settings: ClientSettings;
  locked: boolean;
  classroom: ClassroomState;
  media: { rev: number; available: boolean };
}

/** Someone waiting to be let in, as hosts and cohosts see them. */
export interface WaitingListEntry {
  queueId: string;
  userId: string | null;
  name: string;
  role: UserRole;
  requestedAt: string;
}

/** To hosts and cohosts: everyone still waiting, oldest first. */
export interface WaitingListMessage {
  type: 'waiting-room';
  entries: WaitingListEntry[];
}

/** To a waiting page's socket: that it waits, then the outcome. */
export type WaitingMessage =
  | { type: 'waiting'; queueId: string }
  | { type: 'admitted'; queueId: string }
  | { type: 'denied'; queueId: string }
  | { type: 'expired'; queueId: string; reason: 'timeout' | 'meeting_ended' };

/** The room refused the join; the socket closes with 4004 `refused` (or 4002 when the meeting ended). */
export interface ErrorMessage {
  type: 'error';
  error: ProtocolError;
}

/** The room's own messages as a socket sees them: `media` is told as MediaPlacedMessage (where the media lives stays the server's). */
export type RoomEvent = Exclude<RoomMessage, { type: 'media' }>;

/** Everything a room socket hears. */
export type ServerMessage = Ack | JoinedMessage | RoomEvent | MediaPlacedMessage | MediaEvent | WaitingListMessage | WaitingMessage | ErrorMessage;

// ---- close codes --------------------------------------------------------------------------------

/** Close codes of the room socket (4000-4999 are the application's; 1008 is the standard policy violation). */
export const CLOSE_CODES = {
  left: 4000,
  removed: 4001,
  meeting_ended: 4002,
  user_deactivated: 4003,
  refused: 4004,
  /** A newer socket of the same session took over (one live socket per session and device). */
  replaced: 4005,
  unauthorized: 4401,
  /** Reconnect, to any server. */
  server_shutdown: 4503,
  /** Too many commands, or too many refused ones: the socket was abusing the room. */
  abuse: 1008,
} as const;
export type CloseReason = keyof typeof CLOSE_CODES;

const REASONS = new Map<number, CloseReason>(Object.entries(CLOSE_CODES).map(([reason, code]) => [code, reason as CloseReason]));

/** The reason of a close code the server gives; null for any other close (a dropped connection). */
export const closeReason = (code: number): CloseReason | null => REASONS.get(code) ?? null;
