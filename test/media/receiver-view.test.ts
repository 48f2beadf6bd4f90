import t, { type Test } from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// What a page shows decides what it receives: real WebRTC (mediasoup-client on libwebrtc) through the
// room protocol, one node, one worker. A teacher with a camera and a screen, three students with cameras
// and microphones; each says what its page shows (`view`), and the server pauses, layers and
// prioritises each consumer, and tells each sender which layers anyone receives (dynacast).
const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const students = await Promise.all(['Sam', 'Ana', 'Lee'].map(async (name) => (await call('POST', '/public/users', { externalId: name, fullName: name, role: 'STUDENT' })).body.data));
const m = (await call('POST', '/public/meetings', { title: 'View', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
const enter = (t: Test, userId: string, role = 'PARTICIPANT') => enterRoom(t, node, tenant.key, m.id, userId, role);
const media = async () => (await node.app.media!.rooms.room(m.id))!.inspect();
const receivedBy = async (participantId: string) => (await media()).peers.find((p) => p.participantId === participantId)!.received;

const host = await enter(t, teacher.id, 'HOST');
const [sam, ana, lee] = [await enter(t, students[0].id), await enter(t, students[1].id), await enter(t, students[2].id)];
const everyone = [host, sam, ana, lee];
await host.peer.produceVideo();
await host.peer.produceVideo({ source: 'screen' });
for (const s of [sam, ana, lee]) {
  await s.peer.produceAudio();
  await s.peer.produceVideo();
}
// every consumer offered and set up (consumer-ready) everywhere: 2 videos of the teacher, 2 producers of each other student
await eventually(async () => {
  const peers = (await media()).peers;
  return peers.length === 4 && peers.every((p) => p.received.length === (p.participantId === host.participantId ? 6 : 6) && p.received.every((c) => c.ready));
}, 20_000);

t.test('before a page says what it shows, it receives every video at the top layer', async (t) => {
  await eventually(async () => (await receivedBy(sam.participantId)).every((c) => !c.paused), 5000);
  const mine = await receivedBy(sam.participantId);
  t.ok(mine.every((c) => !c.paused), 'everything resumed');
  t.same([...new Set(mine.filter((c) => c.kind === 'video').map((c) => c.spatialLayer))], [2], 'top layer');
});

t.test('a view: hidden videos paused, each visible one at the layer its tile needs, the screen and the teacher first', async (t) => {
  t.match(
    await sam.peer.view([
      { participantId: host.participantId, source: 'camera', width: 1000, height: 560 },
      { participantId: host.participantId, source: 'screen', width: 1000, height: 560 },
      { participantId: ana.participantId, source: 'camera', width: 300, height: 170 },
    ]),
    { ok: true },
  );
  const mine = await receivedBy(sam.participantId);
  const of = (from: string, source: string) => mine.find((c) => c.from === from && c.source === source)!;
  t.match(of(host.participantId, 'camera'), { paused: false, spatialLayer: 2, priority: 128 }, 'the teacher big, above thumbnails');
  t.match(of(host.participantId, 'screen'), { paused: false, priority: 255 }, 'the screen above everything');
  t.match(of(ana.participantId, 'camera'), { paused: false, spatialLayer: 0, priority: 1 }, 'a thumbnail: r0');
  t.match(of(lee.participantId, 'camera'), { paused: true }, 'off the page: paused');
  t.match(of(lee.participantId, 'mic'), { paused: false }, 'but heard');
  t.match(of(ana.participantId, 'mic'), { paused: false });

  // the receiving side sees it: the hidden camera's inbound RTP stops, the thumbnail's keeps coming
  const inbound = (from: string) => sam.peer.receivedBy(sam.peer.from(from, 'camera')!.consumer.id);
  const before = { ana: await inbound(ana.participantId), lee: await inbound(lee.participantId) };
  await new Promise((r) => setTimeout(r, 1500));
  t.ok((await inbound(ana.participantId)) > before.ana + 1000, 'the thumbnail\'s video arrives');
  t.ok((await inbound(lee.participantId)) - before.lee < 2000, 'the hidden one\'s does not');

  t.match(await sam.peer.view([{ participantId: lee.participantId, source: 'camera', width: 1280, height: 720 }]), { ok: true }, 'the page turns');
  const turned = await receivedBy(sam.participantId);
  t.match(turned.find((c) => c.from === lee.participantId && c.source === 'camera'), { paused: false, spatialLayer: 2 });
  t.match(turned.find((c) => c.from === ana.participantId && c.source === 'camera'), { paused: true });

  t.match(await sam.peer.view([{ participantId: lee.participantId, source: 'camera', width: 1280, height: 720 }], true), { ok: true });
  const audioOnly = await receivedBy(sam.participantId);
  t.ok(audioOnly.filter((c) => c.kind === 'video').every((c) => c.paused), 'audio only: every video paused');
  t.ok(audioOnly.filter((c) => c.kind === 'audio').every((c) => !c.paused), 'every voice still heard');
});

t.test('dynacast: the sender of a camera nobody shows above a thumbnail is told to send its smallest layer only, and the top one again when someone enlarges it', async (t) => {
  const leeCamera = [...lee.peer.producers.values()].find((p) => p.kind === 'video')!;
  const wanted = async () => (await media()).peers.find((p) => p.participantId === lee.participantId)!.producers.find((p) => p.producerId === leeCamera.id)!.layersWanted;
  const told = (layer: number) => lee.peer.events.filter((e) => e.type === 'layers-wanted' && e.producerId === leeCamera.id && e.maxSpatialLayer === layer).length;
  const thumbnail = { participantId: lee.participantId, source: 'camera' as const, width: 300, height: 170 };
  await Promise.all(everyone.filter((p) => p !== lee).map((p) => p.peer.view([thumbnail])));
  await lee.peer.view([]);
  await eventually(() => told(0) === 1, 5000);
  t.equal(await wanted(), 0, 'layer 0 only');
  t.equal(lee.peer.events.filter((e) => e.type === 'layers-wanted' && e.producerId !== leeCamera.id && lee.peer.producers.has(e.producerId)).length, 0, 'nothing about its other producers (the microphone has no layers)');

  await ana.peer.view([{ ...thumbnail, width: 620, height: 350 }]);
  await eventually(() => lee.peer.events.some((e) => e.type === 'layers-wanted' && e.producerId === leeCamera.id && e.maxSpatialLayer === 1), 5000);
  await ana.peer.view([{ ...thumbnail, width: 1280, height: 720 }]);
  await eventually(() => told(2) === 1, 5000);
  t.equal(await wanted(), 2, 'enlarged by one receiver: every layer again');
  t.match((await receivedBy(ana.participantId)).find((x) => x.from === lee.participantId && x.source === 'camera'), { paused: false, spatialLayer: 2 });
  await ana.peer.view([thumbnail]);
  await eventually(() => told(0) === 2, 5000);
  t.pass('back to a thumbnail: layer 0 only again');
  await ana.peer.view([thumbnail]);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(told(0), 2, 'the same view again tells the sender nothing');
});

t.test('a consumer the page cannot use is closed on the server (consumer-close), not kept paused', async (t) => {
  const camera = (await receivedBy(host.participantId)).find((c) => c.from === sam.participantId && c.source === 'camera')!;
  t.match(await host.room.command({ type: 'consumer-close', consumerId: camera.consumerId }), { ok: true });
  t.notOk((await receivedBy(host.participantId)).some((c) => c.consumerId === camera.consumerId), 'gone');
  t.match(await host.room.command({ type: 'consumer-close', consumerId: camera.consumerId }), { ok: false, error: { code: 'not_found' } }, 'once');
  // the page shows it is alive (a view): what it closed itself is not offered again, to fail again
  t.match(await host.room.command({ type: 'view', tiles: [{ participantId: sam.participantId, source: 'camera', width: 320, height: 180 }] }), { ok: true });
  await new Promise((r) => setTimeout(r, 300));
  t.notOk((await receivedBy(host.participantId)).some((c) => c.from === sam.participantId && c.source === 'camera'), 'not offered again');
});
