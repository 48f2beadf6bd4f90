import * as api from './api.ts';
import type { AckResult, CloseReason, Command } from '../../src/core/room-protocol.ts';
import type { EndedReason } from '../../src/core/domain.ts';
import type { EmbedCommand, EmbedEvents } from '../shared/embed-protocol.ts';
import { appOffer } from './app-offer.ts';
import { Connection } from './connection.ts';
import { enableTracks, NO_DEVICES, openDevices, stopTracks, type Devices } from './devices.ts';
import type { MediaClient } from './media.ts';
import { MediaControl } from './media-control.ts';
import type { LayoutMode } from '../shared/embed-protocol.ts';
import { QualityWatch } from './quality-watch.ts';
import { access, sessionSettings, type PollAnswer, type State } from './reducer.ts';
import { CommandError, type Heard } from './socket.ts';
import { Store } from './store.ts';
import { WaitingRoom } from './waiting.ts';
import { REACTION_SHOW_MS, type ChatMode, type Reaction } from '../../src/core/chat.ts';
import { chime } from './chime.ts';

/**
 * The page's one client object: everything that talks to the server or the browser. It arrives (the
 * token exchange, after an app offer on a phone), waits (waiting.ts), holds the room socket
 * (connection.ts), reduces what the room says into the store (reducer.ts), runs the media
 * (media-control.ts), gives the room's commands and leaves. The views (ui/) draw the store's state and
 * call the methods here.
 */

/** How long an alert stays when nobody acts on it (it goes at once when what it tells no longer stands). */
const ALERT_SHOW_MS = 15_000;
const CHIME_KEY = 'aula:chime';

/** A host's new poll, as the form gives it: the `open-poll` command with every field given. */
export type PollDraft = Required<Omit<Command<'open-poll'>, 'type'>>;

const DEVICE_KEY = 'aula:device';

/**
 * sessionStorage, or memory where the browser refuses it (a third-party iframe with storage blocked):
 * there a reload starts a new device, and a single-use link is then refused as used.
 */
