import * as mediasoup from 'mediasoup';
import t from 'tap';
import { ROUTER_CODECS } from '../../media/codecs.ts';

t.test('the mediasoup worker built from Debian\'s libraries starts and routes', async (t) => {
  const worker = await mediasoup.createWorker({ logLevel: 'warn' });
  t.teardown(() => worker.close());
  const router = await worker.createRouter({ mediaCodecs: [{ kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2 }] });
  t.ok(router.rtpCapabilities.codecs?.some((c) => c.mimeType === 'audio/opus'), 'opus is routable');
  const transport = await router.createWebRtcTransport({ listenIps: [{ ip: '127.0.0.1' }], enableUdp: true });
  t.equal(transport.iceParameters.iceLite, true);
  t.ok(transport.iceCandidates.length > 0, 'it listens for ICE');
  const usage = await worker.getResourceUsage();
  t.type(usage.ru_maxrss, 'number');
});

t.test('the room codecs: Opus and one video codec, VP8; a receiver of H264 only cannot consume it (it is told at media-ready: test/media/signaling.test.ts)', async (t) => {
  const worker = await mediasoup.createWorker({ logLevel: 'warn' });
  t.teardown(() => worker.close());
  const router = await worker.createRouter({ mediaCodecs: ROUTER_CODECS });
  t.same(router.rtpCapabilities.codecs!.filter((c) => c.mimeType !== 'video/rtx').map((c) => c.mimeType), ['audio/opus', 'video/VP8']);
  const vp8 = router.rtpCapabilities.codecs!.find((c) => c.mimeType === 'video/VP8')!;
  const send = await router.createPlainTransport({ listenIp: '127.0.0.1', comedia: true, rtcpMux: true });
  const producer = await send.produce({ kind: 'video', rtpParameters: { codecs: [{ mimeType: 'video/VP8', payloadType: 101, clockRate: 90000 }], encodings: [{ ssrc: 1234 }] } });
  const onlyH264 = {
    codecs: [{ kind: 'video' as const, mimeType: 'video/H264', clockRate: 90000, preferredPayloadType: 102, parameters: { 'packetization-mode': 1, 'profile-level-id': '42e01f' } }],
    headerExtensions: [],
  };
  t.notOk(router.canConsume({ producerId: producer.id, rtpCapabilities: onlyH264 }), 'H264 only: no consumer');
  t.ok(router.canConsume({ producerId: producer.id, rtpCapabilities: { codecs: [{ ...vp8, preferredPayloadType: vp8.preferredPayloadType! }], headerExtensions: [] } }), 'VP8: a consumer');
  await t.rejects(send.produce({ kind: 'video', rtpParameters: { codecs: [{ mimeType: 'video/H264', payloadType: 102, clockRate: 90000, parameters: { 'packetization-mode': 1 } }], encodings: [{ ssrc: 5678 }] } }), 'an H264 sender is refused: one video codec per room');
});
