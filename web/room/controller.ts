import * as api from './api.ts';
import type { ClassroomState, PollResults, PollView, QuestionView, RosterEntry } from '../../src/core/room.ts';
import type { PollType } from '../../src/core/classroom.ts';
import type { RoomRole, Session } from './api.ts';
import { MediaClient, type Source } from './media.ts';
import { CommandError, FINAL_CLOSES, RoomSocket, type ServerMessage } from './socket.ts';
import type { EmbedEventName, EmbedEvents, EmbedParticipant } from '../shared/embed-protocol.ts';

/**
 * The page's state and everything that changes it: the token exchange, the pre-join choices, the
 * waiting room, the room socket (with reconnection), the room's roster and settings, and the media.
 * The views (ui.tsx) render `state` and call the methods; nothing else talks to the server.
 */

/** A roster entry as the room socket sends it (one definition, the actor's). */
export type Participant = RosterEntry;

export interface WaitingEntry {
  queueId: string;
  name: string;
  requestedAt: string;
}

export type Phase = 'loading' | 'app-choice' | 'prejoin' | 'waiting' | 'connecting' | 'room' | 'reconnecting' | 'over' | 'error';

/**
 * The organization's app, offered on a phone of its platform before the exchange (the 'app-choice'
 * phase). On Android the first link is the join URL itself, the one the OS hands a verified app,
 * as an intent pinned to the organization's package: no other app can take it. If that app cannot
 * (an older version), Chrome returns to this page with `app=legacy` and the page offers the spec's
 * `svc://join?token=`, pinned to the same package; if that fails too, `app=missing`. On iOS the link
 * is the join URL (a universal link).
 */
export interface AppOffer {
  platform: 'android' | 'ios';
  step: 'verified' | 'legacy' | 'missing';
  /** What "Open in the app" opens (at `missing`: the first link again). */
  href: string;
}

/** The JSON block of the join page's shell (http/pages/join.ts, JoinBoot): the organization's apps. */
interface JoinBoot {
  apps?: { android?: string | null; ios?: boolean };
}

export interface State {
  phase: Phase;
  /** Why the visit is over, or what went wrong: a code and the words for it. */
  outcome: { code: string; title: string; text: string } | null;
  session: Session | null;
  participantId: string | null;
  roster: Participant[];
  settings: { waitingRoom: boolean; muteOnEntry: boolean; lectureMode: boolean; allowStudentScreenShare: boolean };
  waitingList: WaitingEntry[];
  activeSpeaker: string | null;
  /** 0 (lost) to 5 (excellent), per participant */
  quality: Record<string, number>;
  /** what each participant sends, from media-state */
  sources: Record<string, Partial<Record<Source, 'on' | 'off'>>>;
  /** short messages for the user (and screen readers) */
  notice: string | null;
  /** media the server said is available for the room */
  mediaAvailable: boolean;
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
  answers: Record<string, { choices: number[]; text: string | null }>;
  questions: QuestionView[];
  upvoted: string[];
  ownQuestions: string[];
  redirectAt: number | null;
}

/** A host's new poll, as the form gives it. */
export interface PollDraft {
  question: string;
  pollType: PollType;
  anonymous: boolean;
  options: string[];
  correct: number[];
}

export interface Devices {
  stream: MediaStream | null;
  mics: MediaDeviceInfo[];
  cams: MediaDeviceInfo[];
  micId: string | null;
  camId: string | null;
  /** the user refused (or has no) camera and microphone: they join as a listener */
  denied: boolean;
}

const DEVICE_KEY = 'aula:device';

/**
 * sessionStorage, or memory where the browser refuses it (a third-party iframe with storage blocked):
 * there a reload starts a new device, and a single-use link is then refused as used.
 */
const store = (() => {
  const memory = new Map<string, string>();
  const get = (k: string): string | null => {
    try {
      return sessionStorage.getItem(k);
    } catch {
      return memory.get(k) ?? null;
    }
  };
  const set = (k: string, v: string): void => {
    try {
      sessionStorage.setItem(k, v);
    } catch {
      memory.set(k, v);
    }
  };
  return { get, set };
})();
const RECONNECT_DELAYS = [500, 1000, 2000, 4000, 8000];

