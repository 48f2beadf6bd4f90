import { z } from 'zod';
import { MEDIA_SOURCES } from './room-access.ts';
import { draftProblem, POLL_LIMITS, POLL_TYPES, QUESTION_LIMITS } from './classroom.ts';

/**
 * The room protocol: JSON text frames on `/api/v1/meetings/:slug/media`, defined once here for the
 * gateway, the media rooms and the browser bundle. Every client message may carry an `id`; its answer
 * is `{ type: "ack", id, ok: true, ...result }` or `{ type: "ack", id, ok: false, error }`.
 * docs/room-protocol.md is the prose of this file.
 */

const cid = z.string().max(64).optional();
const ref = z.string().min(1).max(255);
/** mediasoup's own objects (RTP parameters, capabilities, DTLS parameters) are checked by mediasoup; here only their outline. */
const mediasoupObject = z.looseObject({});
const optionIndexes = z.array(z.number().int().min(0).max(POLL_LIMITS.maxOptions - 1)).max(POLL_LIMITS.maxOptions);

/** Hosts and cohosts: a poll (a quiz when `correct` names the right options); YES_NO and TRUE_FALSE bring their own options. */
const openPoll = z
  .object({
    type: z.literal('open-poll'),
    id: cid,
    question: z.string().trim().min(1).max(POLL_LIMITS.questionChars),
    pollType: z.enum(POLL_TYPES),
    anonymous: z.boolean().optional(),
    options: z.array(z.string().trim().min(1).max(POLL_LIMITS.optionChars)).max(POLL_LIMITS.maxOptions).optional(),
    correct: optionIndexes.optional(),
  })
  .superRefine((m, ctx) => {
    const problem = draftProblem({ type: m.pollType, options: m.options ?? [], correct: m.correct ?? [] });
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
  });

// ---- client to server: the room ---------------------------------------------------------------

export const roomCommands = [
  z.object({ type: z.literal('ping'), id: cid }),
  z.object({ type: z.literal('leave'), id: cid }),
  z.object({ type: z.literal('end'), id: cid }),
  z.object({ type: z.literal('remove'), id: cid, participantId: ref }),
  z.object({ type: z.literal('mute'), id: cid, participantId: ref }),
  z.object({ type: z.literal('mute-all'), id: cid }),
  z.object({ type: z.literal('allow-unmute'), id: cid, participantId: ref }),
  z.object({ type: z.literal('ask-unmute'), id: cid }),
  z.object({ type: z.literal('raise-hand'), id: cid }),
  /** Without participantId: your own hand; another's: hosts and cohosts. */
  z.object({ type: z.literal('lower-hand'), id: cid, participantId: ref.optional() }),
  z.object({ type: z.literal('lower-all-hands'), id: cid }),
  z.object({ type: z.literal('floor'), id: cid, participantId: ref, give: z.boolean() }),
  /** Hosts and cohosts: lock the room (nobody new may join) or unlock it. */
  z.object({ type: z.literal('lock'), id: cid, locked: z.boolean() }),
  openPoll,
  /** Participants: the open poll's answer, option indexes (`choices`) or `text` for FREE_TEXT. */
  z.object({ type: z.literal('answer-poll'), id: cid, pollId: ref, choices: optionIndexes.optional(), text: z.string().max(POLL_LIMITS.answerChars).optional() }),
  /** Hosts and cohosts: close the poll (`share`: everyone sees the results), or share a closed one's. */
  z.object({ type: z.literal('close-poll'), id: cid, pollId: ref, share: z.boolean().optional() }),
  z.object({ type: z.literal('share-poll'), id: cid, pollId: ref }),
  /** Anyone in the room: ask (optionally anonymously), upvote another's question. */
  z.object({ type: z.literal('ask-question'), id: cid, text: z.string().trim().min(1).max(QUESTION_LIMITS.textChars), anonymous: z.boolean().optional() }),
  z.object({ type: z.literal('upvote-question'), id: cid, questionId: ref }),
  /** Hosts and cohosts: answer in text, or without `answer` mark it answered live; or dismiss it. */
  z.object({ type: z.literal('answer-question'), id: cid, questionId: ref, answer: z.string().trim().min(1).max(QUESTION_LIMITS.answerChars).optional() }),
  z.object({ type: z.literal('dismiss-question'), id: cid, questionId: ref }),
  z.object({ type: z.literal('admit'), id: cid, queueId: ref }),
  z.object({ type: z.literal('deny'), id: cid, queueId: ref }),
] as const;

// ---- client to server: media signaling (relayed to the node that hosts the room's media) -------

export const TRANSPORT_DIRECTIONS = ['send', 'recv'] as const;
export type TransportDirection = (typeof TRANSPORT_DIRECTIONS)[number];