const tabStorage = (() => {
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

export interface ControllerOptions {
  token: string | null;
  embedded: boolean;
  android: boolean;
  /** false: no pre-join screen, the page joins at once with the default devices (the SDK's `prejoin: false`). */
  prejoin?: boolean;
  /** The layout to start with (the SDK's `layout`). */
  layout?: LayoutMode;
}

export class RoomController {
  readonly store: Store;
  devices: Devices = NO_DEVICES;
  readonly deviceId: string;
  readonly #opts: ControllerOptions;
  readonly #connection: Connection;
  readonly #media: MediaControl;
  #waiting: WaitingRoom | null = null;
  #leaving = false;
  /** The socket dropped and a new one is on its way: its `joined` resumes the media rather than starting it again. */
  #resuming = false;
  /** Why the meeting ended, as the room said just before its socket closed (the SDK's meeting-ended). */
  #endedReason: EndedReason | null = null;

  readonly #quality: QualityWatch;
  /** The reactions and alerts whose leaving is timed already. */
  readonly #timed = new Set<number>();
  /** Hosts: a short sound with each new alert (their choice, remembered on this browser). */
  chimeOn = (() => {
    try {
      return localStorage.getItem(CHIME_KEY) === '1';
    } catch {
      return false;
    }
  })();

  constructor(opts: ControllerOptions & { emit: Store['emit'] }) {
    this.#opts = opts;
    this.store = new Store(opts.emit);
    if (opts.layout) this.store.set({ layoutMode: opts.layout });
    // a connection that stays poor: the page offers audio only (quality-watch.ts)
    this.#quality = new QualityWatch(() => this.store.dispatch({ type: 'offer-audio-only', offered: true }));
    this.store.subscribe(() => {
      const s = this.state;
      if (s.phase === 'room' || s.phase === 'reconnecting') this.#quality.observe(s.participantId ? s.quality[s.participantId] : undefined, s.audioOnly);
      else this.#quality.stop();
      this.#timeOut();
    });
    this.#connection = new Connection(this.store, { message: (m) => this.#onMessage(m), closed: (reason) => this.#closed(reason), failed: (code) => this.#fail(code) });
    this.#media = new MediaControl({ store: this.store, socket: () => this.#connection.socket, devices: () => this.devices, reopenDevices: () => this.openDevices() });
    let id = tabStorage.get(DEVICE_KEY);
    if (!id) {
      // randomUUID needs a secure context (https, or localhost): a plain-http trial on a LAN has none
      id = typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
      tabStorage.set(DEVICE_KEY, id);
    }
    this.deviceId = id;
  }

  get state(): State {
    return this.store.state;
  }

  /** The room's media objects (remote tracks, what the server holds paused), while in the room. */
  get media(): MediaClient | null {
    return this.#media.client;
  }

  subscribe(fn: () => void): () => void {
    return this.store.subscribe(fn);
  }

  // ---- arriving ------------------------------------------------------------------------------------

  /**
   * After load: on a phone whose platform the organization has an app for, offer it first (a token
   * is spent by one path only); otherwise exchange. The page learns of the app from its shell, so
   * deciding spends nothing.
   */
  async boot(): Promise<void> {
    if (!this.#opts.token) return this.#fail('no_token');
    const offer = appOffer(this.#opts.token, this.#opts);
    if (offer && tabStorage.get(`aula:browser:${location.pathname}`) !== '1') {
      // Chrome comes back from an intent the app could not take by changing the fragment only
      const onHash = () => {
        if (this.state.phase !== 'app-choice') return removeEventListener('hashchange', onHash);
        this.store.set({ appOffer: appOffer(this.#opts.token, this.#opts) ?? this.state.appOffer });
      };
      addEventListener('hashchange', onHash);
      return this.store.set({ phase: 'app-choice', appOffer: offer });
    }
    await this.#exchange();
  }

  /** The user chose the browser over the app. */
  async continueInBrowser(): Promise<void> {
    tabStorage.set(`aula:browser:${location.pathname}`, '1');
    this.store.set({ phase: 'loading', appOffer: null });
    await this.#exchange();
  }

  async #exchange(): Promise<void> {
    try {
      const session = await api.exchange(this.#opts.token!, this.deviceId);
      document.title = session.meeting.title;
      this.store.set({ session, phase: 'prejoin', settings: sessionSettings(session, this.state.settings) });
      if (!access(this.state).send) this.store.set({ micOn: false, camOn: false });
      else if (this.#opts.prejoin === false) await this.openDevices();
      else void this.openDevices();
      // the platform already checked the devices: straight in
      if (this.#opts.prejoin === false) await this.join();
    } catch (err) {
      this.#fail(err instanceof api.ApiError ? err.code : 'network_error');
    }
  }

  // ---- devices --------------------------------------------------------------------------------------

  /** Camera and microphone for the preview (and, in the room, what is sent); a refusal is not an error: the user joins as a listener. */
  async openDevices(): Promise<void> {
    try {
      this.devices = await openDevices(this.devices);
      enableTracks(this.devices.stream, this.state.micOn, this.state.camOn);
      await this.#media.replace();
    } catch {
      this.devices = { ...this.devices, stream: null, denied: true };
      this.store.set({ micOn: false, camOn: false });
    }
    this.store.changed();
  }

  chooseDevice(kind: 'mic' | 'cam', id: string): void {
    this.devices = kind === 'mic' ? { ...this.devices, micId: id } : { ...this.devices, camId: id };
    void this.openDevices();
  }

  /** Pre-join toggles (nothing is sent yet). */
  preset(kind: 'mic' | 'cam', on: boolean): void {
    this.store.set(kind === 'mic' ? { micOn: on } : { camOn: on });
    enableTracks(this.devices.stream, this.state.micOn, this.state.camOn);
  }

  // ---- joining ---------------------------------------------------------------------------------------

  /** The Join button: the room, or the waiting room first. */
  async join(): Promise<void> {
    const s = this.state.session!;
    if (s.mediaToken) return this.#connection.connect(s.mediaUrl, s.mediaToken);
    this.store.set({ phase: 'waiting' });
    this.store.emit({ event: 'waiting', data: { queueId: s.waitingRoom!.queueId, meeting: { id: s.meeting.id, title: s.meeting.title } } });
    this.#waiting = new WaitingRoom(s, {
      admitted: () => void this.#admitted(),
      denied: () => this.#over('waiting_denied', 'denied'),
      expired: (meetingEnded) => this.#over(meetingEnded ? 'meeting_ended' : 'waiting_expired', 'expired'),
      failed: (code) => this.#fail(code),
    });
  }

  async #admitted(): Promise<void> {
    if (this.state.phase !== 'waiting') return;
    this.#waiting = null;
    const s = this.state.session!;
    this.store.emit({ event: 'admitted', data: { queueId: s.waitingRoom!.queueId } });
    try {
      const { mediaToken, mediaUrl } = await api.roomToken(s, this.deviceId);
      this.store.set({ session: { ...s, mediaToken, mediaUrl, waitingRoom: { ...s.waitingRoom!, status: 'ADMITTED' } } });
      this.#connection.connect(mediaUrl, mediaToken);
    } catch (err) {
      this.#fail(err instanceof api.ApiError ? err.code : 'network_error');
    }
  }

  // ---- the room socket -------------------------------------------------------------------------------

  #onMessage(m: Heard): void {
    if (this.#media.client?.handle(m)) return;
    if (m.type === 'ended') this.#endedReason = m.reason;
    const before = this.state;
    this.store.dispatch(m);
    if (m.type === 'joined') {
      this.#connection.joined();
      // a `media` message may have come first and started it already; a socket that came back resumes
      // the media it had, if the server kept it (a blip within the reconnect grace)
      const started = this.#media.client !== null && m.media.rev <= before.mediaRev;
      if (m.media.available && started && this.#resuming) void this.#media.resume();
      else if (m.media.available && !started) void this.#media.start();
      this.#resuming = false;
    } else if (m.type === 'media' && this.state.mediaRev > before.mediaRev) {
      void this.#media.start();
    }
  }

  /** The socket closed: true when that ends the visit (or leaves nothing to reconnect to), false to reconnect. */
  #closed(reason: CloseReason | null): boolean {
    const over = this.#endsVisit(reason);
    // a drop keeps the media: its transports do not ride on the socket, and the server keeps them for the grace
    if (over) this.#media.stop();
    else this.#resuming = true;
    return over;
  }

  #endsVisit(reason: CloseReason | null): boolean {
    switch (this.#leaving ? 'left' : reason) {
      case 'left':
        this.#over('left', 'left');
        return true;
      case 'meeting_ended':
        this.#ended(this.#endedReason);
        return true;
      case 'removed':
        this.#over('session_revoked', 'removed');
        return true;
      case 'user_deactivated':
        this.#over('user_deactivated', 'user_deactivated');
        return true;
      case 'replaced':
        this.#over('replaced', 'replaced');
        return true;
      case 'refused':
      case 'unauthorized':
        return true; // the error message came first (or the token was refused)
      default:
        return false; // dropped, a server shutting down, or closed for flooding
    }
  }

  // ---- media -------------------------------------------------------------------------------------------

  toggleMic(on?: boolean): Promise<void> {
    return this.#media.toggleMic(on);
  }

  toggleCamera(on?: boolean): Promise<void> {
    return this.#media.toggleCamera(on);
  }

  toggleScreen(): Promise<void> {
    return this.#media.toggleScreen();
  }

  // ---- commands ----------------------------------------------------------------------------------------

  /** A room command, answered by its ack's result; a refusal becomes a notice (and null). */
  async command<M extends Command>(message: M): Promise<AckResult<M['type']> | null> {
    try {
      return (await this.#connection.socket?.ask(message)) ?? null;
    } catch (err) {
      this.store.set({ notice: err instanceof CommandError ? err.message : 'That did not work.' });
      return null;
    }
  }

  async askToUnmute(): Promise<void> {
    if (await this.command({ type: 'ask-unmute' })) this.store.dispatch({ type: 'unmute-asked' });
  }

  async raiseHand(up: boolean): Promise<void> {
    await this.command(up ? { type: 'raise-hand' } : { type: 'lower-hand' });
  }

  async openPoll(d: PollDraft): Promise<boolean> {
    const options = d.pollType === 'SINGLE_CHOICE' || d.pollType === 'MULTIPLE_CHOICE' ? d.options.map((o) => o.trim()).filter(Boolean) : [];
    const r = await this.command({ type: 'open-poll', question: d.question.trim(), pollType: d.pollType, anonymous: d.anonymous, options, correct: d.correct });
    if (r) this.store.dispatch({ type: 'poll', poll: r.poll });
    return r !== null;
  }

  async answerPoll(pollId: string, answer: PollAnswer): Promise<void> {
    const r = await this.command(answer.text === null ? { type: 'answer-poll', pollId, choices: answer.choices } : { type: 'answer-poll', pollId, text: answer.text });
    if (r) this.store.dispatch({ type: 'poll-answered', pollId, answer });
  }

  async closePoll(pollId: string, share: boolean): Promise<void> {
    const r = await this.command({ type: 'close-poll', pollId, share });
    if (r) this.store.dispatch({ type: 'poll-results', results: r.results });
  }

  async sharePoll(pollId: string): Promise<void> {
    await this.command({ type: 'share-poll', pollId });
  }

  async askQuestion(text: string, anonymous: boolean): Promise<boolean> {
    const r = await this.command({ type: 'ask-question', text: text.trim(), anonymous });
    if (r) this.store.dispatch({ type: 'question-asked', question: r.question });
    return r !== null;
  }

  async upvoteQuestion(questionId: string): Promise<void> {
    if (await this.command({ type: 'upvote-question', questionId })) this.store.dispatch({ type: 'question-upvoted', questionId });
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

  async endForEveryone(): Promise<void> {
    await this.command({ type: 'end' });
  }

  /** Host controls on a person: the spotlight for everyone (null: off), and turning their camera off. */
  async spotlight(participantId: string | null): Promise<void> {
    await this.command({ type: 'spotlight', participantId });
  }

  async stopCamera(participantId: string): Promise<void> {
    await this.command({ type: 'stop-camera', participantId });
  }

  // ---- what the stage shows (layout.ts) ----------------------------------------------------------------

  /** Pin a person big for this user only (null: unpin). */
  pin(participantId: string | null): void {
    this.store.dispatch({ type: 'pin', participantId });
  }

  setLayout(mode: LayoutMode): void {
    this.store.dispatch({ type: 'set-layout', mode });
  }

  setPage(page: number): void {
    this.store.dispatch({ type: 'set-page', page });
  }

  /** The stage laid out a page of that many (the SDK hears `page-changed`). */
  paged(page: number, pages: number): void {
    this.store.dispatch({ type: 'paged', page, pages });
  }

  /**
   * Live captions on or off for this person (docs/ai-notes.md): the server's refusal says why they cannot
   * be had (the plan, the organization's switch, no engine, the language), which the page shows.
   */
  async setCaptions(on: boolean): Promise<void> {
    if (!on) this.store.dispatch({ type: 'captions-set', on: false, unavailable: null });
    try {
      await this.#connection.socket?.ask({ type: 'captions', on });
      if (on) this.store.dispatch({ type: 'captions-set', on: true, unavailable: null });
    } catch (err) {
      if (on) this.store.dispatch({ type: 'captions-set', on: false, unavailable: err instanceof CommandError ? err.message : 'Captions could not be turned on; try again.' });
    }
  }

  /** The page stops telling why captions are not available. */
  dismissCaptions(): void {
    this.store.dispatch({ type: 'captions-set', on: false, unavailable: null });
  }

  /** Receive no video (the server pauses it all) or video again. */
  setAudioOnly(on: boolean): void {
    this.store.dispatch({ type: 'audio-only', on });
  }

  declineAudioOnly(): void {
    this.store.dispatch({ type: 'offer-audio-only', offered: false });
  }

  clearNotice(): void {
    this.store.set({ notice: null });
  }

  /** Reactions float for a few seconds and alerts stay a while; a new alert chimes when the host asked for it. */
  #timeOut(): void {
    const s = this.state;
    for (const r of s.reactions) {
      if (this.#timed.has(r.key)) continue;
      this.#timed.add(r.key);
      setTimeout(() => this.store.dispatch({ type: 'reaction-gone', key: r.key }), REACTION_SHOW_MS);
    }
    for (const a of s.alerts) {
      if (this.#timed.has(a.key)) continue;
      this.#timed.add(a.key);
      if (this.chimeOn) chime();
      setTimeout(() => this.store.dispatch({ type: 'alert-gone', key: a.key }), ALERT_SHOW_MS);
    }
  }

  setChime(on: boolean): void {
    this.chimeOn = on;
    try {
      localStorage.setItem(CHIME_KEY, on ? '1' : '0');
    } catch {
      // storage blocked (a third-party frame): the choice lasts this visit
    }
    if (on) chime();
    this.store.changed();
  }

  dismissAlert(key: number): void {
    this.store.dispatch({ type: 'alert-gone', key });
  }

  // ---- chat and reactions ------------------------------------------------------------------------------

  /** A message to the room, or privately (`privateTo`: 'hosts', or a student's participantId for a host). */
  async sendChat(text: string, privateTo?: string): Promise<boolean> {
    const r = await this.command(privateTo === undefined ? { type: 'chat-send', text: text.trim() } : { type: 'chat-send', text: text.trim(), privateTo });
    if (r) this.store.dispatch({ type: 'chat', message: r.message });
    return r !== null;
  }

  async deleteChat(messageId: string): Promise<void> {
    if (await this.command({ type: 'chat-delete', messageId })) this.store.dispatch({ type: 'chat-deleted', messageId });
  }

  async chatSettings(patch: { chat?: ChatMode; privateChatToHosts?: boolean }): Promise<void> {
    await this.command({ type: 'chat-settings', ...patch });
  }

  readChat(): void {
    this.store.dispatch({ type: 'chat-read' });
  }

  async react(emoji: Reaction): Promise<void> {
    await this.command({ type: 'react', emoji });
  }

  async allowUnmuteAll(): Promise<void> {
    const r = await this.command({ type: 'allow-unmute-all' });
    if (r) this.store.set({ notice: r.allowed.length ? `Everyone may unmute now (${r.allowed.length}).` : 'Nobody was muted.' });
  }

  /** The alerts' actions: lower someone's hand, admit someone waiting, unlock the room. */
  async lowerHandOf(participantId: string): Promise<void> {
    await this.command({ type: 'lower-hand', participantId });
  }

  async admit(queueId: string): Promise<void> {
    await this.command({ type: 'admit', queueId });
  }

  async unlock(): Promise<void> {
    await this.command({ type: 'lock', locked: false });
  }

  /** Hosts: record the class, stop, pause or resume (everyone hears `recording`). */
  async record(on: boolean): Promise<void> {
    await this.command(on ? { type: 'start-recording' } : { type: 'stop-recording' });
  }

  async pauseRecording(paused: boolean): Promise<void> {
    await this.command({ type: 'pause-recording', paused });
  }

  pollPrompted(): void {
    this.store.dispatch({ type: 'poll-prompted' });
  }

  // ---- leaving ---------------------------------------------------------------------------------------

  /** Leave (the user's button, or the SDK's `leave`). */
  async leave(): Promise<void> {
    if (this.state.phase === 'waiting') await this.#waiting?.leave();
    if (this.state.phase === 'waiting' || this.state.phase === 'prejoin') return this.#over('left', 'left');
    this.#leaving = true;
    const ok = await this.command({ type: 'leave' });
    if (!ok) this.#connection.close();
  }

  #ended(reason: string | null): void {
    this.store.emit({ event: 'meeting-ended', data: { reason } });
    this.#finish('meeting_ended');
  }

  #over(code: string, reason: EmbedEvents['left']['reason']): void {
    this.store.emit({ event: 'left', data: { reason } });
    this.#finish(code);
  }

  #finish(code: string): void {
    this.#quality.stop();
    this.#waiting?.close();
    this.#media.close();
    stopTracks(this.devices.stream);
    const [title, text] = code === 'left' ? ['You left the meeting', 'You can close this page.'] : code === 'replaced' ? ['You joined from another tab', 'This tab is no longer in the meeting.'] : api.describe(code);
    const url = this.state.session?.redirectUrl;
    const redirectAt = url && !this.#opts.embedded ? Date.now() + 4000 : null;
    this.store.set({ phase: 'over', outcome: { code, title, text }, redirectAt });
    if (redirectAt && url) setTimeout(() => location.assign(url), 4000);
  }

  #fail(code: string): void {
    const [title, text] = api.describe(code);
    this.store.emit({ event: 'error', data: { code, message: text } });
    this.store.set({ phase: 'error', outcome: { code, title, text } });
  }

  /** The SDK's commands (their values were checked by isEmbedCommand). */
  onEmbedCommand(command: EmbedCommand, value?: unknown): void {
    if (command === 'set-layout') this.setLayout(value as LayoutMode);
    else if (command === 'set-page') this.setPage(value as number);
    else if (command === 'audio-only') this.setAudioOnly(value as boolean);
    else if (command === 'mute') void this.toggleMic(false);
    else if (command === 'unmute') void this.toggleMic(true);
    else if (command === 'toggleVideo') void this.toggleCamera();
    else if (command === 'raiseHand') void this.raiseHand(true);
    else if (command === 'lowerHand') void this.raiseHand(false);
    else if (command === 'leave') void this.leave();
  }
}
