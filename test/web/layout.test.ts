import t from 'tap';
import fc from 'fast-check';
import type { RosterEntry } from '../../src/core/room.ts';
import type { RoomRole } from '../../src/core/room-access.ts';
import { person as rosterEntry } from '../helpers/roster.ts';
import { gridFor, layout, pageSize, tallestTile, thumbnailsFit, type LayoutInput } from '../../web/room/layout.ts';

// What the stage shows, decided from the room's state alone (web/room/layout.ts): no browser.

/** The n-th to join, in this role. */
const person = (id: string, n: number, roomRole: RoomRole = 'PARTICIPANT', over: Partial<RosterEntry> = {}): RosterEntry =>
  rosterEntry(id, { roomRole, joinedAt: new Date(Date.UTC(2030, 0, 1, 10, 0, n)).toISOString(), ...over });

/** A class: the teacher t, this student me, and students s1..sN; `video` says who has a camera on (default: all). */
function room(n: number, over: Partial<LayoutInput> = {}, video: (id: string) => boolean = () => true): LayoutInput {
  const roster = [person('t', 0, 'HOST'), person('me', 1), ...Array.from({ length: n }, (_, i) => person(`s${i + 1}`, i + 2))];
  return { roster, me: 'me', hasVideo: video, screen: null, spotlight: null, pinned: null, speakers: [], activeSpeaker: null, mode: 'grid', page: 1, pageSize: 16, ...over };
}

t.test('page sizes: 16 tiles on a laptop, 9 on a tablet, 4 on a phone; 6 or 3 thumbnails beside a focus', async (t) => {
  t.equal(pageSize(1280, 680, false), 16);
  t.equal(pageSize(800, 900, false), 9);
  t.equal(pageSize(390, 640, false), 4);
  t.equal(pageSize(1280, 680, true), 6);
  t.equal(pageSize(390, 640, true), 3);
  t.equal(thumbnailsFit(232, 609, 8), 4, 'a column of 232 px holds four 130 px thumbnails in 609 px');
  t.equal(thumbnailsFit(232, 100, 8), 1, 'one at least');
});

t.test('a small room: everyone who may send has a tile (an avatar while their camera is off); viewers are in the strip', async (t) => {
  const i = room(3, { roster: [...room(3).roster, person('v', 9, 'VIEWER')] }, (id) => id !== 's2');
  const l = layout(i);
  t.same(l.tiles, ['t', 'me', 's1', 's2', 's3'], 'the host first, then this user, then by joining');
  t.same(l.strip, ['v']);
  t.same([l.page, l.pages], [1, 1]);
  t.equal(l.focus, null);
});

t.test('a class of sixty: the cameras in pages of 16; people without video in the strip, hosts keep their tile', async (t) => {
  const l = layout(room(60, {}, (id) => id !== 't' && !['s5', 's6', 's7'].includes(id)));
  t.equal(l.pages, Math.ceil((60 - 3 + 2) / 16), 'the teacher (camera off) and 57 students with cameras, and me');
  t.equal(l.tiles.length, 16);
  t.equal(l.tiles[0], 't', 'the teacher leads the first page');
  t.same(l.strip, ['s5', 's6', 's7']);
  const all = new Set<string>();
  for (let page = 1; page <= l.pages; page++) for (const id of layout(room(60, { page }, (id) => id !== 't' && !['s5', 's6', 's7'].includes(id))).tiles) all.add(id);
  t.equal(all.size, 59, 'every tile on exactly one page');
  t.equal(layout(room(60, { page: 99 })).page, layout(room(60)).pages, 'a page past the end shows the last');
  t.equal(layout(room(60, { page: 0 })).page, 1);
});

t.test('last-N: in a room larger than a page, the first page follows who spoke, unless this user pinned someone', async (t) => {
  const speakers = ['s40', 's33'];
  const l = layout(room(60, { speakers }));
  t.ok(l.tiles.includes('s40') && l.tiles.includes('s33'), 'recent speakers are on the first page');
  t.same(l.tiles.slice(0, 2), ['t', 'me'], 'the teacher and this user stay first');
  t.notOk(l.tiles.includes('s14'), 'someone who did not speak moved to the next page to make room');
  const pinned = layout(room(60, { speakers, pinned: 's2' }));
  t.notOk(pinned.tiles.includes('s40'), 'with a pin, the pages keep the order people joined');
  t.same(pinned.focus, { source: 'camera', participantId: 's2', reason: 'pinned' });
});