export const signalingRequests = [
  /** Starts (or restarts, after a `media` message) this participant's media: answers the router's capabilities. */
  z.object({ type: z.literal('media-join'), id: cid }),
  z.object({ type: z.literal('transport-create'), id: cid, direction: z.enum(TRANSPORT_DIRECTIONS) }),
  z.object({ type: z.literal('transport-connect'), id: cid, transportId: ref, dtlsParameters: mediasoupObject }),
  z.object({ type: z.literal('transport-restart-ice'), id: cid, transportId: ref }),
  /** The device's capabilities: from now on the participant receives every producer of the room (consumers start paused). */
  z.object({ type: z.literal('media-ready'), id: cid, rtpCapabilities: mediasoupObject }),
  z.object({
    type: z.literal('produce'),
    id: cid,
    transportId: ref,
    kind: z.enum(['audio', 'video']),
    source: z.enum(MEDIA_SOURCES),
    rtpParameters: mediasoupObject,
    paused: z.boolean().optional(),
  }),
  z.object({ type: z.literal('producer-pause'), id: cid, producerId: ref }),
  z.object({ type: z.literal('producer-resume'), id: cid, producerId: ref }),
  z.object({ type: z.literal('producer-close'), id: cid, producerId: ref }),
  z.object({ type: z.literal('consumer-resume'), id: cid, consumerId: ref }),
  z.object({ type: z.literal('consumer-pause'), id: cid, consumerId: ref }),
  z.object({
    type: z.literal('consumer-layers'),
    id: cid,
    consumerId: ref,
    spatialLayer: z.number().int().min(0).max(2),
    temporalLayer: z.number().int().min(0).max(2).optional(),
  }),
] as const;

export const signalingRequest = z.discriminatedUnion('type', signalingRequests);
export type SignalingRequest = z.infer<typeof signalingRequest>;
export const SIGNALING_TYPES: ReadonlySet<string> = new Set(signalingRequests.map((s) => s.shape.type.value));

export const clientMessage = z.discriminatedUnion('type', [...roomCommands, ...signalingRequests]);
export type ClientMessage = z.infer<typeof clientMessage>;
export type RoomCommand = Exclude<ClientMessage, SignalingRequest>;

// ---- server to client ---------------------------------------------------------------------------

export const PRODUCER_PAUSE_REASONS = ['muted-by-host', 'floor', 'entry', 'policy'] as const;
export type ProducerPauseReason = (typeof PRODUCER_PAUSE_REASONS)[number];

/** Media events the media rooms sends to participants (the room's own messages are the meeting actor's, actors/meeting/meeting.types.ts). */
export const mediaEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('consumer-new'),
    consumerId: z.string(),
    producerId: z.string(),
    participantId: z.string(),
    source: z.enum(MEDIA_SOURCES),
    kind: z.enum(['audio', 'video']),
    rtpParameters: mediasoupObject,
    consumerType: z.string(),
    producerPaused: z.boolean(),
  }),
  z.object({ type: z.literal('consumer-closed'), consumerId: z.string() }),
  z.object({ type: z.literal('consumer-paused'), consumerId: z.string() }),
  z.object({ type: z.literal('consumer-resumed'), consumerId: z.string() }),
  z.object({ type: z.literal('consumer-layers'), consumerId: z.string(), spatialLayer: z.number().nullable(), temporalLayer: z.number().nullable() }),
  /** To the producer's owner: the server paused or closed it (a host mute, lecture mode, the entry mute, a setting). */
  z.object({ type: z.literal('producer-paused'), producerId: z.string(), source: z.enum(MEDIA_SOURCES), reason: z.enum(PRODUCER_PAUSE_REASONS) }),
  z.object({ type: z.literal('producer-closed'), producerId: z.string(), source: z.enum(MEDIA_SOURCES), reason: z.enum(PRODUCER_PAUSE_REASONS) }),
  /** Who sends what, to everyone, whenever it changes: source -> 'on' | 'off' (paused). */
  z.object({
    type: z.literal('media-state'),
    participants: z.array(z.object({ participantId: z.string(), sources: z.partialRecord(z.enum(MEDIA_SOURCES), z.enum(['on', 'off'])) })),
  }),
  z.object({ type: z.literal('active-speaker'), participantId: z.string().nullable() }),
  /** 0 (no connection) to 5 (excellent), from transport, producer and consumer scores; to everyone. */
  z.object({ type: z.literal('network-quality'), participants: z.array(z.object({ participantId: z.string(), quality: z.number().int().min(0).max(5) })) }),
]);
export type MediaEvent = z.infer<typeof mediaEvent>;

/** What a socket hears when the room's media was placed or moved: (re)join the media (`media-join`, new transports, produce again). */
export const mediaPlacedMessage = z.object({ type: z.literal('media'), rev: z.number().int(), available: z.boolean() });

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
  server_shutdown: 4503,
  /** Too many commands, or too many refused ones: the socket was abusing the room. */
  abuse: 1008,
} as const;
export type CloseReason = keyof typeof CLOSE_CODES;
