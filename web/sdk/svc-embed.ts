import {
  EMBED_COMMANDS,
  LAYOUT_MODES,
  EMBED_SOURCE,
  EMBED_VERSION,
  FRAME_PARAM,
  isEmbedEvent,
  LAYOUT_PARAM,
  PARENT_PARAM,
  PREJOIN_PARAM,
  validCommandValue,
  type EmbedCommand,
  type EmbedCommandMessage,
  type EmbedEventName,
  type EmbedEvents,
  type LayoutMode,
} from '../shared/embed-protocol.ts';

/**
 * The embedding SDK, served at `/sdk/svc-embed.js`: `Svc.createFrame(selector, { url, theme })` puts the
 * room (a join link's `embedUrl`) in an iframe and returns a frame object with `on`/`off` for the room's
 * events and methods for its commands (docs/sdk.md). It accepts messages only from Aula's origin (the
 * `embedUrl`'s) and only from the iframe it created, and posts commands only to that origin.
 */

type Handler<E extends EmbedEventName> = (data: EmbedEvents[E]) => void;

/**
 * How long the room page has to say `ready` once its iframe exists. The server refuses to be framed by an
 * origin the organization did not allow (CSP `frame-ancestors`), and the browser then shows nothing and
 * tells the parent nothing: silence is the only sign, so it becomes `error { code: 'origin_not_allowed' }`.
 */
export const READY_TIMEOUT_MS = 10_000;

export interface FrameOptions {
  /** The join link's `embedUrl`, from your backend. */
  url: string;
  theme?: 'light' | 'dark';
  /** false: no pre-join screen; the room opens at once with the default camera and microphone (for platforms that already checked them). Default true. */
  prejoin?: boolean;
  /** The layout the room starts in: `grid` (default) or `speaker`. */
  layout?: LayoutMode;
}

export class SvcFrame {
  readonly iframe: HTMLIFrameElement;
  readonly #origin: string;
  readonly #frameId: string;
  readonly #handlers = new Map<EmbedEventName, Set<Handler<any>>>();
  readonly #queue: [EmbedCommand, unknown][] = [];
  #ready = false;
  #joined = false;
  #destroyed = false;
  #readyTimer: ReturnType<typeof setTimeout> | null = null;
  readonly #onMessage = (e: MessageEvent) => this.#receive(e);

