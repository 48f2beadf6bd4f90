import type { EndedReason, MeetingStatus, UserRole } from './domain.ts';
import type { MediaSource } from './room-access.ts';
import type { PollType } from './classroom.ts';
import type { ChatMessageView, ChatMode, ChatSettings, Reaction } from './chat.ts';
import type { RoomRecording } from './recording.ts';
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
  /** Tiles one `view` may list (a page shows at most a few dozen). */
  viewTiles: 100,
  /** A tile's width or height, in CSS pixels. */
  tilePixels: 16_384,
} as const;

/**
 * The simulcast layers a camera is sent in, lowest first: 1/4, 1/2 and full size of its picture (180p,
 * 360p, 720p from a 720p camera). The page sends these (web/room/media.ts); `view` picks among them.
 */
export const CAMERA_ENCODINGS = [
  { rid: 'r0', scaleResolutionDownBy: 4, maxBitrate: 150_000 },
  { rid: 'r1', scaleResolutionDownBy: 2, maxBitrate: 500_000 },
  { rid: 'r2', scaleResolutionDownBy: 1, maxBitrate: 1_500_000 },
] as const;

/**
 * The layers a shared screen is sent in: half and full size, no quarter (text unreadable at it), more
 * bits at the top. A screen is encoded for detail (`contentHint: 'detail'`) and keeps its resolution
 * when bandwidth is short (its frame rate falls first).
 */
export const SCREEN_ENCODINGS = [
  { rid: 'r0', scaleResolutionDownBy: 2, maxBitrate: 600_000 },
  { rid: 'r1', scaleResolutionDownBy: 1, maxBitrate: 1_800_000 },
] as const;

/** The videos a `view` can show: a camera or a shared screen. */
export const VIEW_SOURCES = ['camera', 'screen'] as const;
export type ViewSource = (typeof VIEW_SOURCES)[number];

/** One tile the page shows: whose video, from which source, at what size on the page (CSS pixels). */
export interface ViewTile {
  participantId: string;
  source: ViewSource;
  width: number;
  height: number;
}

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
  /** Hosts and cohosts: every muted participant may unmute again. */
  | { type: 'allow-unmute-all'; id?: string }
  | { type: 'ask-unmute'; id?: string }
  | { type: 'raise-hand'; id?: string }
  /** Without participantId: your own hand; another's: hosts and cohosts. */
  | { type: 'lower-hand'; id?: string; participantId?: string }
  | { type: 'lower-all-hands'; id?: string }
  | { type: 'floor'; id?: string; participantId: string; give: boolean }
  /** Hosts and cohosts: lock the room (nobody new may join) or unlock it. */
  | { type: 'lock'; id?: string; locked: boolean }
  /** Hosts and cohosts: show one person big on everyone's page (the teacher, a student presenting), or nobody (null). */
  | { type: 'spotlight'; id?: string; participantId: string | null }

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
  | { type: 'deny'; id?: string; queueId: string }
  /**
   * A chat message (src/core/chat.ts says who may write what): to the room, or privately: `privateTo`
   * 'hosts' (a student to the hosts) or a student's participantId (a host to that student).
   */
  | { type: 'chat-send'; id?: string; text: string; privateTo?: string }
  /** Hosts and cohosts: the message leaves everyone's chat (and the API's). */
  | { type: 'chat-delete'; id?: string; messageId: string }
  /** Hosts and cohosts: the meeting's chat settings, changed live (the meeting's settings change with them). */
  | { type: 'chat-settings'; id?: string; chat?: ChatMode; privateChatToHosts?: boolean }
  /** A quick reaction: floats over the sender's tile on every page for a few seconds. */
  | { type: 'react'; id?: string; emoji: Reaction }
  /** Hosts and cohosts: record the class (docs/recordings.md), stop, pause or resume; everyone hears `recording`. */
  | { type: 'start-recording'; id?: string }
  | { type: 'stop-recording'; id?: string }
  | { type: 'pause-recording'; id?: string; paused: boolean };

// ---- client to server: media signaling (relayed to the node that hosts the room's media) -------

