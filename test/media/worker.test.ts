import * as mediasoup from 'mediasoup';
import t from 'tap';

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