t.test('the focus: a shared screen, then the spotlight, then a pin, then (speaker view) the active speaker or the teacher', async (t) => {
  t.same(layout(room(5, { screen: 's1', spotlight: 's2', pinned: 's3' })).focus, { source: 'screen', participantId: 's1' });
  t.same(layout(room(5, { spotlight: 's2', pinned: 's3' })).focus, { source: 'camera', participantId: 's2', reason: 'spotlight' });
  t.same(layout(room(5, { pinned: 's3' })).focus, { source: 'camera', participantId: 's3', reason: 'pinned' });
  t.same(layout(room(5, { mode: 'speaker', activeSpeaker: 's4' })).focus, { source: 'camera', participantId: 's4', reason: 'speaker' });
  t.same(layout(room(5, { mode: 'speaker', activeSpeaker: 'me' })).focus, { source: 'camera', participantId: 't', reason: 'speaker' }, 'not oneself: the teacher');
  t.same(layout(room(5, { mode: 'speaker', speakers: ['s2'] })).focus, { source: 'camera', participantId: 's2', reason: 'speaker' }, 'the last who spoke while nobody does');
  t.equal(layout(room(5, { mode: 'grid', activeSpeaker: 's4' })).focus, null, 'the grid has no focus of its own');
  const gone = room(5, { spotlight: 'left-already' });
  t.equal(layout(gone).focus, null, 'someone no longer here is not the focus');
  const spot = layout(room(5, { spotlight: 's2', pageSize: 6 }));
  t.notOk(spot.tiles.includes('s2'), 'the focused person has no thumbnail too');
  t.notOk(spot.strip.includes('s2'));
});

t.test('people who left are not shown; this user always is, even while reconnecting', async (t) => {
  const i = room(2);
  const roster = i.roster.map((p) => (p.participantId === 's1' || p.participantId === 'me' ? { ...p, connected: false } : p));
  const l = layout({ ...i, roster });
  t.notOk(l.tiles.includes('s1'));
  t.ok(l.tiles.includes('me'));
});

t.test('every person is shown once at most, and every page is full but the last (property)', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 9 }), fc.array(fc.integer({ min: 1, max: 80 }), { maxLength: 10 }), fc.option(fc.integer({ min: 1, max: 80 })), fc.boolean(), (n, size, page, spoke, pin, speaker) => {
      const i = room(n, { pageSize: size, page, speakers: spoke.map((k) => `s${k}`), pinned: pin === null ? null : `s${pin}`, mode: speaker ? 'speaker' : 'grid' }, (id) => id.length % 2 === 0);
      const l = layout(i);
      const shown = [...l.tiles, ...l.strip, ...(l.focus ? [l.focus.participantId] : [])];
      if (new Set(shown).size !== shown.length) return false;
      if (l.tiles.length > size) return false;
      if (l.page < l.pages && l.tiles.length !== size) return false;
      return l.page >= 1 && l.page <= l.pages;
    }),
  );
  t.pass('held for every room');
});

t.test('the grid fills the stage: four people at 1280x800 cover over 70% of it', async (t) => {
  const stage = { width: 1248, height: 640 };
  const g = gridFor(4, stage.width, stage.height, 8);
  t.equal(g.columns, 2);
  t.ok((4 * g.tileWidth * g.tileHeight) / (stage.width * stage.height) > 0.7, 'tiles over 70% of the stage');
  const wide = gridFor(16, 1248, 640, 8);
  t.equal(wide.columns, 4);
  t.ok(wide.tileWidth * 4 + 24 <= 1248 && ((wide.tileHeight * 4 + 24) <= 640), 'sixteen fit');
  t.same(gridFor(0, 100, 100, 8), { columns: 1, tileWidth: 0, tileHeight: 0 });
});

t.test('on a portrait stage (a phone held upright) tiles grow as tall as 3:4: one to three people fill most of it', async (t) => {
  const phone = { width: 348, height: 600 };
  const tallest = tallestTile(phone.width, phone.height);
  t.equal(tallest, 3 / 4);
  t.equal(tallestTile(1248, 640), 16 / 9, 'a landscape stage keeps 16:9');
  const fill = (n: number) => {
    const g = gridFor(n, phone.width, phone.height, 8, tallest);
    return (n * g.tileWidth * g.tileHeight) / (phone.width * phone.height);
  };
  t.same(gridFor(1, phone.width, phone.height, 8, tallest), { columns: 1, tileWidth: 348, tileHeight: 464 }, 'one person: the whole width, 3:4');
  t.ok(gridFor(1, phone.width, phone.height, 8).tileHeight < 200, 'where a 16:9 tile would leave two thirds empty');
  for (const n of [1, 2, 3]) t.ok(fill(n) > 0.75, `${n}: ${(fill(n) * 100).toFixed(0)}% of the stage`);
  const four = gridFor(4, phone.width, phone.height, 8, tallest);
  t.ok(four.tileWidth / four.tileHeight >= 3 / 4 - 0.01 && four.tileWidth / four.tileHeight <= 16 / 9 + 0.01, 'never taller than 3:4 nor wider than 16:9');
});