export type SignalingRequest =
  /**
   * Starts (or restarts, after a `media` message) this participant's media: answers the router's
   * capabilities and the TURN relays it may use. `resume`: a socket that reconnected within the grace
   * keeps the media it had (answered `resumed: true`; then media-resync); otherwise it starts afresh.
   */
  | { type: 'media-join'; id?: string; resume?: boolean }
  | { type: 'transport-create'; id?: string; direction: TransportDirection }
  | { type: 'transport-connect'; id?: string; transportId: string; dtlsParameters: MediasoupObject }
  | { type: 'transport-restart-ice'; id?: string; transportId: string }
  /** The device's capabilities: from now on the participant receives every producer of the room (consumers start paused). */
  | { type: 'media-ready'; id?: string; rtpCapabilities: MediasoupObject }
  | { type: 'produce'; id?: string; transportId: string; kind: MediaKind; source: MediaSource; rtpParameters: MediasoupObject; paused?: boolean }
  | { type: 'producer-pause'; id?: string; producerId: string }
  | { type: 'producer-resume'; id?: string; producerId: string }
  | { type: 'producer-close'; id?: string; producerId: string }
  /** The client saw a gap in its media events' `seq`: the answer is what it should hold now (MediaResync). */
  | { type: 'media-resync'; id?: string }
  /** Hosts and cohosts: turn a participant's camera off (closed where the media is; they may turn it on again). */
  | { type: 'stop-camera'; id?: string; participantId: string }
  /**
   * What the page shows: the video tiles visible now, with their sizes; every other video is paused for
   * this participant. `audioOnly`: no video at all. The server picks each consumer's layer and priority
   * (docs/room-protocol.md, "What a page receives"). Until the first `view`, every video is received.
   */
  | { type: 'view'; id?: string; tiles: ViewTile[]; audioOnly?: boolean }
  /** The page set up the consumer a `consumer-new` offered: the server may now send it (as the view says). */
  | { type: 'consumer-ready'; id?: string; consumerId: string }
  /** The page will not use this consumer (it could not set it up, say a codec it cannot decode, or it is done with it): the server closes it. */
  | { type: 'consumer-close'; id?: string; consumerId: string }
  /**
   * What the page measures of its own media, every few seconds and when its error changes: hosts see it
   * (media-health) beside what the server measures. `error`: its media cannot get through (MEDIA_ERROR_CODES).
   */
  /**
   * Live captions for this participant (docs/ai-notes.md, "Live captions"): on, the room's current
   * speaker's words come as `caption` messages; off, they stop. Refused (`ai_notes_unavailable`) with
   * the reason when the organization's plan, its AI switch, the server's engine or its language rule them out.
   */
  | { type: 'captions'; id?: string; on: boolean }
  | {
      type: 'media-report';
      id?: string;
      error: MediaErrorCode | null;
      /** Its selected path goes through a TURN relay. */
      relayed: boolean;
      rttMs: number | null;
      /** Loss of what it receives, and of what it sends (as the server's receiver reports say): fractions, 0 to 1. */
      lossDown: number | null;
      lossUp: number | null;
    };

/** Why a person's media cannot get through their network (docs/networks.md): no relay configured and no path, the relays unreachable, or paths found and none connected. */
export const MEDIA_ERROR_CODES = ['ice_failed', 'relay_unreachable', 'media_blocked'] as const;
export type MediaErrorCode = (typeof MEDIA_ERROR_CODES)[number];

/** A page's own measure of its media (media-report); null: not measured. */
export type MediaReport = Omit<Extract<SignalingRequest, { type: 'media-report' }>, 'type' | 'id'>;

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
  'media-resync',
  'stop-camera',
  'view',
  'consumer-ready',
  'consumer-close',
  'media-report',
  'captions',
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
  'allow-unmute-all': { allowed: string[] };
  'ask-unmute': Empty;
  'raise-hand': { raisedAt: string | null };
  'lower-hand': { lowered: string[] };
  'lower-all-hands': { lowered: string[] };
  floor: Empty;
  lock: { locked: boolean };
  spotlight: { participantId: string | null };
  'stop-camera': Empty;
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
  'chat-send': { message: ChatMessageView };
  'chat-delete': Empty;
  'chat-settings': { settings: ChatSettings };
  react: Empty;
  'start-recording': { recording: RoomRecording };
  'stop-recording': { recordingId: string };
  'pause-recording': { paused: boolean };
  'media-join': { routerRtpCapabilities: MediasoupObject; resumed: boolean; iceServers: IceServer[]; iceServersExpireAt: string | null };
  'transport-create': { transportId: string; iceParameters: MediasoupObject; iceCandidates: MediasoupObject[]; dtlsParameters: MediasoupObject };
  'transport-connect': Empty;
  'transport-restart-ice': { iceParameters: MediasoupObject };
  /** `receivesVideo: false`: the device cannot play the room's video codec (`videoCodec`); it receives audio only. */
  'media-ready': { consumers: number; receivesVideo: boolean; videoCodec: string };
  produce: { producerId: string; paused: boolean };
  'producer-pause': Empty;
  'producer-resume': Empty;
  'producer-close': Empty;
  'media-resync': MediaResync;
  view: Empty;
  'consumer-ready': Empty;
  'consumer-close': Empty;
  /** `raised`: the error this report newly raised (counted in aula_media_errors_total). */
  'media-report': { raised: MediaErrorCode | null };
  /** `language`: the organization's, which the captions are in. */
  captions: { on: boolean; language: string | null };
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

