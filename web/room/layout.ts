import type { RosterEntry } from '../../src/core/room.ts';
import type { LayoutMode } from '../shared/embed-protocol.ts';

/**
 * What the stage shows, decided from the room's state alone (pure, so the rules are tested without a
 * browser: test/web/layout.test.ts). The page tells the server what it shows from the tiles this puts
 * on screen (view-reporter.ts), so this module is also what decides which videos a browser receives.
 *
 * - The focus: a screen being shared, else the person a host put in the spotlight (for everyone), else
 *   the person this user pinned (for themself); in the speaker view, else the active speaker (or the
 *   teacher). The focus is big; the other tiles are thumbnails beside it, a page at a time.
 * - The grid: a page of tiles sized to fill the stage. When everyone fits on one page, everyone who
 *   may send has a tile (an avatar while their camera is off). In a larger room, only people sending
 *   video (and the hosts) take tiles; the others are in the strip of names, and all are in the people
 *   list. Viewers never take tiles.
 * - Last-N: in a room larger than a page, the first page holds the hosts, this user and the people who
 *   spoke most recently, so the visible set follows the conversation, unless this user pinned someone
 *   (then the pages keep the order people joined).
 */


export interface LayoutInput {
  roster: readonly RosterEntry[];
  me: string | null;
  /** Whether a person's camera is on (their own camera for this user). */
  hasVideo: (participantId: string) => boolean;
  /** Who shares a screen now (the one shown), or null. */
  screen: string | null;
  spotlight: string | null;
  pinned: string | null;
  /** People who spoke, the most recent first. */
  speakers: readonly string[];
  activeSpeaker: string | null;
  mode: LayoutMode;
  /** 1-based; clamped to the pages there are. */
  page: number;
  /** Tiles on a page: pageSize(...) of the stage. */
  pageSize: number;
}

export type Focus = { source: 'screen'; participantId: string } | { source: 'camera'; participantId: string; reason: 'spotlight' | 'pinned' | 'speaker' };

export interface Layout {
  focus: Focus | null;
  /** The camera tiles of this page (thumbnails beside the focus, or the grid), in display order. */
  tiles: string[];
  /** People in the room without a tile on any page: shown by name in the strip and in the people list. */
  strip: string[];
  /** 1-based, within 1..pages. */
  page: number;
  pages: number;
}

/** A tile is 16:9; the stage's tiles per page by its size: 4 on a phone, 9 on a tablet, 16 on a laptop. Thumbnails beside a focus: 3 on a phone, 6 otherwise. */
export function pageSize(width: number, height: number, withFocus: boolean): number {
  const phone = width < 600 || height < 420;
  if (withFocus) return phone ? 3 : 6;
  if (phone) return 4;
  return width < 1000 ? 9 : 16;
}

/** How many 16:9 thumbnails of the column's width fit in its height, one at least (the column beside a focus on a laptop). */
export function thumbnailsFit(width: number, height: number, gap: number): number {
  if (width <= 0 || height <= 0) return 1;
  return Math.max(1, Math.floor((height + gap) / ((width * 9) / 16 + gap)));
}

