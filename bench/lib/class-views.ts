import type { ViewTile } from '../../src/core/room-protocol.ts';

/**
 * The `view` each receiver of the class bench sends, as the room page would (web/room/view-reporter.ts:
 * the tiles on screen, sizes rounded to 8 CSS pixels, its own tile left out). The stage's grid is in
 * roster order (web/room/ui/stage.tsx), so every page of one size shows the same people: the teacher
 * first, then the first students.
 *
 * - laptop: a 1280x800 stage with a 4x4 grid of 304x168 thumbnails (layer 0), and while the teacher
 *   shares, the screen in a 960x536 tile (its top layer). The page itself, presenting, shows the
 *   thumbnails in a 220 px column beside the screen (about five on screen); sixteen beside a big screen
 *   is the heavier page of a large monitor, kept here as the bound.
 * - phone: four 184x152 thumbnails and the screen across a 360 px wide page (360x200: its half-size
 *   layer).
 * - the teacher: a laptop showing 16 students (its own screen is not a tile).
 */

export type Page = 'laptop' | 'phone';

export const PAGES = {
  laptop: { tiles: 16, tile: { width: 304, height: 168 }, screen: { width: 960, height: 536 } },
  phone: { tiles: 4, tile: { width: 184, height: 152 }, screen: { width: 360, height: 200 } },
} as const;

/** Every `phoneEvery`-th student (the last of each group) is on a phone: 4 gives a quarter. */
export const pageOf = (student: number, phoneEvery: number): Page => (phoneEvery > 0 && student % phoneEvery === phoneEvery - 1 ? 'phone' : 'laptop');

/**
 * The tiles `me` shows on a `page`: the first `tiles` cameras of the others in roster order (their
 * senders' participant ids), and the shared screen when there is one and it is not its own.
 */
export function pageView(page: Page, me: string, cameras: readonly string[], screen: string | null): ViewTile[] {
  const p = PAGES[page];
  const tiles: ViewTile[] = cameras
    .filter((id) => id !== me)
    .slice(0, p.tiles)
    .map((participantId) => ({ participantId, source: 'camera', ...p.tile }));
  if (screen && screen !== me) tiles.push({ participantId: screen, source: 'screen', ...p.screen });
  return tiles;
}