/** A TURN relay as RTCPeerConnection takes it (`iceServers`), with this session's coturn REST credentials. */
export interface IceServer {
  urls: string[];
  username: string;
  credential: string;
}

/** New TURN credentials for this socket's media, before the ones it has expire (docs/networks.md). */
export interface TurnCredentialsMessage {
  type: 'turn-credentials';
  iceServers: IceServer[];
  expiresAt: string;
}

// ---- server to client: media events ---------------------------------------------------------------

/** Why the server paused or closed a producer; `stopped-by-host`: a host turned the camera off (stop-camera). */
export const PRODUCER_PAUSE_REASONS = ['muted-by-host', 'floor', 'entry', 'policy', 'stopped-by-host'] as const;
export type ProducerPauseReason = (typeof PRODUCER_PAUSE_REASONS)[number];

/**
 * Media events the media rooms send to participants. Those for one participant carry `seq`: 1, 2, 3...
 * from its media-join; a gap means one was lost on the way (the server's bus delivers at most once):
 * the client asks `media-resync`. Events to everyone (media-state, active-speaker, network-quality) are
 * whole states, carry no `seq`, and the next one mends a lost one.
 */
export type MediaEvent = (
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
  /**
   * To a video producer's owner: the simulcast layers anyone receives, 0 to `maxSpatialLayer`; the sender
   * stops encoding the layers above it (dynacast), and starts again when this rises.
   */
  | { type: 'layers-wanted'; producerId: string; source: MediaSource; maxSpatialLayer: number }
  /** Who sends what, to everyone, whenever it changes: source -> 'on' | 'off' (paused). */
  | { type: 'media-state'; participants: { participantId: string; sources: Partial<Record<MediaSource, 'on' | 'off'>> }[] }
  | { type: 'active-speaker'; participantId: string | null }
  /** 0 (no connection) to 5 (excellent), from transport, producer and consumer scores; to everyone. */
  | { type: 'network-quality'; participants: { participantId: string; quality: number }[] }
  /** To hosts and cohosts, every few seconds while it changes: each person's media health (the people list's details). */
  | { type: 'media-health'; participants: MediaHealth[] }
  /**
   * To those with captions on: what the room's current speaker said in the last second or two (`at`:
   * when that audio began). Each chunk's text is final (`final: true`); nothing of it is stored.
   */
  | { type: 'caption'; participantId: string; name: string; text: string; at: string; final: boolean }
) & { seq?: number };

/** One person's media as hosts see it: what their page reports (MediaReport) and what the server measures. */
export interface MediaHealth extends MediaReport {
  participantId: string;
  /** 0 to 5, as network-quality says. */
  quality: number;
  /** What the server receives from them and sends them now (bits/s, its transports' stats). */
  bitrateUp: number;
  bitrateDown: number;
  /** They receive no video (their choice, or the offer taken on a poor connection). */
  audioOnly: boolean;
}

/** What media-resync answers: everything the participant should hold now, at `seq`. */
export interface MediaResync {
  seq: number;
  /** Every consumer it has on the server, as its consumer-new said (answer consumer-ready again; drop any other). */
  consumers: Extract<MediaEvent, { type: 'consumer-new' }>[];
  /** Its producers as the server holds them (one it has that is not here was closed). */
  producers: { producerId: string; source: MediaSource; paused: boolean; heldBy: ProducerPauseReason | null }[];
  mediaState: Extract<MediaEvent, { type: 'media-state' }>;
}

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
  /** Who is in the spotlight now (null: nobody). */
  spotlight: string | null;
  classroom: ClassroomState;
  media: { rev: number; available: boolean };
  /** The recording in progress (null: the class is not being recorded). */
  recording: RoomRecording | null;
  /**
   * Why this room offers no live captions (the plan, the organization's switch or language, no engine
   * on the server), as a person reads it; null when the page shows the Captions control.
   */
  captionsUnavailable: string | null;
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

/** The chat and reactions, to those who see them (Chat.sees): not the meeting actor's, they are not in its state. */
export type ChatEvent =
  | { type: 'chat'; message: ChatMessageView }
  /** Once after `joined`: the newest messages this person sees (CHAT_LIMITS.history), oldest first. */
  | { type: 'chat-history'; messages: ChatMessageView[] }
  | { type: 'chat-deleted'; messageId: string }
  | { type: 'reaction'; participantId: string; emoji: Reaction };

/** The room's own messages as a socket sees them: `media` is told as MediaPlacedMessage (where the media lives stays the server's). */
export type RoomEvent = Exclude<RoomMessage, { type: 'media' }>;

/** Everything a room socket hears. */
export type ServerMessage = Ack | JoinedMessage | RoomEvent | ChatEvent | MediaPlacedMessage | MediaEvent | TurnCredentialsMessage | WaitingListMessage | WaitingMessage | ErrorMessage;

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
