import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as mediasoup from 'mediasoup';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import t from 'tap';
import { ROUTER_CODECS } from '../../media/codecs.ts';
import { Recorder } from '../../media/recording/recorder.ts';
import { readManifest } from '../../media/recording/format.ts';
import { createLogger } from '../../src/platform/logger.ts';

// The recorder's consumers on a real worker: no congestion control on its loopback transport (it sends
// no feedback: with transport-cc or REMB the worker would hold a class's simulcast videos at its
// starting estimate, and most would write nothing: bench --scenario recording found 27 of 31 silent),
// the layer the composition needs asked for, and a manifest on disk from the start.
t.test('the recorder consumes without transport-cc or REMB, asks for the layers it composes, and keeps a manifest', async (t) => {
  const worker = await mediasoup.createWorker({ logLevel: 'warn' });
  t.teardown(() => worker.close());
  const router = await worker.createRouter({ mediaCodecs: ROUTER_CODECS });
  const dir = await mkdtemp(join(tmpdir(), 'aula-recorder-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const consumers: Consumer[] = [];
  router.observer.on('newtransport', (tr) => tr.observer.on('newconsumer', (c) => consumers.push(c)));

  const send = await router.createPlainTransport({ listenIp: '127.0.0.1', comedia: true, rtcpMux: true });
  const simulcast = (ssrc: number) => ({
    codecs: [{ mimeType: 'video/VP8', payloadType: 101, clockRate: 90000, rtcpFeedback: [{ type: 'transport-cc' }, { type: 'nack' }] }],
    headerExtensions: [{ uri: 'http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01' as const, id: 5 }],
    encodings: [{ ssrc, scalabilityMode: 'L1T3' }, { ssrc: ssrc + 1, scalabilityMode: 'L1T3' }, { ssrc: ssrc + 2, scalabilityMode: 'L1T3' }],
  });
  const teacherCam = await send.produce({ kind: 'video', rtpParameters: simulcast(1000) });
  const studentCam = await send.produce({ kind: 'video', rtpParameters: simulcast(2000) });
  const screen = await send.produce({ kind: 'video', rtpParameters: simulcast(3000) });

  const recorder = await Recorder.start({ recordingId: 'rec_t', segment: 0, dir, nodeId: 'node-a', router, log: createLogger({ AULA_LOG_LEVEL: 'silent' }), paused: false });
  t.match(await readManifest(dir), { recordingId: 'rec_t', durationMs: null, nodeId: 'node-a', tracks: [] }, 'a manifest from the start (a node that dies leaves it)');
  await recorder.add({ producer: teacherCam, source: 'camera', participantId: 'par_t', name: 'Tina', host: true });
  await recorder.add({ producer: studentCam, source: 'camera', participantId: 'par_s', name: 'Sam', host: false });
  await recorder.add({ producer: screen, source: 'screen', participantId: 'par_s', name: 'Sam', host: false });
  t.equal(consumers.length, 3);
  for (const c of consumers) {
    const feedback = c.rtpParameters.codecs.flatMap((x) => (x.rtcpFeedback ?? []).map((f) => f.type));
    t.notOk(feedback.includes('transport-cc') || feedback.includes('goog-remb'), `no congestion feedback (${feedback.join(', ')})`);
    t.notOk((c.rtpParameters.headerExtensions ?? []).some((h) => h.uri.includes('transport-wide-cc')), 'no transport-wide-cc extension');
  }
  t.equal(recorder.layerOf(teacherCam.id), 2, 'the teacher large');
  t.equal(recorder.layerOf(studentCam.id), 0, 'a student who is not speaking small');
  t.equal(recorder.layerOf(screen.id), 2, 'a shared screen whole');
  recorder.speaker('par_s');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(recorder.layerOf(studentCam.id), 2, 'the speaker large');
  const manifest = await recorder.stop();
  t.equal(manifest.tracks.length, 3);
  t.match(manifest.speakers, [{ participantId: 'par_s' }]);
  t.not((await readManifest(dir)).durationMs, null, 'the stop writes its duration');
});
