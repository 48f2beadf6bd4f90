import type { ViewTile } from '../../src/core/room-protocol.ts';
import { VIEW_SOURCES } from '../../src/core/room-protocol.ts';

/**
 * Tells the server what the page shows (the room protocol's `view`): the video tiles on screen now,
 * each with its size in CSS pixels, and whether the person chose audio only. The server pauses every
 * other video and picks each one's layer (docs/room-protocol.md, "What a page receives"). Measured a
 * moment after anything that may move tiles (a redraw, a resize, a scroll, the tab hidden or shown),
 * and sent only when it changed. A tile is any element with `data-view-participant` and
 * `data-view-source` (ui/stage.tsx).
 */
export const VIEW_DEBOUNCE_MS = 200;
/** A view the server did not take is sent again after this long. */
const RETRY_MS = 1000;
/** Sizes are rounded to this, so a window dragged a few pixels says nothing new. */
const ROUND_PX = 8;

export class ViewReporter {
  #timer: ReturnType<typeof setTimeout> | null = null;
  #last = '';
  #stopped = false;
  readonly #unlisten: () => void;

  constructor(
    private readonly send: (view: { tiles: ViewTile[]; audioOnly: boolean }) => Promise<unknown> | null,
    private readonly audioOnly: () => boolean,
    private readonly me: () => string | null,
  ) {
    const later = () => this.schedule();
    addEventListener('resize', later);
    addEventListener('scroll', later, true);
    document.addEventListener('visibilitychange', later);
    this.#unlisten = () => {
      removeEventListener('resize', later);
      removeEventListener('scroll', later, true);
      document.removeEventListener('visibilitychange', later);
    };
  }

  /** Measure again shortly (calls within the debounce window make one measurement). */
  schedule(delay = VIEW_DEBOUNCE_MS): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.flush();
    }, delay);
  }

  /** The media started again (a new media session knows no view): say it again at once. */
  restart(): void {
    this.#last = '';
    this.flush();
  }

  /** The tiles on screen at the last measurement, as `participantId:source`. */
  shown: ReadonlySet<string> = new Set();

  flush(): void {
    if (this.#stopped) return;
    const view = { tiles: this.measure(), audioOnly: this.audioOnly() };
    this.shown = new Set(view.audioOnly ? [] : view.tiles.map((t) => `${t.participantId}:${t.source}`));
    const text = JSON.stringify(view);
    if (text === this.#last) return;
    const sent = this.send(view);
    if (!sent) return; // no media yet: said once it starts (restart)
    this.#last = text;
    sent.catch(() => {
      // not taken (the media restarting, a refusal): said again shortly, whatever changes meanwhile
      if (this.#last !== text) return;
      this.#last = '';
      this.schedule(RETRY_MS);
    });
  }

  /** The video tiles on screen: none while the tab is hidden. */
  measure(): ViewTile[] {
    if (document.visibilityState === 'hidden') return [];
    const me = this.me();
    const vw = innerWidth;
    const vh = innerHeight;
    const tiles: ViewTile[] = [];
    for (const el of document.querySelectorAll<HTMLElement>('[data-view-participant][data-view-source]')) {
      const participantId = el.dataset.viewParticipant!;
      const source = el.dataset.viewSource as ViewTile['source'];
      if (participantId === me || !VIEW_SOURCES.includes(source)) continue;
      const r = el.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0 || r.bottom <= 0 || r.right <= 0 || r.top >= vh || r.left >= vw) continue;
      tiles.push({ participantId, source, width: Math.round(r.width / ROUND_PX) * ROUND_PX, height: Math.round(r.height / ROUND_PX) * ROUND_PX });
    }
    return tiles.sort((a, b) => (a.participantId + a.source < b.participantId + b.source ? -1 : 1));
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#unlisten();
  }
}
