import t from 'tap';
import type { MeetingReplies } from '../../actors/meeting/meeting.types.ts';
import type { WaitingRoomMessage, WaitingRoomReplies } from '../../actors/waiting-room/waiting-room.types.ts';
import { clientMessage, signalingRequest } from '../../src/core/room-protocol.schemas.ts';
import {
  CLOSE_CODES,
  closeReason,
  SIGNALING_TYPES,
  type AckResults,
  type ClientMessage,
  type WaitingListMessage,
  type WaitingMessage,
} from '../../src/core/room-protocol.ts';

// The room protocol in two modules: its types and constants (zod-free, what the browser imports) and the
// zod schemas the server parses with, checked at compile time to parse to exactly those types
// (src/core/room-protocol.schemas.ts). Here: the constants, the schemas at run time, and, at compile time
// (npm run typecheck), that what the actors send and answer is what the protocol says a socket hears.

/** Each assignable to the other (what a socket hears is a JSON copy of what the actors made). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Result<R> = Omit<R, 'ok'>;

// The waiting room's messages, as its actor makes them (actors/waiting-room/waiting-room.types.ts).
const waitingMessages: Same<WaitingRoomMessage, WaitingListMessage | Exclude<WaitingMessage, { type: 'waiting' }>> = true;
// The acks' results of the room's commands, as the rooms service takes them from the actors' replies (src/services/live/rooms.ts).
const ackResults: [
  Same<AckResults['leave'], Result<MeetingReplies['LEAVE']>>,
  Same<AckResults['end'], Result<MeetingReplies['END']>>,
  Same<AckResults['remove'], Result<MeetingReplies['REMOVE']>>,
  Same<AckResults['mute'], Result<MeetingReplies['MUTE']>>,
  Same<AckResults['mute-all'], Result<MeetingReplies['MUTE_ALL']>>,
  Same<AckResults['allow-unmute'], Result<MeetingReplies['ALLOW_UNMUTE']>>,
  Same<AckResults['ask-unmute'], Result<MeetingReplies['ASK_UNMUTE']>>,
  Same<AckResults['raise-hand'], Pick<MeetingReplies['HAND'], 'raisedAt'>>,
  Same<AckResults['lower-hand'], Pick<MeetingReplies['HAND'], 'lowered'>>,
  Same<AckResults['lower-all-hands'], Result<MeetingReplies['LOWER_ALL_HANDS']>>,
  Same<AckResults['floor'], Result<MeetingReplies['FLOOR']>>,
  Same<AckResults['lock'], Result<MeetingReplies['LOCK']>>,
  Same<AckResults['open-poll'], Result<MeetingReplies['OPEN_POLL']>>,
  Same<AckResults['answer-poll'], Result<MeetingReplies['ANSWER_POLL']>>,
  Same<AckResults['close-poll'], Result<MeetingReplies['CLOSE_POLL']>>,
  Same<AckResults['share-poll'], Result<MeetingReplies['SHARE_POLL']>>,
  Same<AckResults['ask-question'], Result<MeetingReplies['ASK_QUESTION']>>,
  Same<AckResults['upvote-question'], Result<MeetingReplies['UPVOTE_QUESTION']>>,
  Same<AckResults['answer-question'], Result<MeetingReplies['ANSWER_QUESTION']>>,
  Same<AckResults['dismiss-question'], Result<MeetingReplies['DISMISS_QUESTION']>>,
  Same<AckResults['admit'], Result<WaitingRoomReplies['ADMIT']>>,
  Same<AckResults['deny'], Result<WaitingRoomReplies['DENY']>>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

t.test('the actors send and answer what the protocol says (checked by the compiler)', async (t) => {
  t.ok(waitingMessages && ackResults.every(Boolean));
});

t.test('closeReason: the reason of each of the protocol\'s close codes, null for any other', async (t) => {
  for (const [reason, code] of Object.entries(CLOSE_CODES)) t.equal(closeReason(code), reason);
  t.equal(closeReason(1006), null, 'an abnormal close: a dropped connection');
  t.equal(closeReason(1000), null);
});

t.test('SIGNALING_TYPES: exactly the signaling requests the schema knows', async (t) => {
  t.same([...SIGNALING_TYPES].sort(), signalingRequest.options.map((o) => o.shape.type.value).sort());
});

t.test('clientMessage parses every kind of message and refuses what the protocol does not allow', async (t) => {
  const ok: ClientMessage[] = [
    { type: 'ping', id: 'c1' },
    { type: 'lower-hand' },
    { type: 'lower-hand', participantId: 'par_1' },
    { type: 'open-poll', question: 'Ready?', pollType: 'SINGLE_CHOICE', options: ['A', 'B'], correct: [1] },
    { type: 'answer-poll', pollId: 'pol_1', text: 'Yes' },
    { type: 'produce', transportId: 'tr_1', kind: 'video', source: 'camera', rtpParameters: { codecs: [] } },
    { type: 'view', tiles: [{ participantId: 'par_1', source: 'camera', width: 320, height: 180 }], audioOnly: false },
    { type: 'view', tiles: [] },
    { type: 'consumer-ready', consumerId: 'co_1' },
    { type: 'consumer-close', consumerId: 'co_1' },
  ];
  for (const m of ok) t.same(clientMessage.safeParse(m).data, m, m.type);
  const refused: unknown[] = [
    { type: 'ping', id: 'x'.repeat(65) },
    { type: 'remove', participantId: '' },
    { type: 'open-poll', question: 'Ready?', pollType: 'SINGLE_CHOICE', options: ['A'] },
    { type: 'consumer-resume', consumerId: 'co_1' },
    { type: 'view', tiles: [{ participantId: 'par_1', source: 'mic', width: 320, height: 180 }] },
    { type: 'view', tiles: [{ participantId: 'par_1', source: 'camera', width: -1, height: 180 }] },
    { type: 'view', tiles: Array.from({ length: 101 }, (_, i) => ({ participantId: `par_${i}`, source: 'camera', width: 10, height: 10 })) },
    { type: 'produce', transportId: 'tr_1', kind: 'video', source: 'projector', rtpParameters: {} },
    { type: 'teleport' },
  ];
  for (const m of refused) t.notOk(clientMessage.safeParse(m).success, JSON.stringify(m).slice(0, 60));
});
