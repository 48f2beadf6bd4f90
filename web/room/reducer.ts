import type { ClassroomState, ClientSettings, PollResults, PollView, QuestionView, RosterEntry } from '../../src/core/room.ts';
import { RoomAccess, type MediaSource, type RoomRole } from '../../src/core/room-access.ts';
import { isCorrect } from '../../src/core/classroom.ts';
import type { MediaHealth, WaitingListEntry } from '../../src/core/room-protocol.ts';
import { describe, type Session } from './api.ts';
import type { LayoutMode, MediaErrorCode } from '../shared/embed-protocol.ts';
import type { Heard } from './socket.ts';
import type { ChatMessageView, Reaction } from '../../src/core/chat.ts';
import type { RoomRecording } from '../../src/core/recording.ts';

/**
 * The page's state and the pure reducer of what the room socket says (and of what the page's own
 * commands were answered): `reduce(state, message)` returns the next state and does nothing else.
 * The controller (controller.ts) holds the side effects: sockets, devices, media, timers, the SDK.
 */

export type Phase = 'loading' | 'app-choice' | 'prejoin' | 'waiting' | 'connecting' | 'room' | 'reconnecting' | 'over' | 'error';

/**
 * The organization's app, offered on a phone of its platform before the exchange (the 'app-choice'
 * phase): app-offer.ts.
 */
export interface AppOffer {
  platform: 'android' | 'ios';
  step: 'verified' | 'legacy' | 'missing';
  /** What "Open in the app" opens (at `missing`: the first link again). */
  href: string;
}

/** An answer this person gave: option indexes, or the text of a FREE_TEXT poll. */
export interface PollAnswer {
  choices: number[];
  text: string | null;
}

export interface State {
  phase: Phase;
  /** Why the visit is over, or what went wrong: a code and the words for it. */
  outcome: { code: string; title: string; text: string } | null;
  session: Session | null;
  participantId: string | null;
  roster: RosterEntry[];
  settings: ClientSettings;
  waitingList: WaitingListEntry[];
  activeSpeaker: string | null;
  /** 0 (lost) to 5 (excellent), per participant */
  quality: Record<string, number>;
  /** Hosts and cohosts: each person's media health (media-health), by participant id. */
  health: Record<string, MediaHealth>;
  /** what each participant sends, from media-state */
  sources: Record<string, Partial<Record<MediaSource, 'on' | 'off'>>>;
  /** short messages for the user (and screen readers) */
  notice: string | null;
  /** media the server said is available for the room */
  mediaAvailable: boolean;
  /** the newest placement of the room's media this page heard of: a higher one restarts media */
  mediaRev: number;
  /** the user chose these on the pre-join screen (and toggles them in the room) */
  micOn: boolean;
  camOn: boolean;
  screenOn: boolean;
  /** a host allowed unmuting after a mute */
  unmuteAllowed: boolean;
  /** the user asked to unmute and is waiting for a host */
  askedToUnmute: boolean;
  /** a host locked the room: nobody new may join */
  roomLocked: boolean;
  /** the organization's app, offered in the 'app-choice' phase */
  appOffer: AppOffer | null;
  /** polls and Q&A as this person sees them (hosts: every poll's results; others: shared ones) */
  polls: PollView[];
  pollResults: Record<string, PollResults>;
  /** polls this person answered, with what they chose */
  answers: Record<string, PollAnswer>;
  questions: QuestionView[];
  upvoted: string[];
  ownQuestions: string[];
  redirectAt: number | null;
  /** Who a host put in the spotlight (big on every page), or null. */
  spotlight: string | null;
  /** Whom this user pinned (big on their page only), or null. */
  pinned: string | null;
  layoutMode: LayoutMode;
  /** The page of tiles shown (1-based) and how many there are, as the stage last laid them out (layout.ts). */
  page: number;
  pages: number;
  /** People who spoke, the most recent first (the first page follows them: layout.ts). */
  speakers: string[];
  /** This user receives no video (their choice, or the page's offer taken on a poor connection). */
  audioOnly: boolean;
  /** The page offers audio only: this user's connection stayed poor (quality-watch.ts). */
  audioOnlyOffered: boolean;
  /** This user's audio and video cannot get through their network, and why (media.ts); null when they can. */
  mediaError: MediaErrorCode | null;
  /** The chat as this person sees it, oldest first, and how many arrived since they last looked. */
  chat: ChatMessageView[];
  chatUnread: number;
  /** The first chat-history came (a later one is a reconnect's). */
  chatLoaded: boolean;
  /** Reactions floating over tiles now (each goes after REACTION_SHOW_MS). */
  reactions: { key: number; participantId: string; emoji: Reaction }[];
  /** Hosts and cohosts: the alerts showing (newest last). */
  alerts: Alert[];
  /** Keys for reactions and alerts. */
  seq: number;
  /** A poll opened that this student has not answered: the page pops it up once. */
  pollPrompt: string | null;
  /** The recording in progress (null: the class is not being recorded). */
  recording: RoomRecording | null;
  /**
   * Live captions (CC): on for this person, the last lines shown over the stage, and why they cannot be
   * had when the server refused them (the plan, the organization's switch, the engine, the language).
   */
  captions: { on: boolean; lines: CaptionLine[]; unavailable: string | null; offered: boolean };
}

