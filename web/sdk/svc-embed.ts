import { EMBED_COMMANDS, EMBED_SOURCE, EMBED_VERSION, FRAME_PARAM, isEmbedEvent, PARENT_PARAM, type EmbedCommand, type EmbedCommandMessage, type EmbedEventName, type EmbedEvents } from '../shared/embed-protocol.ts';

/**
 * The embedding SDK, served at `/sdk/svc-embed.js`: `Svc.createFrame(selector, { url, theme })` puts the
 * room (a join link's `embedUrl`) in an iframe and returns a frame object with `on`/`off` for the room's
 * events and methods for its commands (docs/sdk.md). It accepts messages only from Aula's origin (the
 * `embedUrl`'s) and only from the iframe it created, and posts commands only to that origin.
 */

type Handler<E extends EmbedEventName> = (data: EmbedEvents[E]) => void;

export interface FrameOptions {
  /** The join link's `embedUrl`, from your backend. */
  url: string;
  theme?: 'light' | 'dark';
}

export class SvcFrame {
  readonly iframe: HTMLIFrameElement;
  readonly #origin: string;
  readonly #frameId: string;
  readonly #handlers = new Map<EmbedEventName, Set<Handler<any>>>();
  readonly #queue: EmbedCommand[] = [];
  #ready = false;
  #joined = false;
  #destroyed = false;
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
    url.hash = fragment.toString();

    const iframe = document.createElement('iframe');
    iframe.src = url.toString();
    iframe.allow = 'camera; microphone; display-capture; autoplay; fullscreen';
    iframe.title = 'Live classroom';
    iframe.style.cssText = 'width:100%;height:100%;border:0;display:block';
    this.iframe = iframe;
    window.addEventListener('message', this.#onMessage);
    parent.appendChild(iframe);
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

  /** Leaves the room if in it, stops listening, and removes the iframe. */
  destroy(): void {
    if (this.#destroyed) return;
    if (this.#joined) this.#send('leave');
    this.#destroyed = true;
    window.removeEventListener('message', this.#onMessage);
    this.#handlers.clear();
    // give the leave a moment to reach the page before its frame goes away
    setTimeout(() => this.iframe.remove(), this.#joined ? 300 : 0);
  }

  #send(command: EmbedCommand): void {
    if (this.#destroyed || !(EMBED_COMMANDS as readonly string[]).includes(command)) return;
    if (!this.#ready) {
      this.#queue.push(command);
      return;
    }
    const message: EmbedCommandMessage = { svc: EMBED_SOURCE, v: EMBED_VERSION, frameId: this.#frameId, kind: 'command', command };
    this.iframe.contentWindow?.postMessage(message, this.#origin);
  }

  #receive(e: MessageEvent): void {
    if (e.origin !== this.#origin || e.source !== this.iframe.contentWindow || !isEmbedEvent(e.data, this.#frameId)) return;
    const { event, data } = e.data;
    if (event === 'ready') {
      this.#ready = true;
      for (const c of this.#queue.splice(0)) this.#send(c);
    }
    if (event === 'joined') this.#joined = true;
    if (event === 'left' || event === 'meeting-ended') this.#joined = false;
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