  constructor(target: string | Element, options: FrameOptions) {
    const parent = typeof target === 'string' ? document.querySelector(target) : target;
    if (!parent) throw new Error(`Svc.createFrame: no element matches ${String(target)}`);
    let url: URL;
    try {
      url = new URL(options?.url);
    } catch {
      throw new Error('Svc.createFrame: options.url must be the embedUrl of a join link (an absolute URL)');
    }
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !url.pathname.startsWith('/embed/')) {
      throw new Error('Svc.createFrame: options.url must be the embedUrl of a join link (https://…/embed/…)');
    }
    this.#origin = url.origin;
    this.#frameId = randomId();
    const fragment = new URLSearchParams({ [FRAME_PARAM]: this.#frameId, [PARENT_PARAM]: location.origin });
    if (options.theme === 'dark' || options.theme === 'light') fragment.set('theme', options.theme);
    if (options.prejoin !== undefined && typeof options.prejoin !== 'boolean') throw new Error('Svc.createFrame: options.prejoin must be true or false');
    if (options.prejoin === false) fragment.set(PREJOIN_PARAM, '0');
    if (options.layout !== undefined && !(LAYOUT_MODES as readonly unknown[]).includes(options.layout)) throw new Error(`Svc.createFrame: options.layout must be one of ${LAYOUT_MODES.join(', ')}`);
    if (options.layout) fragment.set(LAYOUT_PARAM, options.layout);
    url.hash = fragment.toString();

    const iframe = document.createElement('iframe');
    iframe.src = url.toString();
    iframe.allow = 'camera; microphone; display-capture; autoplay; fullscreen';
    iframe.title = 'Live classroom';
    iframe.style.cssText = 'width:100%;height:100%;border:0;display:block';
    this.iframe = iframe;
    window.addEventListener('message', this.#onMessage);
    parent.appendChild(iframe);
    this.#readyTimer = setTimeout(() => this.#notReady(), READY_TIMEOUT_MS);
  }

  on<E extends EmbedEventName>(event: E, handler: Handler<E>): this {
    let set = this.#handlers.get(event);
    if (!set) this.#handlers.set(event, (set = new Set()));
    set.add(handler);
    return this;
  }

  off<E extends EmbedEventName>(event: E, handler: Handler<E>): this {
    this.#handlers.get(event)?.delete(handler);
    return this;
  }

  mute(): void {
    this.#send('mute');
  }
  unmute(): void {
    this.#send('unmute');
  }
  toggleVideo(): void {
    this.#send('toggleVideo');
  }
  raiseHand(): void {
    this.#send('raiseHand');
  }
  lowerHand(): void {
    this.#send('lowerHand');
  }
  leave(): void {
    this.#send('leave');
  }
  /** `grid` or `speaker`. */
  setLayout(layout: LayoutMode): void {
    this.#send('set-layout', layout);
  }
  /** The page of people to show, from 1 (`page-changed` says how many there are). */
  setPage(page: number): void {
    this.#send('set-page', page);
  }
  /** true: receive no video (everyone is still heard); false: video again. */
  audioOnly(on: boolean): void {
    this.#send('audio-only', on);
  }

  /** Leaves the room if in it, stops listening, and removes the iframe. */
  destroy(): void {
    if (this.#destroyed) return;
    if (this.#joined) this.#send('leave');
    this.#destroyed = true;
    if (this.#readyTimer) clearTimeout(this.#readyTimer);
    window.removeEventListener('message', this.#onMessage);
    this.#handlers.clear();
    // give the leave a moment to reach the page before its frame goes away
    setTimeout(() => this.iframe.remove(), this.#joined ? 300 : 0);
  }

  #send(command: EmbedCommand, value?: unknown): void {
    if (this.#destroyed || !(EMBED_COMMANDS as readonly string[]).includes(command)) return;
    if (!validCommandValue(command, value)) throw new Error(`Svc: ${command} does not take ${JSON.stringify(value)}`);
    if (!this.#ready) {
      this.#queue.push([command, value]);
      return;
    }
    const message: EmbedCommandMessage = { svc: EMBED_SOURCE, v: EMBED_VERSION, frameId: this.#frameId, kind: 'command', command, ...(value === undefined ? {} : { value }) };
    this.iframe.contentWindow?.postMessage(message, this.#origin);
  }

  #receive(e: MessageEvent): void {
    if (e.origin !== this.#origin || e.source !== this.iframe.contentWindow || !isEmbedEvent(e.data, this.#frameId)) return;
    const { event, data } = e.data;
    if (event === 'ready') {
      this.#ready = true;
      if (this.#readyTimer) clearTimeout(this.#readyTimer);
      this.#readyTimer = null;
      for (const [c, v] of this.#queue.splice(0)) this.#send(c, v);
    }
    if (event === 'joined') this.#joined = true;
    if (event === 'left' || event === 'meeting-ended') this.#joined = false;
    this.#dispatch(event, data);
  }

  /** The room page never said `ready`: most likely the server refused to be framed here (READY_TIMEOUT_MS). */
  #notReady(): void {
    this.#readyTimer = null;
    if (this.#ready || this.#destroyed) return;
    const message = `The room did not load within ${READY_TIMEOUT_MS / 1000} seconds: ${location.origin} is probably not among the organization's allowed origins (or Aula could not be reached).`;
    this.#dispatch('error', { code: 'origin_not_allowed', message });
  }

  #dispatch<E extends EmbedEventName>(event: E, data: EmbedEvents[E]): void {
    for (const h of [...(this.#handlers.get(event) ?? [])]) {
      try {
        h(data);
      } catch (err) {
        setTimeout(() => {
          throw err; // reported to the page's error handlers, without stopping the other handlers
        });
      }
    }
  }
}

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const Svc = {
  version: EMBED_VERSION,
  createFrame: (target: string | Element, options: FrameOptions) => new SvcFrame(target, options),
};
(window as unknown as { Svc: typeof Svc }).Svc = Svc;