/** The server accepts no other package name; checked again here because it is written into a URL. */
const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/** An iPhone or iPad (iPadOS Safari says it is a Mac, but a Mac has no touch screen). */
function isIos(): boolean {
  return /iPhone|iPad|iPod/.test(navigator.userAgent) || (/Macintosh/.test(navigator.userAgent) && navigator.maxTouchPoints > 1);
}

export class RoomController {
  state: State = {
    phase: 'loading',
    outcome: null,
    session: null,
    participantId: null,
    roster: [],
    settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false },
    waitingList: [],
    activeSpeaker: null,
    quality: {},
    sources: {},
    notice: null,
    mediaAvailable: false,
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
  };
  devices: Devices = { stream: null, mics: [], cams: [], micId: null, camId: null, denied: false };
  media: MediaClient | null = null;
  readonly #listeners = new Set<() => void>();
  #socket: RoomSocket | null = null;
  #waitingSocket: RoomSocket | null = null;
  #mediaRev = 0;
  #starting: Promise<void> = Promise.resolve();
  #attempt = 0;
  #screen: MediaStream | null = null;
  #leaving = false;
  readonly deviceId: string;

  constructor(
    private readonly opts: { token: string | null; embedded: boolean; android: boolean; emit: <E extends EmbedEventName>(event: E, data: EmbedEvents[E]) => void },
  ) {
    let id = store.get(DEVICE_KEY);
    if (!id) {
      id = crypto.randomUUID();
      store.set(DEVICE_KEY, id);
    }
    this.deviceId = id;
  }

  subscribe(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #set(patch: Partial<State>): void {
    this.state = { ...this.state, ...patch };
    for (const fn of this.#listeners) fn();
  }

  get me(): Participant | undefined {
    return this.state.roster.find((p) => p.participantId === this.state.participantId);
  }

  get role(): RoomRole {
    return this.state.session?.role ?? 'PARTICIPANT';
  }

  get isHost(): boolean {
    return this.role === 'HOST' || this.role === 'COHOST';
  }

  get canSend(): boolean {
    return this.role !== 'VIEWER';
  }

  get canShareScreen(): boolean {
    return this.isHost || (this.canSend && this.state.settings.allowStudentScreenShare);
  }

  // ---- arriving ------------------------------------------------------------------------------------

  /**
   * After load: on a phone whose platform the organization has an app for, offer it first (a token
   * is spent by one path only); otherwise exchange. The page learns of the app from its shell, so
   * deciding spends nothing.
   */
  async boot(): Promise<void> {
    if (!this.opts.token) return this.#fail('no_token');
    const offer = this.#appOffer();
    if (offer && store.get(`aula:browser:${location.pathname}`) !== '1') {
      // Chrome comes back from an intent the app could not take by changing the fragment only
      const onHash = () => {
        if (this.state.phase !== 'app-choice') return removeEventListener('hashchange', onHash);
        this.#set({ appOffer: this.#appOffer() ?? this.state.appOffer });
      };
      addEventListener('hashchange', onHash);
      return this.#set({ phase: 'app-choice', appOffer: offer });
    }
    await this.#exchange();
  }

  /** The user chose the browser over the app. */
  async continueInBrowser(): Promise<void> {
    store.set(`aula:browser:${location.pathname}`, '1');
    this.#set({ phase: 'loading', appOffer: null });
    await this.#exchange();
  }

  #appOffer(): AppOffer | null {
    const token = this.opts.token;
    if (this.opts.embedded || !token) return null;
    let boot: JoinBoot = {};
    try {
      boot = JSON.parse(document.getElementById('aula-join')?.textContent ?? '{}') as JoinBoot;
    } catch {
      return null;
    }
    const at = new URLSearchParams(location.hash.slice(1)).get('app');
    const joinUrl = `${location.origin}${location.pathname}#jt=${token}`;
    const pkg = boot.apps?.android;
    if (this.opts.android && typeof pkg === 'string' && ANDROID_PACKAGE.test(pkg)) {
      // where Chrome sends the tab when the app cannot take the intent: this page, one step on
      const back = (step: string) => {
        const hash = new URLSearchParams(location.hash.slice(1));
        hash.set('app', step);
        return encodeURIComponent(`${location.origin}${location.pathname}#${hash}`);
      };
      // Intent.parseUri takes the data up to the last '#', so the join URL keeps its own fragment
      const verified = `intent://${location.host}${location.pathname}#jt=${token}#Intent;scheme=${location.protocol.slice(0, -1)};package=${pkg};S.browser_fallback_url=${back('legacy')};end`;
      const legacy = `intent://join?token=${encodeURIComponent(token)}#Intent;scheme=svc;package=${pkg};S.browser_fallback_url=${back('missing')};end`;
      if (at === 'legacy') return { platform: 'android', step: 'legacy', href: legacy };
      return { platform: 'android', step: at === 'missing' ? 'missing' : 'verified', href: verified };
    }
    if (!this.opts.android && boot.apps?.ios === true && isIos()) return { platform: 'ios', step: 'verified', href: joinUrl };
    return null;
  }

  async #exchange(): Promise<void> {
    try {
      const session = await api.exchange(this.opts.token!, this.deviceId);
      document.title = session.meeting.title;
      this.#set({ session, phase: 'prejoin', settings: { ...this.state.settings, ...(session.meeting.settings as Partial<State['settings']>) } });
      if (session.role === 'VIEWER') this.#set({ micOn: false, camOn: false });
      else void this.openDevices();
    } catch (err) {
      this.#fail(err instanceof api.ApiError ? err.code : 'network_error');
    }
  }

  /** Camera and microphone for the preview; a refusal is not an error: the user joins as a listener. */
  async openDevices(): Promise<void> {
    const { micId, camId } = this.devices;
    const old = this.devices.stream;
    try {
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: micId ? { deviceId: { exact: micId } } : true,
        video: camId ? { deviceId: { exact: camId }, width: { ideal: 1280 }, height: { ideal: 720 } } : { width: { ideal: 1280 }, height: { ideal: 720 } },
      });
      old?.getTracks().forEach((t) => t.stop());
      const all = await navigator.mediaDevices.enumerateDevices();
      this.devices = {
        stream,
        mics: all.filter((d) => d.kind === 'audioinput'),
        cams: all.filter((d) => d.kind === 'videoinput'),
        micId: stream.getAudioTracks()[0]?.getSettings().deviceId ?? null,
        camId: stream.getVideoTracks()[0]?.getSettings().deviceId ?? null,
        denied: false,
      };
      this.#applyEnabled();
      // in the room, the new devices replace what was being sent
      if (this.media) {
        const [a] = stream.getAudioTracks();
        const [v] = stream.getVideoTracks();
        if (a && this.media.producers.has('mic')) await this.media.send('mic', a);
        if (v && this.media.producers.has('camera')) await this.media.send('camera', v);
      }
    } catch {
      this.devices = { ...this.devices, stream: null, denied: true };
      this.#set({ micOn: false, camOn: false });
    }
    this.#set({});
  }

  chooseDevice(kind: 'mic' | 'cam', id: string): void {
    this.devices = kind === 'mic' ? { ...this.devices, micId: id } : { ...this.devices, camId: id };
    void this.openDevices();
  }

  #applyEnabled(): void {
    this.devices.stream?.getAudioTracks().forEach((t) => (t.enabled = this.state.micOn));
    this.devices.stream?.getVideoTracks().forEach((t) => (t.enabled = this.state.camOn));
  }

  /** Pre-join toggles (nothing is sent yet). */
  preset(kind: 'mic' | 'cam', on: boolean): void {
    this.#set(kind === 'mic' ? { micOn: on } : { camOn: on });
    this.#applyEnabled();
  }

  /** The Join button: the room, or the waiting room first. */
  async join(): Promise<void> {
    const s = this.state.session!;
    if (s.mediaToken) return this.#connect(s.mediaUrl, s.mediaToken);
    this.#set({ phase: 'waiting' });
    this.opts.emit('waiting', { queueId: s.waitingRoom!.queueId, meeting: { id: s.meeting.id, title: s.meeting.title } });
    this.#wait();
  }

  /** While waiting: the waiting socket (pushed `admitted`), and the status route with backoff if the socket fails. */
  #wait(): void {
    const s = this.state.session!;
    const socket = new RoomSocket(s.mediaUrl, s.accessToken);
    this.#waitingSocket = socket;
    socket.onMessage = (m) => {
      if (m.type === 'admitted') void this.#admitted();
      else if (m.type === 'denied') this.#over('waiting_denied', 'denied');
      else if (m.type === 'expired') this.#over(m.reason === 'meeting_ended' ? 'meeting_ended' : 'waiting_expired', 'expired');
    };
    socket.onClose = () => {
      if (this.#waitingSocket !== socket || this.state.phase !== 'waiting') return;
      this.#waitingSocket = null;
      void this.#poll(0);
    };
  }

  async #poll(attempt: number): Promise<void> {
    if (this.state.phase !== 'waiting') return;
    try {
      const { status } = await api.waitingStatus(this.state.session!);
      if (status === 'ADMITTED') return void this.#admitted();
      if (status === 'DENIED') return this.#over('waiting_denied', 'denied');
      if (status === 'EXPIRED' || status === 'LEFT') return this.#over('waiting_expired', 'expired');
      if (attempt % 5 === 4) return this.#wait(); // try the socket again now and then
    } catch (err) {
      if (err instanceof api.ApiError && err.status >= 400 && err.status < 500 && err.code !== 'rate_limited') return this.#fail(err.code);
    }
    setTimeout(() => void this.#poll(attempt + 1), Math.min(1000 * 2 ** Math.min(attempt, 4), 15_000));
  }

  async #admitted(): Promise<void> {
    if (this.state.phase !== 'waiting') return;
    this.#waitingSocket?.close();
    this.#waitingSocket = null;
    const s = this.state.session!;
    this.opts.emit('admitted', { queueId: s.waitingRoom!.queueId });
    try {
      const { mediaToken, mediaUrl } = await api.roomToken(s, this.deviceId);
      this.#set({ session: { ...s, mediaToken, mediaUrl, waitingRoom: { ...s.waitingRoom!, status: 'ADMITTED' } } });
      await this.#connect(mediaUrl, mediaToken);
    } catch (err) {
      this.#fail(err instanceof api.ApiError ? err.code : 'network_error');
    }
  }

  // ---- the room socket -------------------------------------------------------------------------------

  async #connect(url: string, token: string): Promise<void> {
    if (this.state.phase !== 'reconnecting') this.#set({ phase: 'connecting' });
    const socket = new RoomSocket(url, token);
    this.#socket = socket;
    socket.onMessage = (m) => this.#onMessage(m);
    socket.onClose = (code) => void this.#onClose(socket, code);
  }

  async #onClose(socket: RoomSocket, code: number): Promise<void> {
    if (this.#socket !== socket) return;
    this.#socket = null;
    this.media?.close();
    this.media = null;
    const final = FINAL_CLOSES[code];
    if (final === 'left' || this.#leaving) return this.#over('left', 'left');
    if (final === 'meeting_ended') return this.#ended(null);
    if (final === 'removed') return this.#over('session_revoked', 'removed');
    if (final === 'user_deactivated') return this.#over('user_deactivated', 'user_deactivated');
    if (final === 'replaced') return this.#over('replaced', 'replaced');
    if (final === 'refused' || final === 'unauthorized') return; // the error message came first (or the token was refused)
    // dropped: reconnect with backoff, refreshing the session when its token expired
    const delay = RECONNECT_DELAYS[Math.min(this.#attempt++, RECONNECT_DELAYS.length - 1)]!;
    this.#set({ phase: 'reconnecting' });
    await new Promise((r) => setTimeout(r, delay));
    let s = this.state.session!;
    if (Date.parse(s.expiresAt) - Date.now() < 60_000) {
      try {
        s = await api.refresh(s.accessToken);
        this.#set({ session: s });
      } catch (err) {
        if (err instanceof api.ApiError && err.status >= 400 && err.status < 500) return this.#fail(err.code);
      }
    }
    if (s.mediaToken) await this.#connect(s.mediaUrl, s.mediaToken);
  }

  #onMessage(m: ServerMessage): void {
    if (this.media?.handle(m)) return;
    switch (m.type) {
      case 'joined': {
        this.#attempt = 0;
        const me = (m.roster as Participant[]).find((p) => p.participantId === m.participantId);
        const first = this.state.participantId === null;
        this.#set({ phase: 'room', participantId: m.participantId, roster: m.roster, settings: m.settings, mediaAvailable: m.media.available, roomLocked: m.locked === true });
        this.#classroom(m.classroom as ClassroomState);
        if (first && me) {
          this.opts.emit('joined', { participant: this.#embedParticipant(me), meeting: { id: this.state.session!.meeting.id, title: this.state.session!.meeting.title } });
        }
        // a `media` message may have come first and started it already; a new socket always starts again
        const started = this.media !== null && m.media.rev <= this.#mediaRev;
        this.#mediaRev = Math.max(this.#mediaRev, m.media.rev);
        if (m.media.available && !started) void this.#startMedia();
        return;
      }
      case 'roster':
        return this.#roster(m.participants);
      case 'settings':
        this.#set({ settings: m.settings });
        if (!this.canShareScreen && this.state.screenOn) this.#set({ screenOn: false });
        return;
      case 'media':
        if (m.available && m.rev > this.#mediaRev) {
          this.#mediaRev = m.rev;
          this.#set({ mediaAvailable: true });
          void this.#startMedia();
        }
        return;
      case 'muted':
        this.#set({ micOn: false, unmuteAllowed: false, askedToUnmute: false, notice: 'A host muted your microphone.' });
        return;
      case 'unmute-allowed':
        this.#set({ unmuteAllowed: true, askedToUnmute: false, notice: 'A host allows you to unmute.' });
        return;
      case 'floor':
        this.#set({ notice: m.give ? 'You have the floor: you may speak.' : 'The floor was taken back.', unmuteAllowed: m.give });
        return;
      case 'locked':
        if (m.locked !== this.state.roomLocked) {
          this.#set({ roomLocked: m.locked, notice: m.locked ? 'A host locked the meeting: nobody new can join.' : 'A host unlocked the meeting.' });
          this.opts.emit(m.locked ? 'room-locked' : 'room-unlocked', {});
        }
        return;
      case 'poll':
        return this.#pollChanged(m.poll as PollView);
      case 'poll-results':
        this.#set({ pollResults: { ...this.state.pollResults, [m.results.pollId]: m.results } });
        return;
      case 'question':
        return this.#questionChanged(m.question as QuestionView);
      case 'question-upvotes':
        this.#set({ questions: this.state.questions.map((q) => (q.questionId === m.questionId ? { ...q, upvotes: m.upvotes } : q)) });
        return;
      case 'question-dismissed':
        this.#set({ questions: this.state.questions.filter((q) => q.questionId !== m.questionId) });
        return;
      case 'unmute-requested':
        this.#set({ notice: `${m.name} asks to unmute.` });
        return;
      case 'waiting-room':
        this.#set({ waitingList: m.entries });
        return;
      case 'media-state': {
        const sources = { ...this.state.sources };
        for (const p of m.participants) sources[p.participantId] = p.sources;
        this.#set({ sources });
        return;
      }
      case 'active-speaker':
        this.#set({ activeSpeaker: m.participantId });
        return;
      case 'network-quality': {
        const quality = { ...this.state.quality };
        for (const p of m.participants) quality[p.participantId] = p.quality;
        this.#set({ quality });
        return;
      }
      case 'error':
        this.#fail(m.error?.code ?? 'internal_error');
        return;
    }
  }

  /** The room's polls and questions as a (re)join gives them; what this page remembers of its own answers stays. */
  #classroom(k: ClassroomState): void {
    const answers: State['answers'] = {};
    for (const id of k.answeredPolls) answers[id] = this.state.answers[id] ?? { choices: [], text: null };
    for (const p of k.polls) if (p.status === 'CLOSED' && this.state.answers[p.pollId]) answers[p.pollId] = this.state.answers[p.pollId]!;
    this.#set({
      polls: k.polls,
      pollResults: Object.fromEntries(k.pollResults.map((r) => [r.pollId, r])),
      answers,
      questions: k.questions,
      upvoted: k.upvotedQuestions,
      ownQuestions: [...new Set([...this.state.ownQuestions, ...k.ownQuestions])],
    });
  }

  #pollChanged(p: PollView): void {
    const was = this.state.polls.find((x) => x.pollId === p.pollId);
    const polls = was ? this.state.polls.map((x) => (x.pollId === p.pollId ? p : x)) : [...this.state.polls, p];
    this.#set({ polls });
    const brief = { id: p.pollId, question: p.question, type: p.type, quiz: p.quiz };
    if (!was && p.status === 'OPEN') {
      if (!this.isHost) this.#set({ notice: `${p.quiz ? 'A quiz' : 'A poll'} opened: ${p.question}` });
      this.opts.emit('poll-opened', { poll: brief });
    } else if (was?.status === 'OPEN' && p.status === 'CLOSED') {
      this.opts.emit('poll-closed', { poll: brief });
    }
  }

  #questionChanged(q: QuestionView): void {
    const was = this.state.questions.find((x) => x.questionId === q.questionId);
    const questions = was ? this.state.questions.map((x) => (x.questionId === q.questionId ? q : x)) : [...this.state.questions, q];
    this.#set({ questions });
    if (was?.status === 'OPEN' && q.status === 'ANSWERED') {
      const own = this.state.ownQuestions.includes(q.questionId);
      if (own) this.#set({ notice: q.answeredLive ? 'A host is answering your question live.' : 'A host answered your question.' });
      this.opts.emit('question-answered', { question: { id: q.questionId, text: q.text, answer: q.answer, answeredLive: q.answeredLive, yours: own } });
    }
  }

  #embedParticipant(p: Participant): EmbedParticipant {
    return { id: p.participantId, name: p.name, role: p.roomRole };
  }

  /** A new roster: what changed becomes SDK events (joins, leaves, hands). */
  #roster(next: Participant[]): void {
    const before = new Map(this.state.roster.map((p) => [p.participantId, p]));
    const after = new Map(next.map((p) => [p.participantId, p]));
    for (const p of next) {
      const was = before.get(p.participantId);
      if (!was && p.participantId !== this.state.participantId) this.opts.emit('participant-joined', { participant: this.#embedParticipant(p) });
      if (!!was?.handRaisedAt !== !!p.handRaisedAt && (was || p.handRaisedAt)) this.opts.emit(p.handRaisedAt ? 'hand-raised' : 'hand-lowered', { participant: this.#embedParticipant(p) });
    }
    for (const p of before.values()) if (!after.has(p.participantId)) this.opts.emit('participant-left', { participant: this.#embedParticipant(p) });
    this.#set({ roster: next });
  }

  // ---- media -------------------------------------------------------------------------------------------

  /** Starts (or restarts) media; starts run one after another, and a newer one supersedes an older one. */
  #startMedia(): Promise<void> {
    this.#starting = this.#starting.then(() => this.#startMediaNow());
    return this.#starting;
  }

  async #startMediaNow(): Promise<void> {
    const socket = this.#socket;
    if (!socket) return;
    const again = this.media?.sending() ?? null;
    this.media?.close();
    const media = new MediaClient(socket, () => this.#set({}), this.canSend);
    this.media = media;
    try {
      await media.start();
      if (!this.canSend) return;
      const stream = this.devices.stream;
      const [mic] = stream?.getAudioTracks() ?? [];
      const [cam] = stream?.getVideoTracks() ?? [];
      // the microphone is produced even when off (paused), so unmuting is instant and hosts see its state
      if (mic) {
        await media.send('mic', mic);
        if (!this.state.micOn) await media.setOn('mic', false);
        else if (media.heldByServer.has('mic')) this.#set({ micOn: false });
      }
      if (cam && this.state.camOn) await media.send('camera', cam);
      if (again) for (const [source, track] of again) if (source === 'screen' || source === 'screen-audio') await media.send(source, track).catch(() => {});
    } catch (err) {
      if (this.media === media) this.#set({ notice: err instanceof CommandError ? err.message : 'Could not start audio and video.' });
    }
  }

  /** The microphone button. A refusal (muted by a host, lecture mode) is explained, not thrown. */
  async toggleMic(on = !this.state.micOn): Promise<void> {
    const track = this.devices.stream?.getAudioTracks()[0];
    if (!track) return this.#set({ notice: 'No microphone is available. Allow the microphone in your browser and reload.' });
    track.enabled = on;
    this.#set({ micOn: on });
    if (!this.media) return;
    try {
      if (!this.media.producers.has('mic')) await this.media.send('mic', track);
      else await this.media.setOn('mic', on);
    } catch (err) {
      track.enabled = false;
      const code = err instanceof CommandError ? err.code : '';
      this.#set({
        micOn: false,
        notice: code === 'muted_by_host' ? 'A host muted you. Ask to unmute, and unmute when they allow it.' : code === 'floor_required' ? 'Only hosts speak in this lecture until a host gives you the floor.' : 'Your microphone could not be turned on.',
      });
    }
  }

  async toggleCamera(on = !this.state.camOn): Promise<void> {
    let track = this.devices.stream?.getVideoTracks()[0];
    if (!track && on) {
      await this.openDevices();
      track = this.devices.stream?.getVideoTracks()[0];
    }
    if (!track) return this.#set({ notice: 'No camera is available. Allow the camera in your browser and reload.' });
    track.enabled = on;
    this.#set({ camOn: on });
    if (!this.media) return;
    try {
      if (on && !this.media.producers.has('camera')) await this.media.send('camera', track);
      else await this.media.setOn('camera', on);
    } catch {
      this.#set({ camOn: false, notice: 'Your camera could not be turned on.' });
    }
  }

  async toggleScreen(): Promise<void> {
    if (this.state.screenOn) {
      this.#screen?.getTracks().forEach((t) => t.stop());
      this.#screen = null;
      this.#set({ screenOn: false });
      await this.media?.stop('screen');
      return;
    }
    try {
      const stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
      const [track] = stream.getVideoTracks();
      if (!track || !this.media) return;
      this.#screen = stream;
      track.addEventListener('ended', () => void (this.state.screenOn && this.toggleScreen()));
      await this.media.send('screen', track);
      this.#set({ screenOn: true });
    } catch (err) {
      this.#screen?.getTracks().forEach((t) => t.stop());
      this.#screen = null;
      if (err instanceof CommandError) this.#set({ notice: 'Screen sharing is not allowed for you in this meeting.' });
    }
  }

  /** Room commands, as acks; a refusal becomes a notice. */
  async command(message: Record<string, unknown>): Promise<Record<string, any> | null> {
    try {
      return (await this.#socket?.ask(message)) ?? null;
    } catch (err) {
      this.#set({ notice: err instanceof CommandError ? err.message : 'That did not work.' });
      return null;
    }
  }

  async askToUnmute(): Promise<void> {
    if (await this.command({ type: 'ask-unmute' })) this.#set({ askedToUnmute: true, notice: 'The hosts were asked to let you unmute.' });
  }

  raiseHand(up: boolean): Promise<unknown> {
    return this.command(up ? { type: 'raise-hand' } : { type: 'lower-hand' });
  }

  // ---- polls and Q&A ----------------------------------------------------------------------------------

  async openPoll(d: PollDraft): Promise<boolean> {
    const options = d.pollType === 'SINGLE_CHOICE' || d.pollType === 'MULTIPLE_CHOICE' ? d.options.map((o) => o.trim()).filter(Boolean) : [];
    const r = await this.command({ type: 'open-poll', question: d.question.trim(), pollType: d.pollType, anonymous: d.anonymous, options, correct: d.correct });
    if (r) this.#pollChanged(r.poll as PollView);
    return r !== null;
  }

  async answerPoll(pollId: string, answer: { choices: number[]; text: string | null }): Promise<void> {
    const r = await this.command(answer.text === null ? { type: 'answer-poll', pollId, choices: answer.choices } : { type: 'answer-poll', pollId, text: answer.text });
    if (r) this.#set({ answers: { ...this.state.answers, [pollId]: answer }, notice: 'Your answer was sent.' });
  }

  async closePoll(pollId: string, share: boolean): Promise<void> {
    const r = await this.command({ type: 'close-poll', pollId, share });
    if (r) this.#set({ pollResults: { ...this.state.pollResults, [pollId]: r.results as PollResults } });
  }

  async sharePoll(pollId: string): Promise<void> {
    await this.command({ type: 'share-poll', pollId });
  }

  async askQuestion(text: string, anonymous: boolean): Promise<boolean> {
    const r = await this.command({ type: 'ask-question', text: text.trim(), anonymous });
    if (!r) return false;
    const q = r.question as QuestionView;
    this.#set({ ownQuestions: [...this.state.ownQuestions, q.questionId] });
    if (!this.state.questions.some((x) => x.questionId === q.questionId)) this.#set({ questions: [...this.state.questions, q] });
    return true;
  }

  async upvoteQuestion(questionId: string): Promise<void> {
    if (await this.command({ type: 'upvote-question', questionId })) this.#set({ upvoted: [...this.state.upvoted, questionId] });
  }

  async answerQuestion(questionId: string, answer: string | null): Promise<boolean> {
    return (await this.command(answer === null ? { type: 'answer-question', questionId } : { type: 'answer-question', questionId, answer })) !== null;
  }

  async dismissQuestion(questionId: string): Promise<void> {
    await this.command({ type: 'dismiss-question', questionId });
  }

  async admitAll(): Promise<void> {
    for (const e of this.state.waitingList) await this.command({ type: 'admit', queueId: e.queueId });
  }

  /** Leave (the user's button, or the SDK's `leave`). */
  async leave(): Promise<void> {
    if (this.state.phase === 'waiting') await this.#waitingSocket?.ask({ type: 'leave' }).catch(() => {});
    if (this.state.phase === 'waiting' || this.state.phase === 'prejoin') return this.#over('left', 'left');
    this.#leaving = true;
    const ok = await this.command({ type: 'leave' });
    if (!ok) this.#socket?.close();
  }

  async endForEveryone(): Promise<void> {
    await this.command({ type: 'end' });
  }

  clearNotice(): void {
    this.#set({ notice: null });
  }

  // ---- leaving ---------------------------------------------------------------------------------------

  #ended(reason: string | null): void {
    this.opts.emit('meeting-ended', { reason });
    this.#finish('meeting_ended');
  }

  #over(code: string, reason: EmbedEvents['left']['reason']): void {
    this.opts.emit('left', { reason });
    this.#finish(code);
  }

  #finish(code: string): void {
    this.#waitingSocket?.close();
    this.media?.close();
    this.media = null;
    this.#screen?.getTracks().forEach((t) => t.stop());
    this.devices.stream?.getTracks().forEach((t) => t.stop());
    const [title, text] = code === 'left' ? ['You left the meeting', 'You can close this page.'] : code === 'replaced' ? ['You joined from another tab', 'This tab is no longer in the meeting.'] : api.describe(code);
    const url = this.state.session?.redirectUrl;
    const redirectAt = url && !this.opts.embedded ? Date.now() + 4000 : null;
    this.#set({ phase: 'over', outcome: { code, title, text }, redirectAt });
    if (redirectAt && url) setTimeout(() => location.assign(url), 4000);
  }

  #fail(code: string): void {
    const [title, text] = api.describe(code);
    this.opts.emit('error', { code, message: text });
    this.#set({ phase: 'error', outcome: { code, title, text } });
  }

  /** The SDK's commands. */
  onEmbedCommand(command: string): void {
    if (command === 'mute') void this.toggleMic(false);
    else if (command === 'unmute') void this.toggleMic(true);
    else if (command === 'toggleVideo') void this.toggleCamera();
    else if (command === 'raiseHand') void this.raiseHand(true);
    else if (command === 'lowerHand') void this.raiseHand(false);
    else if (command === 'leave') void this.leave();
  }
}
