import { EMBED_SOURCE, EMBED_VERSION, FRAME_ID, FRAME_PARAM, isEmbedCommand, PARENT_PARAM, type EmbedCommand, type EmbedEvent, type EmbedEventMessage } from '../shared/embed-protocol.ts';

/**
 * The room page's side of the embedding SDK (web/shared/embed-protocol.ts). The page posts events only
 * to the parent origin the SDK named in the fragment, and only when that origin is on the
 * organization's allowed list (the server put the list in the page); it takes commands only from that
 * origin and from `window.parent`. The browser enforces the rest: `frame-ancestors` keeps the page
 * from rendering in any other origin's frame, and `postMessage` delivers nothing to a parent whose
 * origin is not the one named.
 */
export interface EmbedBridge {
  readonly parentOrigin: string;
  emit(e: EmbedEvent): void;
  onCommand(handler: (command: EmbedCommand, value?: unknown) => void): void;
}

function allowedOrigins(): string[] {
  try {
    const el = document.getElementById('aula-embed');
    const list = el ? (JSON.parse(el.textContent ?? '{}') as { allowedOrigins?: unknown }).allowedOrigins : null;
    return Array.isArray(list) ? list.filter((o): o is string => typeof o === 'string') : [];
  } catch {
    return [];
  }
}

/** The bridge, or null when the page is not framed by an allowed origin through the SDK. */
export function embedBridge(): EmbedBridge | null {
  if (window.parent === window) return null;
  const params = new URLSearchParams(location.hash.slice(1));
  const frameId = params.get(FRAME_PARAM) ?? '';
  const parentOrigin = params.get(PARENT_PARAM) ?? '';
  if (!FRAME_ID.test(frameId) || !allowedOrigins().includes(parentOrigin)) return null;

  const bridge: EmbedBridge = {
    parentOrigin,
    emit({ event, data }) {
      const message: EmbedEventMessage = { svc: EMBED_SOURCE, v: EMBED_VERSION, frameId, kind: 'event', event, data };
      window.parent.postMessage(message, parentOrigin);
    },
    onCommand(handler) {
      window.addEventListener('message', (e) => {
        if (e.source !== window.parent || e.origin !== parentOrigin || !isEmbedCommand(e.data, frameId)) return;
        handler(e.data.command, e.data.value);
      });
    },
  };
  bridge.emit({ event: 'ready', data: {} });
  return bridge;
}