/** A caption line over the stage: who spoke and what the engine heard. */
export interface CaptionLine {
  key: number;
  participantId: string;
  name: string;
  text: string;
}

/** Caption lines shown at once (the oldest go first). */
export const CAPTION_LINES = 3;

/**
 * What hosts and cohosts are told with every panel closed (a toast with the action): a hand went up,
 * someone knocks at the waiting room, a new question, someone refused at the locked door.
 */
export type Alert = { key: number } & (
  | { kind: 'hand'; participantId: string; name: string }
  | { kind: 'waiting'; queueId: string; name: string }
  | { kind: 'question'; questionId: string; name: string | null; text: string }
  | { kind: 'knock'; userId: string; name: string }
);
/** An alert before it has its key. */
type NewAlert = Alert extends infer A ? (A extends Alert ? Omit<A, 'key'> : never) : never;

/** Messages a page keeps (the newest; the API has them all). */
const CHAT_KEPT = 500;
/** Alerts shown at once: more would hide the stage; the oldest go first. */
const ALERTS_SHOWN = 4;

/** What the room tells a person whose media cannot get through, and what to try (the SDK's `media-error` carries it too). */
export const MEDIA_ERROR_TEXT: Record<MediaErrorCode, string> = {
  media_blocked: "Your network is blocking the class's audio and video. Try another network (a phone's hotspot works), or ask your school's IT to allow this class's media server.",
  relay_unreachable: "Your network is blocking the class's audio and video, and the class's relay could not be reached either. Try another network (a phone's hotspot works), or ask your school's IT to allow TCP port 443 to the class's relay.",
  ice_failed: "The class's audio and video could not get through your network. Reload the page; if it happens again, try another network or ask your school's IT.",
};

/** How many recent speakers the page remembers: more than a page holds. */
const SPEAKERS_KEPT = 32;

export const initialState: State = {
  phase: 'loading',
  outcome: null,
  session: null,
  participantId: null,
  roster: [],
  settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true },
  waitingList: [],
  activeSpeaker: null,
  quality: {},
  health: {},
  sources: {},
  notice: null,
  mediaAvailable: false,
  mediaRev: 0,
  micOn: true,
  camOn: true,
  screenOn: false,
  unmuteAllowed: false,
  askedToUnmute: false,
  roomLocked: false,
  appOffer: null,
  polls: [],
  pollResults: {},
  answers: {},
  questions: [],
  upvoted: [],
  ownQuestions: [],
  redirectAt: null,
  spotlight: null,
  pinned: null,
  layoutMode: 'grid',
  page: 1,
  pages: 1,
  speakers: [],
  audioOnly: false,
  audioOnlyOffered: false,
  mediaError: null,
  chat: [],
  chatUnread: 0,
  chatLoaded: false,
  reactions: [],
  alerts: [],
  seq: 0,
  pollPrompt: null,
  recording: null,
  captions: { on: false, lines: [], unavailable: null, offered: false },
};

/** What the page's own commands were answered, as the reducer takes it (the rest of their answers are server messages' shapes). */
export type PageAction =
  | { type: 'unmute-asked' }
  | { type: 'poll-answered'; pollId: string; answer: PollAnswer }
  | { type: 'question-asked'; question: QuestionView }
  | { type: 'question-upvoted'; questionId: string }
  | { type: 'pin'; participantId: string | null }
  | { type: 'set-layout'; mode: LayoutMode }
  /** The user (or the SDK) asked for a page. */
  | { type: 'set-page'; page: number }
  /** The stage laid out this page of that many (after clamping the page asked for). */
  | { type: 'paged'; page: number; pages: number }
  | { type: 'audio-only'; on: boolean }
  | { type: 'offer-audio-only'; offered: boolean }
  /** This user's media stopped getting through (a code), or gets through again (null). */
  | { type: 'media-error'; code: MediaErrorCode | null }
  /** The user opened the chat: nothing unread. */
  | { type: 'chat-read' }
  | { type: 'reaction-gone'; key: number }
  | { type: 'alert-gone'; key: number }
  /** The page popped up the poll it was prompted to. */
  | { type: 'poll-prompted' }
  /** Captions were turned on or off, or refused (`unavailable`: why). */
  | { type: 'captions-set'; on: boolean; unavailable: string | null };