export function layout(i: LayoutInput): Layout {
  const present = i.roster.filter((p) => p.connected || p.participantId === i.me);
  const byId = new Map(present.map((p) => [p.participantId, p]));
  const isHost = (p: RosterEntry) => p.roomRole === 'HOST' || p.roomRole === 'COHOST';
  const senders = present.filter((p) => p.roomRole !== 'VIEWER');

  // the focus, in its order of precedence
  let focus: Focus | null = null;
  if (i.screen && byId.has(i.screen)) focus = { source: 'screen', participantId: i.screen };
  else if (i.spotlight && byId.has(i.spotlight)) focus = { source: 'camera', participantId: i.spotlight, reason: 'spotlight' };
  else if (i.pinned && byId.has(i.pinned)) focus = { source: 'camera', participantId: i.pinned, reason: 'pinned' };
  else if (i.mode === 'speaker') {
    const others = senders.filter((p) => p.participantId !== i.me);
    const speaker = i.activeSpeaker && i.activeSpeaker !== i.me && byId.has(i.activeSpeaker) ? i.activeSpeaker : (i.speakers.find((id) => id !== i.me && byId.has(id)) ?? null);
    const chosen = speaker ?? others.find(isHost)?.participantId ?? others[0]?.participantId ?? null;
    if (chosen) focus = { source: 'camera', participantId: chosen, reason: 'speaker' };
  }

  // who takes a camera tile: everyone who may send while they fit on one page, else those with video and the hosts
  const size = Math.max(1, i.pageSize);
  const candidates = senders.filter((p) => !(focus?.source === 'camera' && focus.participantId === p.participantId));
  const fits = candidates.length <= size;
  const tiled = fits ? candidates : candidates.filter((p) => isHost(p) || i.hasVideo(p.participantId));
  const tiledIds = new Set(tiled.map((p) => p.participantId));
  const strip = present.filter((p) => !tiledIds.has(p.participantId) && !(focus?.source === 'camera' && focus.participantId === p.participantId)).map((p) => p.participantId);

  // the order of the pages: hosts and this user first; then, unless someone is pinned, the recent speakers; then by joining
  const joinOrder = (a: RosterEntry, b: RosterEntry) => a.joinedAt.localeCompare(b.joinedAt) || a.participantId.localeCompare(b.participantId);
  const sorted = [...tiled].sort(joinOrder);
  const first: RosterEntry[] = [];
  const take = (p: RosterEntry | undefined) => {
    if (p && !first.includes(p) && first.length < size) first.push(p);
  };
  for (const p of sorted) if (isHost(p)) take(p);
  take(sorted.find((p) => p.participantId === i.me));
  if (!i.pinned) for (const id of i.speakers) take(sorted.find((p) => p.participantId === id));
  for (const p of sorted) take(p);
  const rest = sorted.filter((p) => !first.includes(p));
  // the first page in a stable order: hosts, this user, then by joining
  const rank = (p: RosterEntry) => (isHost(p) ? 0 : p.participantId === i.me ? 1 : 2);
  first.sort((a, b) => rank(a) - rank(b) || joinOrder(a, b));
  const ordered = [...first, ...rest].map((p) => p.participantId);

  const pages = Math.max(1, Math.ceil(ordered.length / size));
  const page = Math.min(Math.max(1, Math.floor(i.page) || 1), pages);
  return { focus, tiles: ordered.slice((page - 1) * size, page * size), strip, page, pages };
}

/**
 * The tallest a tile may be, as width over height: 16:9 on a landscape stage; on a portrait one (a phone
 * held upright) as tall as 3:4, the camera's picture cropped at its sides as the phone apps crop it, so
 * that one or two people fill the screen instead of a strip across its middle.
 */
export function tallestTile(width: number, height: number): number {
  return height > width ? 3 / 4 : 16 / 9;
}

/**
 * The grid's columns for `count` tiles in a `width` x `height` stage with `gap` between tiles: the
 * number of columns that makes the tiles largest, and their size in CSS pixels. A tile is 16:9 where its
 * cell is wider than that, else as tall as its cell and `tallest` (width over height) allow.
 */
export function gridFor(count: number, width: number, height: number, gap: number, tallest = 16 / 9): { columns: number; tileWidth: number; tileHeight: number } {
  let best = { columns: 1, tileWidth: 0, tileHeight: 0 };
  if (count <= 0 || width <= 0 || height <= 0) return best;
  for (let columns = 1; columns <= count; columns++) {
    const rows = Math.ceil(count / columns);
    const cellWidth = (width - (columns - 1) * gap) / columns;
    const cellHeight = (height - (rows - 1) * gap) / rows;
    const w = Math.min(cellWidth, (cellHeight * 16) / 9);
    const h = Math.min(cellHeight, w / Math.min(tallest, 16 / 9));
    if (w * h > best.tileWidth * best.tileHeight) best = { columns, tileWidth: Math.floor(w), tileHeight: Math.floor(h) };
  }
  return best;
}
