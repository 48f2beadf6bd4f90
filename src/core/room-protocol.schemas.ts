import { z } from 'zod';
import { MEDIA_SOURCES } from './room-access.ts';
import { draftProblem, POLL_LIMITS, POLL_TYPES, QUESTION_LIMITS } from './classroom.ts';
import { CHAT_LIMITS, CHAT_MODES, REACTIONS } from './chat.ts';
import { MEDIA_ERROR_CODES, MEDIA_KINDS, PROTOCOL_LIMITS, TRANSPORT_DIRECTIONS, VIEW_SOURCES, type ClientMessage, type RoomCommand, type SignalingRequest } from './room-protocol.ts';

/**
 * The zod schemas of the room protocol's client messages: the server parses every frame with them
 * (http/ws/gateway.ts). Server only: the browser imports the types of room-protocol.ts, and each schema
 * here is checked at compile time to parse to exactly one of them, so the two cannot drift.
 */

/** Identical types: an optional field on one side only, or a wider or narrower one, is a difference. */
type Exactly<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** The message types whose schema and type differ (a union's difference is unreadable as a whole). */
type Differing<A extends { type: string }, B extends { type: string }> = {
  [K in A['type'] | B['type']]: Exactly<Extract<A, { type: K }>, Extract<B, { type: K }>> extends true ? never : K;
}[A['type'] | B['type']];

/** `parsesTo<T>()(schema)`: the schema, which fails to compile, naming the messages that differ, unless it parses to exactly T. */
const parsesTo =
  <T extends { type: string }>() =>
  <S extends z.ZodType<{ type: string }>>(schema: S & (Exactly<z.output<S>, T> extends true ? unknown : { messagesThatDiffer: Differing<z.output<S>, T> })): S =>
    schema;

const cid = z.string().max(PROTOCOL_LIMITS.idChars).optional();
const ref = z.string().min(1).max(PROTOCOL_LIMITS.refChars);
/** mediasoup checks its own objects (RTP parameters, capabilities, DTLS parameters); here only their outline. */
const mediasoupObject = z.looseObject({});
const optionIndexes = z.array(z.number().int().min(0).max(POLL_LIMITS.maxOptions - 1)).max(POLL_LIMITS.maxOptions);
const pixels = z.number().min(0).max(PROTOCOL_LIMITS.tilePixels);
const viewTile = z.object({ participantId: ref, source: z.enum(VIEW_SOURCES), width: pixels, height: pixels });

/** A host's draft is checked here, before it reaches an actor: the options and the correct ones fit the poll's type. */
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

const roomCommands = [
  z.object({ type: z.literal('ping'), id: cid }),
  z.object({ type: z.literal('leave'), id: cid }),
  z.object({ type: z.literal('end'), id: cid }),
  z.object({ type: z.literal('remove'), id: cid, participantId: ref }),
  z.object({ type: z.literal('mute'), id: cid, participantId: ref }),
  z.object({ type: z.literal('mute-all'), id: cid }),
  z.object({ type: z.literal('allow-unmute'), id: cid, participantId: ref }),
  z.object({ type: z.literal('allow-unmute-all'), id: cid }),
  z.object({ type: z.literal('ask-unmute'), id: cid }),
  z.object({ type: z.literal('raise-hand'), id: cid }),
  z.object({ type: z.literal('lower-hand'), id: cid, participantId: ref.optional() }),
  z.object({ type: z.literal('lower-all-hands'), id: cid }),
  z.object({ type: z.literal('floor'), id: cid, participantId: ref, give: z.boolean() }),
  z.object({ type: z.literal('lock'), id: cid, locked: z.boolean() }),
  z.object({ type: z.literal('spotlight'), id: cid, participantId: ref.nullable() }),
  openPoll,
  z.object({ type: z.literal('answer-poll'), id: cid, pollId: ref, choices: optionIndexes.optional(), text: z.string().max(POLL_LIMITS.answerChars).optional() }),
  z.object({ type: z.literal('close-poll'), id: cid, pollId: ref, share: z.boolean().optional() }),
  z.object({ type: z.literal('share-poll'), id: cid, pollId: ref }),
  z.object({ type: z.literal('ask-question'), id: cid, text: z.string().trim().min(1).max(QUESTION_LIMITS.textChars), anonymous: z.boolean().optional() }),
  z.object({ type: z.literal('upvote-question'), id: cid, questionId: ref }),
  z.object({ type: z.literal('answer-question'), id: cid, questionId: ref, answer: z.string().trim().min(1).max(QUESTION_LIMITS.answerChars).optional() }),
  z.object({ type: z.literal('dismiss-question'), id: cid, questionId: ref }),
  z.object({ type: z.literal('admit'), id: cid, queueId: ref }),
  z.object({ type: z.literal('deny'), id: cid, queueId: ref }),
  z.object({ type: z.literal('chat-send'), id: cid, text: z.string().trim().min(1).max(CHAT_LIMITS.textChars), privateTo: ref.optional() }),
  z.object({ type: z.literal('chat-delete'), id: cid, messageId: ref }),
  z
    .object({ type: z.literal('chat-settings'), id: cid, chat: z.enum(CHAT_MODES).optional(), privateChatToHosts: z.boolean().optional() })
    .refine((m) => m.chat !== undefined || m.privateChatToHosts !== undefined, { message: 'give chat, privateChatToHosts or both' }),
  z.object({ type: z.literal('react'), id: cid, emoji: z.enum(REACTIONS) }),
  z.object({ type: z.literal('start-recording'), id: cid }),
  z.object({ type: z.literal('stop-recording'), id: cid }),
  z.object({ type: z.literal('pause-recording'), id: cid, paused: z.boolean() }),
] as const;

const signalingRequests = [
  z.object({ type: z.literal('media-join'), id: cid, resume: z.boolean().optional() }),
  z.object({ type: z.literal('transport-create'), id: cid, direction: z.enum(TRANSPORT_DIRECTIONS) }),
  z.object({ type: z.literal('transport-connect'), id: cid, transportId: ref, dtlsParameters: mediasoupObject }),
  z.object({ type: z.literal('transport-restart-ice'), id: cid, transportId: ref }),
  z.object({ type: z.literal('media-ready'), id: cid, rtpCapabilities: mediasoupObject }),
  z.object({
    type: z.literal('produce'),
    id: cid,
    transportId: ref,
    kind: z.enum(MEDIA_KINDS),
    source: z.enum(MEDIA_SOURCES),
    rtpParameters: mediasoupObject,
    paused: z.boolean().optional(),
  }),
  z.object({ type: z.literal('producer-pause'), id: cid, producerId: ref }),
  z.object({ type: z.literal('producer-resume'), id: cid, producerId: ref }),
  z.object({ type: z.literal('producer-close'), id: cid, producerId: ref }),
  z.object({ type: z.literal('media-resync'), id: cid }),
  z.object({ type: z.literal('stop-camera'), id: cid, participantId: ref }),
  z.object({ type: z.literal('view'), id: cid, tiles: z.array(viewTile).max(PROTOCOL_LIMITS.viewTiles), audioOnly: z.boolean().optional() }),
  z.object({ type: z.literal('consumer-ready'), id: cid, consumerId: ref }),
  z.object({ type: z.literal('consumer-close'), id: cid, consumerId: ref }),
  z.object({ type: z.literal('captions'), id: cid, on: z.boolean() }),
  z.object({
    type: z.literal('media-report'),
    id: cid,
    error: z.enum(MEDIA_ERROR_CODES).nullable(),
    relayed: z.boolean(),
    rttMs: z.number().min(0).max(60_000).nullable(),
    lossDown: z.number().min(0).max(1).nullable(),
    lossUp: z.number().min(0).max(1).nullable(),
  }),
] as const;

export const roomCommand = parsesTo<RoomCommand>()(z.discriminatedUnion('type', roomCommands));
export const signalingRequest = parsesTo<SignalingRequest>()(z.discriminatedUnion('type', signalingRequests));
/** Every frame a client sends, as the gateway parses it. */
export const clientMessage = parsesTo<ClientMessage>()(z.discriminatedUnion('type', [...roomCommands, ...signalingRequests]));