export type Action = Heard | PageAction;

/** What this person's role may do in the room, as RoomAccess decides it (the server decides the same again). */
export interface Access {
  role: RoomRole;
  /** Hosts and cohosts: the host controls (waiting list, mute all, lock, polls, answering questions, ending). */
  host: boolean;
  /** Sends audio and video at all (a VIEWER does not). */
  send: boolean;
  shareScreen: boolean;
}

export function access(s: Pick<State, 'session' | 'settings'>): Access {
  const role = s.session?.role ?? 'PARTICIPANT';
  return {
    role,
    host: RoomAccess.isHost(role),
    send: RoomAccess.sends(role) === null,
    shareScreen: RoomAccess.produce('screen', role, s.settings) === null,
  };
}

/** This person's roster entry. */
export const me = (s: Pick<State, 'roster' | 'participantId'>): RosterEntry | undefined => s.roster.find((p) => p.participantId === s.participantId);

/** The settings of the room, as the session's meeting gives them before the room socket does. */
export function sessionSettings(s: Session, was: ClientSettings): ClientSettings {
  const { muteOnEntry, lectureMode, allowStudentScreenShare, chat, privateChatToHosts } = s.meeting.settings;
  return { ...was, muteOnEntry, lectureMode, allowStudentScreenShare, chat, privateChatToHosts };
}

/** An alert for hosts and cohosts (others get none); one per subject (a person's hand, an entry, a question). */
function alert(s: State, a: NewAlert): State {
  if (!access(s).host) return s;
  const same = (x: Alert) => x.kind === a.kind && JSON.stringify({ ...x, key: 0 }) === JSON.stringify({ ...a, key: 0 });
  const alerts = [...s.alerts.filter((x) => !same(x)), { ...a, key: s.seq + 1 } as Alert].slice(-ALERTS_SHOWN);
  return { ...s, alerts, seq: s.seq + 1 };
}

/** Alerts that no longer stand: a hand lowered, an entry admitted or gone, a question answered. */
const stillStanding = (s: State): State => {
  const alerts = s.alerts.filter(
    (a) =>
      (a.kind !== 'hand' || !!s.roster.find((p) => p.participantId === a.participantId)?.handRaisedAt) &&
      (a.kind !== 'waiting' || s.waitingList.some((e) => e.queueId === a.queueId)) &&
      (a.kind !== 'question' || s.questions.some((q) => q.questionId === a.questionId && q.status === 'OPEN')),
  );
  return alerts.length === s.alerts.length ? s : { ...s, alerts };
};

const upsert = <T>(list: T[], item: T, same: (x: T) => boolean): T[] => (list.some(same) ? list.map((x) => (same(x) ? item : x)) : [...list, item]);

/** The room's polls and questions as a (re)join gives them; what this page remembers of its own answers stays. */
function classroom(s: State, k: ClassroomState): State {
  const answers: State['answers'] = {};
  for (const id of k.answeredPolls) answers[id] = s.answers[id] ?? { choices: [], text: null };
  for (const p of k.polls) if (p.status === 'CLOSED' && s.answers[p.pollId]) answers[p.pollId] = s.answers[p.pollId]!;
  return {
    ...s,
    polls: k.polls,
    pollResults: Object.fromEntries(k.pollResults.map((r) => [r.pollId, r])),
    answers,
    questions: k.questions,
    upvoted: k.upvotedQuestions,
    ownQuestions: [...new Set([...s.ownQuestions, ...k.ownQuestions])],
  };
}

