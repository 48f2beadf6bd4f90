import t from 'tap';
import * as mediasoup from 'mediasoup';
import type { WebRtcTransport } from 'mediasoup/node/lib/WebRtcTransport.js';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// When a receiver's bandwidth is short, the shared screen keeps its layer and the students' thumbnails
// drop first: each consumer's priority (media/view.ts) decides who gets the bits the receiver's
// transport has. Real WebRTC senders (mediasoup-client on libwebrtc) with frames an encoder cannot
// squeeze; the receiver's bandwidth held low with its transport's setMaxOutgoingBitrate.

// the node's transports, through mediasoup's own observer, to hold one receiver's bandwidth down
const transports = new Map<string, WebRtcTransport>();
const producers = new Map<string, mediasoup.types.Producer>();
mediasoup.observer.on('newworker', (w) =>
  w.observer.on('newrouter', (r) =>
    r.observer.on('newtransport', (tr) => {
      transports.set(tr.id, tr as WebRtcTransport);
      tr.observer.on('newproducer', (p) => producers.set(p.id, p));
    }),
  ),
);

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, role: string) => (await call('POST', '/public/users', { externalId, fullName: externalId, role })).body.data;
const m = (await call('POST', '/public/meetings', { title: 'Priorities', type: 'MEETING', hostUserId: (await user('t', 'TEACHER')).id, scheduledStart: new Date().toISOString(), durationMinutes: 60, settings: { allowStudentScreenShare: true } })).body.data;

t.test('bandwidth held low: the screen keeps its top layer, the thumbnails fall to their lowest', async (t) => {
  // the screen comes last: without priorities the worker would serve the thumbnails first
  const cameras: string[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await enterRoom(t, node, tenant.key, m.id, (await user(`s${i}`, 'STUDENT')).id);
    await s.peer.produceVideo({ noise: true });
    cameras.push(s.participantId);
  }
  const presenter = await enterRoom(t, node, tenant.key, m.id, (await user('p', 'STUDENT')).id);
  const screen = await presenter.peer.produceVideo({ source: 'screen', noise: true });
  const rx = await enterRoom(t, node, tenant.key, m.id, (await user('rx', 'STUDENT')).id);
  // a laptop page: the screen big, three medium tiles (each wants the middle layer)
  await rx.peer.view([{ participantId: presenter.participantId, source: 'screen', width: 1280, height: 720 }, ...cameras.map((participantId) => ({ participantId, source: 'camera' as const, width: 480, height: 270 }))]);
  const received = async () => (await node.app.media!.rooms.room(m.id))!.inspect().peers.find((p) => p.participantId === rx.participantId)!.received.filter((c) => c.kind === 'video');
  await eventually(async () => (await received()).length === 4 && (await received()).every((c) => c.ready && !c.paused), 10_000);
  const plan = await received();
  const screenConsumer = plan.find((c) => c.source === 'screen')!;
  t.match(screenConsumer, { priority: 255, spatialLayer: 2 }, 'the screen: top priority, its top layer wanted');
  t.comment('(the thumbnails are 480x270 tiles: layer 1 each)');
  for (const c of plan.filter((c) => c.source === 'camera')) t.match(c, { priority: 1, spatialLayer: 1 }, 'a thumbnail: lowest priority, the middle layer wanted');

  // with room to spare, everyone gets the layer wanted
  // the senders' layers as the worker measures them (libwebrtc sends two of the three for 640x480)
  const layers = async (producerId: string) => (await screenProducerStats(producerId)).sort((a, b) => String(a.rid).localeCompare(String(b.rid))).map((l) => l.bitrate);
  const cameraProducers = plan.filter((c) => c.source === 'camera').map((c) => c.producerId);
  await eventually(async () => (await layers(screen.id)).length >= 2 && (await Promise.all(cameraProducers.map(layers))).every((l) => l.length >= 2), 10_000);
  const screenLayers = await layers(screen.id);
  const screenTop = screenLayers.length - 1;
  // with room to spare, everyone gets the layer wanted (or the sender's top, when it sends fewer)
  const wanted = (c: { source: string; spatialLayer: number | null }) => (c.source === 'screen' ? screenTop : Math.min(c.spatialLayer ?? 0, screenTop));
  await eventually(async () => (await received()).every((c) => c.currentLayer === wanted(c)), 20_000).catch(() => {});
  t.same((await received()).map((c) => c.currentLayer), (await received()).map(wanted), 'unconstrained: each consumer forwards the layer it wants');

  // room for the screen's top layer and the thumbnails' lowest, not for a thumbnail's middle one (rates read
  // once every layer flows, a few seconds in)
  await new Promise((r) => setTimeout(r, 3000));
  screenLayers.splice(0, screenLayers.length, ...(await layers(screen.id)));
  const thumbnailsLow = (await Promise.all(cameraProducers.map(layers))).reduce((a, l) => a + l[0]!, 0);
  const cap = Math.round((screenLayers[screenTop]! + thumbnailsLow) * 1.1);
  await transports.get(rx.peer.recv!.id)!.setMaxOutgoingBitrate(cap);
  t.comment(`layers (bit/s): screen ${screenLayers.join(', ')}; the thumbnails' lowest together ${thumbnailsLow}; the receiver held at ${cap}`);
  await eventually(async () => {
    const now = await received();
    return now.find((c) => c.source === 'screen')!.currentLayer === screenTop && now.filter((c) => c.source === 'camera').every((c) => c.currentLayer === 0);
  }, 20_000).catch(() => {});
  const held = await received();
  t.equal(held.find((c) => c.source === 'screen')!.currentLayer, screenTop, 'held low: the screen keeps its top layer');
  t.same(held.filter((c) => c.source === 'camera').map((c) => c.currentLayer), [0, 0, 0], 'every thumbnail falls to its lowest layer');
});

async function screenProducerStats(producerId: string): Promise<{ rid: string | undefined; bitrate: number }[]> {
  const p = producers.get(producerId);
  if (!p) throw new Error('no such producer');
  return (await p.getStats()).map((s) => ({ rid: s.rid, bitrate: s.bitrate }));
}
