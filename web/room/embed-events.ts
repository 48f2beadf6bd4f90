import type { PollView, RosterEntry } from '../../src/core/room.ts';
import type { EmbedEvent, EmbedParticipant, EmbedPoll } from '../shared/embed-protocol.ts';
import { me, MEDIA_ERROR_TEXT, type Action, type State } from './reducer.ts';

/**
 * The SDK events (docs/sdk.md) a message means, read from the state before and after it: pure, like the
 * reducer, so what the customer's page hears is tested without a browser. The controller posts them.
 */

const participant = (p: RosterEntry): EmbedParticipant => ({ id: p.participantId, name: p.name, role: p.roomRole });
const poll = (p: PollView): EmbedPoll => ({ id: p.pollId, question: p.question, type: p.type, quiz: p.quiz });

/** A new roster: joins (others'), hands raised and lowered, leaves. */
function rosterEvents(before: State, after: State): EmbedEvent[] {
  const out: EmbedEvent[] = [];
  const was = new Map(before.roster.map((p) => [p.participantId, p]));
  const is = new Set(after.roster.map((p) => p.participantId));
  for (const p of after.roster) {
    const w = was.get(p.participantId);
    if (!w && p.participantId !== after.participantId) out.push({ event: 'participant-joined', data: { participant: participant(p) } });
    if (!!w?.handRaisedAt !== !!p.handRaisedAt && (w || p.handRaisedAt)) out.push({ event: p.handRaisedAt ? 'hand-raised' : 'hand-lowered', data: { participant: participant(p) } });
  }
  for (const p of before.roster) if (!is.has(p.participantId)) out.push({ event: 'participant-left', data: { participant: participant(p) } });
  return out;
}

/**
 * The polls a `joined` brings: one open when the user came in is as new to them as one opened later.
 * A reconnect's `joined` tells only what changed while the socket was down (a poll opened or closed
 * meanwhile); the polls the page already knew are not told again.
 */
function classroomPollEvents(before: State, after: State): EmbedEvent[] {
  const out: EmbedEvent[] = [];
  for (const p of after.polls) {
    const was = before.polls.find((x) => x.pollId === p.pollId);
    if (!was && p.status === 'OPEN') out.push({ event: 'poll-opened', data: { poll: poll(p) } });
    if (p.status === 'CLOSED' && was?.status === 'OPEN') out.push({ event: 'poll-closed', data: { poll: poll(p) } });
  }
  return out;
}

export function embedEvents(before: State, m: Action, after: State): EmbedEvent[] {
  switch (m.type) {
    case 'joined': {
      const self = me(after);
      const meeting = after.session?.meeting;
      // a reconnect joins again: the customer's page heard `joined` once
      const joined: EmbedEvent[] = before.participantId === null && self && meeting ? [{ event: 'joined', data: { participant: participant(self), meeting: { id: meeting.id, title: meeting.title } } }] : [];
      const recording: EmbedEvent[] = after.recording && after.recording.recordingId !== before.recording?.recordingId ? [{ event: 'recording-started', data: { recordingId: after.recording.recordingId } }] : [];
      return [...joined, ...classroomPollEvents(before, after), ...recording];
    }
    case 'roster':
      // a roster before this page's own `joined` is the room as it was: nobody joined it since
      return before.participantId === null ? [] : rosterEvents(before, after);
    case 'locked':
      return before.roomLocked === after.roomLocked ? [] : [{ event: after.roomLocked ? 'room-locked' : 'room-unlocked', data: {} }];
    case 'poll': {
      const was = before.polls.find((x) => x.pollId === m.poll.pollId);
      if (!was && m.poll.status === 'OPEN') return [{ event: 'poll-opened', data: { poll: poll(m.poll) } }];
      if (was?.status === 'OPEN' && m.poll.status === 'CLOSED') return [{ event: 'poll-closed', data: { poll: poll(m.poll) } }];
      return [];
    }
    case 'question': {
      const q = m.question;
      const was = before.questions.find((x) => x.questionId === q.questionId);
      if (was?.status !== 'OPEN' || q.status !== 'ANSWERED') return [];
      return [{ event: 'question-answered', data: { question: { id: q.questionId, text: q.text, answer: q.answer, answeredLive: q.answeredLive, yours: before.ownQuestions.includes(q.questionId) } } }];
    }
    case 'active-speaker': {
      if (before.activeSpeaker === after.activeSpeaker) return [];
      const p = after.roster.find((x) => x.participantId === after.activeSpeaker);
      return [{ event: 'active-speaker', data: { participant: p ? participant(p) : null } }];
    }
    case 'paged':
      return before.page === after.page && before.pages === after.pages ? [] : [{ event: 'page-changed', data: { page: after.page, pages: after.pages } }];
    case 'recording': {
      const was = before.recording?.recordingId ?? null;
      const is = after.recording?.recordingId ?? null;
      if (was === is) return [];
      return [...(was ? [{ event: 'recording-stopped' as const, data: { recordingId: was } }] : []), ...(is ? [{ event: 'recording-started' as const, data: { recordingId: is } }] : [])];
    }
    case 'chat': {
      const c = m.message;
      if (before.chat.some((x) => x.messageId === c.messageId)) return [];
      return [{ event: 'chat-message', data: { message: { id: c.messageId, from: { id: c.participantId, name: c.name, role: c.roomRole }, text: c.text, sentAt: c.sentAt, private: c.privateWith !== null } } }];
    }
    case 'media-error':
      return before.mediaError === after.mediaError ? [] : [{ event: 'media-error', data: { code: after.mediaError, message: after.mediaError ? MEDIA_ERROR_TEXT[after.mediaError] : null } }];
    case 'error':
      return [{ event: 'error', data: { code: m.error.code, message: after.outcome?.text ?? m.error.message } }];
    default:
      return [];
  }
}
