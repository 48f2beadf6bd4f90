import fc from 'fast-check';
import t from 'tap';
import { layerForTile, NO_VIEW_YET, planConsumer, PRIORITY, receiverView, wantedLayer } from '../../media/view.ts';

// What a receiver gets of each video, from what its page shows: the rules apart from mediasoup.

const from = (participantId: string, source: 'camera' | 'screen' | 'mic' = 'camera', host = false) => ({ participantId, source, kind: source === 'mic' ? ('audio' as const) : ('video' as const), host });

t.test('a tile takes the layer that fits its size', async (t) => {
  t.equal(layerForTile({ width: 300, height: 170 }), 0, 'a thumbnail of a 16-tile laptop page: r0');
  t.equal(layerForTile({ width: 180, height: 320 }), 0, 'a tall phone tile (the picture fitted to its width): r0');
  t.equal(layerForTile({ width: 390, height: 300 }), 0, 'a phone in speaker view, a small big tile: r0');
  t.equal(layerForTile({ width: 800, height: 300 }), 1, 'a wide strip: the height counts');
  t.equal(layerForTile({ width: 620, height: 350 }), 1, 'a quarter of a laptop stage: r1');
  t.equal(layerForTile({ width: 1000, height: 560 }), 2, 'the big tile of the speaker view: r2');
  t.equal(layerForTile({ width: 1920, height: 1080 }), 2, 'full screen: r2');
  fc.assert(
    fc.property(fc.nat(4000), fc.nat(4000), fc.nat(400), (w, h, d) => layerForTile({ width: w + d, height: h + d }) >= layerForTile({ width: w, height: h })),
    { numRuns: 500 },
  );
  t.pass('a bigger tile never gets a smaller layer');
});

t.test('what a receiver gets of each producer', async (t) => {
  t.same(planConsumer(NO_VIEW_YET, from('a')), { on: true, spatialLayer: 2, priority: PRIORITY.large }, 'before any view: every video, top layer');
  t.same(planConsumer(NO_VIEW_YET, from('a', 'mic')), { on: true, spatialLayer: null, priority: PRIORITY.thumbnail }, 'audio always');
  const view = receiverView(
    [
      { participantId: 'teacher', source: 'camera', width: 1000, height: 560 },
      { participantId: 'a', source: 'camera', width: 300, height: 170 },
      { participantId: 'teacher', source: 'screen', width: 1000, height: 560 },
    ],
    false,
  );
  t.match(planConsumer(view, from('teacher', 'camera', true)), { on: true, spatialLayer: 2, priority: PRIORITY.host });
  t.match(planConsumer(view, from('teacher', 'screen', true)), { on: true, spatialLayer: 2, priority: PRIORITY.screen }, 'the screen first');
  t.match(planConsumer(view, from('a')), { on: true, spatialLayer: 0, priority: PRIORITY.thumbnail });
  t.match(planConsumer(view, from('b')), { on: false }, 'not on the page: paused');
  t.match(planConsumer(view, from('b', 'mic')), { on: true }, 'but heard');
  t.match(planConsumer(receiverView(view.tiles ? [...view.tiles.values()] : [], true), from('teacher', 'camera', true)), { on: false }, 'audio only: no video at all');
  t.match(planConsumer(receiverView([], false), from('a')), { on: false }, 'an empty view (a hidden tab): no video');
});

t.test('dynacast: the top layer anyone receives', async (t) => {
  t.equal(wantedLayer([]), 0, 'nobody: the smallest stays encoded');
  t.equal(wantedLayer([{ on: true, spatialLayer: 0, priority: 1 }, { on: false, spatialLayer: 2, priority: 1 }]), 0, 'a paused consumer wants nothing');
  t.equal(wantedLayer([{ on: true, spatialLayer: 0, priority: 1 }, { on: true, spatialLayer: 1, priority: 1 }]), 1);
});
