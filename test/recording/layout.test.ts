import t from 'tap';
import { layout, steadySpeakers, type VideoTrack } from '../../media/recording/layout.ts';

// Who is shown when: the rules of the composed video, on timelines made by hand.

const cam = (participantId: string, spans: [number, number][], host = false): VideoTrack => ({
  trackId: `cam-${participantId}`,
  participantId,
  host,
  source: 'camera',
  spans,
});
const screen = (participantId: string, spans: [number, number][]): VideoTrack => ({ trackId: `screen-${participantId}`, participantId, host: false, source: 'screen', spans });
const shown = (ps: ReturnType<typeof layout>) =>
  Object.fromEntries(ps.map((p) => [`${p.role} ${p.trackId}`, p.spans]));

t.test('layout(): the active speaker over the whole frame; nobody speaking keeps the last one shown', async (t) => {
  const ps = layout({
    durationMs: 10_000,
    tracks: [cam('teacher', [[0, 10_000]], true), cam('ann', [[0, 10_000]]), cam('bob', [[0, 10_000]])],
    speakers: [
      { at: 2000, participantId: 'ann' },
      { at: 4000, participantId: null },
      { at: 6000, participantId: 'bob' },
    ],
  });
  t.same(shown(ps), {
    'full cam-teacher': [[0, 2000]], // nobody has spoken yet: the teacher
    'full cam-ann': [[2000, 6000]], // ann, then still ann while nobody speaks
    'full cam-bob': [[6000, 10_000]],
  });
});

t.test('layout(): a speaker without a camera, then the last one shown, the teacher, any camera; black without any', async (t) => {
  const ps = layout({
    durationMs: 10_000,
    tracks: [cam('teacher', [[1000, 5000]], true), cam('ann', [[0, 3000]]), cam('bob', [[6000, 8000]])],
    speakers: [
      { at: 0, participantId: 'ann' },
      { at: 2000, participantId: 'carl' }, // no camera
    ],
  });
  t.same(shown(ps), {
    'full cam-ann': [[0, 3000]], // ann, then ann still while carl speaks (she was the last shown)
    'full cam-teacher': [[3000, 5000]], // her camera off: the teacher
    'full cam-bob': [[6000, 8000]], // nobody else: any camera
  });
  t.notOk(ps.some((p) => p.spans.some(([a, b]) => a < 6000 && b > 5000)), 'black from 5 s to 6 s: no camera on');
});

t.test('layout(): a shared screen large with the teacher beside it, else the speaker; the latest screen', async (t) => {
  const ps = layout({
    durationMs: 12_000,
    tracks: [
      cam('teacher', [[0, 8000]], true),
      cam('ann', [[0, 12_000]]),
      screen('ann', [[2000, 10_000]]),
      screen('bob', [[4000, 6000]]),
    ],
    speakers: [{ at: 0, participantId: 'ann' }],
  });
  t.same(shown(ps), {
    'full cam-ann': [[0, 2000], [10_000, 12_000]],
    'screen screen-ann': [[2000, 4000], [6000, 10_000]],
    'side cam-teacher': [[2000, 8000]], // the teacher, though ann speaks
    'screen screen-bob': [[4000, 6000]], // shared later: shown while it lasts
    'side cam-ann': [[8000, 10_000]], // the teacher's camera off: the speaker's
  });
});

t.test('steadySpeakers(): turns under a second do not take the picture', async (t) => {
  t.same(
    steadySpeakers(
      [
        { at: 0, participantId: 'a' },
        { at: 3000, participantId: 'b' }, // 400 ms
        { at: 3400, participantId: 'a' },
        { at: 5000, participantId: 'c' },
      ],
      6000,
    ),
    [
      { at: 0, participantId: 'a' },
      { at: 5000, participantId: 'c' },
    ],
  );
});
