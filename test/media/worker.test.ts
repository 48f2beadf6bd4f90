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

t.test('the room codecs: Opus, VP8 and H264; an H264-only receiver gets H264', async (t) => {
  const worker = await mediasoup.createWorker({ logLevel: 'warn' });
  t.teardown(() => worker.close());
  const router = await worker.createRouter({ mediaCodecs: ROUTER_CODECS });
  t.same(router.rtpCapabilities.codecs!.filter((c) => c.mimeType !== 'video/rtx').map((c) => c.mimeType), ['audio/opus', 'video/VP8', 'video/H264']);
  const h264 = router.rtpCapabilities.codecs!.find((c) => c.mimeType === 'video/H264')!;
  const send = await router.createPlainTransport({ listenIp: '127.0.0.1', comedia: true, rtcpMux: true });
  const producer = await send.produce({
    kind: 'video',
    rtpParameters: {
      codecs: [{ mimeType: 'video/H264', payloadType: 102, clockRate: 90000, parameters: h264.parameters }],
      encodings: [{ ssrc: 1234 }],
    },
  });
  const recv = await router.createPlainTransport({ listenIp: '127.0.0.1', rtcpMux: true });
  const onlyH264 = { codecs: [{ ...h264, preferredPayloadType: h264.preferredPayloadType! }], headerExtensions: [] };
  t.ok(router.canConsume({ producerId: producer.id, rtpCapabilities: onlyH264 }));
  const consumer = await recv.consume({ producerId: producer.id, rtpCapabilities: onlyH264 });
  t.equal(consumer.rtpParameters.codecs[0]!.mimeType, 'video/H264');
});