export function reduce(s: State, m: Action): State {
  switch (m.type) {
    case 'joined':
      return {
        ...classroom(s, m.classroom),
        phase: 'room',
        participantId: m.participantId,
        roster: m.roster,
        settings: m.settings,
        mediaAvailable: m.media.available,
        mediaRev: Math.max(s.mediaRev, m.media.rev),
        roomLocked: m.locked === true,
        spotlight: m.spotlight ?? null,
        recording: m.recording ?? null,
        notice: m.recording && !s.recording ? 'This class is being recorded.' : s.notice,
        // the Captions control shows only where captions can be had (a server without the field offers them)
        captions: { ...s.captions, offered: (m.captionsUnavailable ?? null) === null },
      };
    case 'roster': {
      let next: State = { ...s, roster: m.participants };
      for (const p of m.participants) {
        const was = s.roster.find((x) => x.participantId === p.participantId);
        if (p.handRaisedAt && was && !was.handRaisedAt && p.participantId !== s.participantId) next = alert(next, { kind: 'hand', participantId: p.participantId, name: p.name });
      }
      return stillStanding(next);
    }
    case 'settings': {
      const next = { ...s, settings: m.settings };
      // the server closes the screen producer itself (reason `policy`); the button goes with it
      return next.screenOn && !access(next).shareScreen ? { ...next, screenOn: false } : next;
    }
    case 'media':
      return m.available && m.rev > s.mediaRev ? { ...s, mediaRev: m.rev, mediaAvailable: true } : s;
    case 'muted':
      return { ...s, micOn: false, unmuteAllowed: false, askedToUnmute: false, notice: 'A host muted your microphone.' };
    case 'unmute-allowed':
      return { ...s, unmuteAllowed: true, askedToUnmute: false, notice: 'A host allows you to unmute.' };
    case 'floor':
      return { ...s, unmuteAllowed: m.give, notice: m.give ? 'You have the floor: you may speak.' : 'The floor was taken back.' };
    case 'locked':
      if (m.locked === s.roomLocked) return s;
      return { ...s, roomLocked: m.locked, notice: m.locked ? 'A host locked the meeting: nobody new can join.' : 'A host unlocked the meeting.' };
    case 'poll': {
      const p = m.poll;
      const was = s.polls.find((x) => x.pollId === p.pollId);
      const next = { ...s, polls: upsert(s.polls, p, (x) => x.pollId === p.pollId) };
      if (access(s).host) return next;
      if (!was && p.status === 'OPEN') return { ...next, pollPrompt: p.pollId, notice: `${p.quiz ? 'A quiz' : 'A poll'} opened: ${p.question}` };
      // a quiz this person answered closes: they hear how they did
      const mine = s.answers[p.pollId];
      if (was?.status === 'OPEN' && p.status === 'CLOSED' && p.quiz && p.correct && mine) {
        return { ...next, pollPrompt: next.pollPrompt === p.pollId ? null : next.pollPrompt, notice: isCorrect(p.correct, mine.choices) ? 'Quiz closed: your answer is correct.' : 'Quiz closed: your answer is incorrect.' };
      }
      return p.status === 'CLOSED' && next.pollPrompt === p.pollId ? { ...next, pollPrompt: null } : next;
    }
    case 'poll-results':
      return { ...s, pollResults: { ...s.pollResults, [m.results.pollId]: m.results } };
    case 'question': {
      const q = m.question;
      const was = s.questions.find((x) => x.questionId === q.questionId);
      const next = stillStanding({ ...s, questions: upsert(s.questions, q, (x) => x.questionId === q.questionId) });
      if (!was && q.status === 'OPEN' && !s.ownQuestions.includes(q.questionId)) return alert(next, { kind: 'question', questionId: q.questionId, name: q.askedBy?.name ?? null, text: q.text });
      if (was?.status !== 'OPEN' || q.status !== 'ANSWERED' || !s.ownQuestions.includes(q.questionId)) return next;
      return { ...next, notice: q.answeredLive ? 'A host is answering your question live.' : 'A host answered your question.' };
    }
    case 'question-upvotes':
      return { ...s, questions: s.questions.map((q) => (q.questionId === m.questionId ? { ...q, upvotes: m.upvotes } : q)) };
    case 'question-dismissed':
      return stillStanding({ ...s, questions: s.questions.filter((q) => q.questionId !== m.questionId) });
    case 'unmute-requested':
      return { ...s, notice: `${m.name} asks to unmute.` };
    case 'waiting-room': {
      let next: State = { ...s, waitingList: m.entries };
      for (const e of m.entries) if (!s.waitingList.some((x) => x.queueId === e.queueId)) next = alert(next, { kind: 'waiting', queueId: e.queueId, name: e.name });
      return stillStanding(next);
    }
    case 'knock':
      return alert(s, { kind: 'knock', userId: m.userId, name: m.name });
    case 'recording': {
      const was = s.recording;
      const is = m.recording;
      const notice =
        is && !was ? 'This class is being recorded.'
        : !is && was ? 'The recording stopped.'
        : is && was && is.paused !== was.paused ? (is.paused ? 'The recording is paused.' : 'The recording goes on.')
        : s.notice;
      return { ...s, recording: is, notice };
    }
    case 'chat-history':
      // a reconnect's history is the whole conversation again: what arrived meanwhile counts as unread
      return {
        ...s,
        chat: m.messages,
        chatLoaded: true,
        chatUnread: s.chatLoaded ? s.chatUnread + m.messages.filter((x) => x.participantId !== s.participantId && !s.chat.some((y) => y.messageId === x.messageId)).length : 0,
      };
    case 'chat': {
      if (s.chat.some((x) => x.messageId === m.message.messageId)) return s;
      const mine = m.message.participantId === s.participantId;
      return { ...s, chat: [...s.chat, m.message].slice(-CHAT_KEPT), chatUnread: mine ? s.chatUnread : s.chatUnread + 1 };
    }
    case 'chat-deleted':
      return { ...s, chat: s.chat.filter((x) => x.messageId !== m.messageId) };
    case 'reaction':
      return { ...s, reactions: [...s.reactions, { key: s.seq + 1, participantId: m.participantId, emoji: m.emoji }].slice(-50), seq: s.seq + 1 };
    case 'media-state': {
      const sources = { ...s.sources };
      for (const p of m.participants) sources[p.participantId] = p.sources;
      return { ...s, sources };
    }
    case 'caption': {
      if (!s.captions.on) return s;
      const line: CaptionLine = { key: s.seq + 1, participantId: m.participantId, name: m.name, text: m.text };
      return { ...s, captions: { ...s.captions, lines: [...s.captions.lines, line].slice(-CAPTION_LINES) }, seq: s.seq + 1 };
    }
    case 'captions-set':
      return { ...s, captions: { ...s.captions, on: m.on, lines: m.on ? s.captions.lines : [], unavailable: m.unavailable } };
    case 'active-speaker': {
      const id = m.participantId;
      const speakers = id === null ? s.speakers : [id, ...s.speakers.filter((x) => x !== id)].slice(0, SPEAKERS_KEPT);
      return { ...s, activeSpeaker: id, speakers };
    }
    case 'spotlight': {
      if (m.participantId === s.spotlight) return s;
      const who = s.roster.find((p) => p.participantId === m.participantId);
      const notice = m.participantId === null ? 'The spotlight was turned off.' : m.participantId === s.participantId ? 'A host put you in the spotlight: everyone sees you big.' : `${who?.name ?? 'Someone'} is in the spotlight.`;
      return { ...s, spotlight: m.participantId, notice };
    }
    case 'network-quality': {
      const quality = { ...s.quality };
      for (const p of m.participants) quality[p.participantId] = p.quality;
      return { ...s, quality };
    }
    case 'media-health':
      return { ...s, health: Object.fromEntries(m.participants.map((p) => [p.participantId, p])) };
    case 'error': {
      const [title, text] = describe(m.error.code);
      return { ...s, phase: 'error', outcome: { code: m.error.code, title, text } };
    }
    case 'unmute-asked':
      return { ...s, askedToUnmute: true, notice: 'The hosts were asked to let you unmute.' };
    case 'poll-answered':
      return { ...s, answers: { ...s.answers, [m.pollId]: m.answer }, notice: 'Your answer was sent.' };
    case 'question-asked': {
      const q = m.question;
      const questions = s.questions.some((x) => x.questionId === q.questionId) ? s.questions : [...s.questions, q];
      return { ...s, ownQuestions: [...s.ownQuestions, q.questionId], questions };
    }
    case 'question-upvoted':
      return { ...s, upvoted: [...s.upvoted, m.questionId] };
    case 'pin':
      return { ...s, pinned: m.participantId === s.participantId ? null : m.participantId };
    case 'set-layout':
      return { ...s, layoutMode: m.mode };
    case 'set-page':
      return { ...s, page: Math.max(1, Math.floor(m.page) || 1) };
    case 'paged':
      return m.page === s.page && m.pages === s.pages ? s : { ...s, page: m.page, pages: m.pages };
    case 'audio-only':
      return {
        ...s,
        audioOnly: m.on,
        audioOnlyOffered: false,
        notice: m.on ? 'Audio only: you hear everyone and receive no video.' : 'Video is back on.',
      };
    case 'offer-audio-only':
      return { ...s, audioOnlyOffered: m.offered && !s.audioOnly };
    case 'media-error':
      return m.code === s.mediaError ? s : { ...s, mediaError: m.code };
    case 'chat-read':
      return s.chatUnread === 0 ? s : { ...s, chatUnread: 0 };
    case 'reaction-gone':
      return { ...s, reactions: s.reactions.filter((r) => r.key !== m.key) };
    case 'alert-gone':
      return { ...s, alerts: s.alerts.filter((a) => a.key !== m.key) };
    case 'poll-prompted':
      return { ...s, pollPrompt: null };
    default:
      // media events for the media objects (media.ts), and the waiting room's messages (waiting.ts)
      return s;
  }
}
