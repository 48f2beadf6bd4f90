import pino from 'pino';
import t from 'tap';
import type { RtpCapabilities } from 'mediasoup/node/lib/RtpParameters.js';
import { RoomMedia } from '../../media/room.ts';
import { WorkerPool } from '../../media/workers.ts';

// The join rush at the start of a class: forty receivers placed in the same moment, on a node of three
// mediasoup workers meant to carry 30 consumers each. Each receiver's share is reserved on its worker
// when it is placed, before any consumer exists, so the rush spreads instead of piling onto the first
// worker. Real mediasoup workers; the receivers' transports are made and consumed on the server side
// (no client needed to count placements).
const CAPACITY = 30;
const RECEIVERS = 40;
const log = pino({ level: 'silent' });
const pool = new WorkerPool({ size: 3, listenIp: '127.0.0.1', announcedIp: '127.0.0.1', portMin: 46100, portMax: 46199, logLevel: 'warn', log });
await pool.start();
t.teardown(() => pool.close());

const room = await RoomMedia.open({
  meetingId: 'mtg_rush',
  placementRev: 1,
  pool,
  worker: pool.at(0)!,
  capacity: CAPACITY,
  maxIncomingBitrate: 5_000_000,
  initialOutgoingBitrate: 1_000_000,
  emit: () => {},
  log,
  state: { rev: 1, roster: [], settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true } },
});
t.teardown(() => room.close());

t.test('forty receivers placed at once spread over the workers, none past its share', async (t) => {
  const { routerRtpCapabilities } = room.join('par_teacher', 'HOST', 0);
  const caps = routerRtpCapabilities as RtpCapabilities;
  const send = await room.createPlainTransport('par_teacher', 'send', { listenIp: '127.0.0.1' });
  await room.produce('par_teacher', {
    transportId: send.transportId,
    kind: 'audio',
    source: 'mic',
    rtpParameters: { codecs: [{ mimeType: 'audio/opus', payloadType: 100, clockRate: 48000, channels: 2, parameters: {}, rtcpFeedback: [] }], encodings: [{ ssrc: 4242 }] },
  });
  await Promise.all(
    Array.from({ length: RECEIVERS }, async (_, i) => {
      const pid = `par_s${i}`;
      room.join(pid, 'PARTICIPANT', 0);
      await room.createTransport(pid, 'recv');
      await room.ready(pid, caps);
    }),
  );
  const load = pool.all().map((w) => w.consumers);
  t.equal(load.reduce((a, b) => a + b, 0), RECEIVERS, `${RECEIVERS} consumers made (${load.join(' + ')})`);
  t.ok(Math.max(...load) <= CAPACITY, `no worker past ${CAPACITY} (${load.join(' + ')})`);
  t.ok(room.workers.length >= 2, 'the room spread to another worker');
  t.same(pool.all().map((w) => w.reserved), [0, 0, 0], 'every reservation handed over');

  // a receiver that leaves gives back what it had not used yet, and what it used
  room.join('par_late', 'PARTICIPANT', 0);
  await room.createTransport('par_late', 'recv');
  t.equal(pool.all().reduce((n, w) => n + w.reserved, 0), 1, 'a placed receiver holds its share before media-ready');
  room.join('par_late', 'PARTICIPANT', 0); // media-join again: its transports close
  t.same(pool.all().map((w) => w.reserved), [0, 0, 0], 'given back when its transport closed');
});
