import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { OggOpusWriter, oggCrc, opusSamples } from '../../media/recording/containers.ts';
import { depacketizeTrack } from '../../media/recording/depacketize.ts';
import { TrackWriter, type TrackInfo } from '../../media/recording/format.ts';
import { H264Depacketizer, Vp8Depacketizer, type VideoFrame } from '../../media/recording/payloads.ts';
import { parseRtp, RtpClock, SeqOrder, type RtpPacket } from '../../media/recording/rtp.ts';

// The depacketizers on packets made by hand: sequence wrap, reordering, duplicates, loss, the first key
// frame, padding; the containers checked by ffprobe.

interface Made {
  seq: number;
  ts: number;
  marker?: boolean;
  pt?: number;
  ssrc?: number;
  payload: Buffer | number[];
  padding?: number;
  extension?: boolean;
  csrcs?: number;
}

function rtp(m: Made): Buffer {
  const payload = Buffer.from(m.payload);
  const csrcs = m.csrcs ?? 0;
  const ext = m.extension ? Buffer.from([0xbe, 0xde, 0, 1, 0x10, 0xff, 0, 0]) : Buffer.alloc(0);
  const pad = m.padding ? Buffer.concat([Buffer.alloc(m.padding - 1), Buffer.from([m.padding])]) : Buffer.alloc(0);
  const head = Buffer.alloc(12 + csrcs * 4);
  head[0] = 0x80 | (m.padding ? 0x20 : 0) | (m.extension ? 0x10 : 0) | csrcs;
  head[1] = (m.marker ? 0x80 : 0) | (m.pt ?? 96);
  head.writeUInt16BE(m.seq & 0xffff, 2);
  head.writeUInt32BE(m.ts >>> 0, 4);
  head.writeUInt32BE(m.ssrc ?? 1234, 8);
  return Buffer.concat([head, ext, payload, pad]);
}
const packet = (m: Made): RtpPacket => parseRtp(rtp(m))!;

/** A VP8 payload: descriptor (with a 15-bit picture id) and data; a key frame carries the start code and size. */
function vp8(o: { start: boolean; key?: boolean; data?: number[]; width?: number; height?: number }): Buffer {
  const desc = Buffer.from([0x80 | (o.start ? 0x10 : 0), 0x80, 0x80 | 0x12, 0x34]);
  if (!o.start) return Buffer.concat([desc, Buffer.from(o.data ?? [0xaa, 0xbb])]);
  if (!o.key) return Buffer.concat([desc, Buffer.from([0x01, 0, 0]), Buffer.from(o.data ?? [0xcc])]);
  const head = Buffer.from([0x00, 0, 0, 0x9d, 0x01, 0x2a, 0, 0, 0, 0]);
  head.writeUInt16LE(o.width ?? 640, 6);
  head.writeUInt16LE(o.height ?? 360, 8);
  return Buffer.concat([desc, head, Buffer.from(o.data ?? [])]);
}

/** Pushes packets through SeqOrder, the clock and an assembler, as depacketizeTrack does. */
function frames(asm: Vp8Depacketizer | H264Depacketizer, arrivals: { at: number; m: Made }[]): VideoFrame[] {
  const order = new SeqOrder<undefined>(8);
  const clock = new RtpClock(90000);
  const out: VideoFrame[] = [];
  const take = (o: { at: number; packet: RtpPacket; gap: boolean; restart: boolean }) => {
    const f = asm.push(o.packet, clock.time(o.at, o.packet.timestamp, o.restart), o.gap);
    if (f) out.push(f);
  };
  for (const a of arrivals) for (const o of order.push(a.at, packet(a.m), undefined)) take(o);
  for (const o of order.flush()) take(o);
  return out;
}

t.test('parseRtp() skips CSRCs, the header extension and padding', async (t) => {
  const p = parseRtp(rtp({ seq: 7, ts: 9, marker: true, pt: 111, payload: [1, 2, 3], padding: 4, extension: true, csrcs: 2 }))!;
  t.same([p.seq, p.timestamp, p.marker, p.payloadType, [...p.payload]], [7, 9, true, 111, [1, 2, 3]]);
  t.equal(parseRtp(Buffer.from([0x80, 0x60, 0])), null, 'cut short');
  t.equal(parseRtp(Buffer.alloc(12)), null, 'not version 2');
  const bad = rtp({ seq: 1, ts: 1, payload: [...Array<number>(27).fill(0), 250] });
  bad[0]! |= 0x20;
  t.equal(parseRtp(bad), null, 'padding longer than the packet');
});

t.test('SeqOrder: through the 16-bit wrap, reordered within its window, duplicates dropped, loss flagged', async (t) => {
  const order = new SeqOrder<undefined>(4);
  const seqs = [65533, 65535, 65534, 0, 0, 1, 65534, 3, 4, 5, 6, 7, 8];
  const out = seqs.flatMap((s, i) => order.push(i, packet({ seq: s, ts: 0, payload: [1] }), undefined)).concat(order.flush());
  t.same(out.map((o) => o.packet.seq), [65533, 65534, 65535, 0, 1, 3, 4, 5, 6, 7, 8], 'in order; the duplicates and the late 65534 dropped');
  t.same(out.map((o) => o.gap), [true, false, false, false, false, true, false, false, false, false, false], 'the first packet and the one after the lost 2 carry a gap');
  t.same(out.map((o) => o.restart), [true, ...Array<boolean>(10).fill(false)]);

  const jump = new SeqOrder<undefined>();
  const a = jump.push(0, packet({ seq: 100, ts: 0, payload: [1] }), undefined);
  const b = jump.push(1, packet({ seq: 40000, ts: 0, payload: [1] }), undefined);
  const c = jump.push(2, packet({ seq: 7, ts: 0, payload: [1], ssrc: 99 }), undefined);
  t.same([...a, ...b, ...c].map((o) => [o.packet.seq, o.restart]), [[100, true], [40000, true], [7, true]], 'a jump or a new SSRC starts over');
});

t.test('RtpClock: timestamps within a run, re-anchored on arrival when the two disagree by over 500 ms', async (t) => {
  const c = new RtpClock(48000);
  t.equal(c.time(1000, 4294967296 - 960), 1000, 'the first packet at its arrival');
  t.equal(c.time(1031, 0), 1020, 'then by its timestamp, jitter ignored, through the 32-bit wrap');
  t.equal(c.time(1035, 960), 1040);
  t.equal(c.time(4000, 1920), 4000, 'a muted microphone: 3 s of arrival, 20 ms of timestamp');
  t.equal(c.time(4020, 2880), 4020);
  t.equal(c.time(4040, 2880 + 48000 * 5), 4040, 'a recording pause: 5 s of timestamp, 20 ms of arrival');
  t.equal(c.time(4300, 2880 + 48000 * 5 + 960), 4060, 'under the tolerance: the timestamps still rule');
  t.equal(c.time(9000, 5, true), 9000, 'a restart re-anchors whatever');
});

t.test('Vp8Depacketizer: frames by timestamp and marker, nothing before the first key frame', async (t) => {
  const f = frames(new Vp8Depacketizer(), [
    { at: 0, m: { seq: 65534, ts: 0, marker: true, payload: vp8({ start: true }) } }, // a delta frame first: dropped
    { at: 33, m: { seq: 65535, ts: 3000, payload: vp8({ start: true, key: true, width: 320, height: 180, data: [1] }) } },
    { at: 34, m: { seq: 1, ts: 3000, marker: true, payload: vp8({ start: false, data: [3] }) } },
    { at: 34, m: { seq: 0, ts: 3000, payload: vp8({ start: false, data: [2] }) } }, // reordered, over the wrap
    { at: 35, m: { seq: 0, ts: 3000, payload: vp8({ start: false, data: [2] }) } }, // duplicate
    { at: 36, m: { seq: 2, ts: 3000, pt: 97, payload: [0, 0, 0] } }, // RTX: another payload type, dropped by the caller here too
    { at: 66, m: { seq: 2, ts: 6000, marker: true, payload: vp8({ start: true, data: [9] }) } },
  ].filter((a) => a.m.pt === undefined));
  t.same(f.map((x) => [Math.round(x.time), x.key, x.width, x.height]), [[33, true, 320, 180], [67, false, 0, 0]]);
  t.same([...f[0]!.data.subarray(10)], [1, 2, 3], 'the key frame\'s three packets joined in sequence order, descriptors removed');
});

t.test('Vp8Depacketizer: a lost packet drops its frame and what follows up to the next key frame', async (t) => {
  const asm = new Vp8Depacketizer();
  const f = frames(asm, [
    { at: 0, m: { seq: 10, ts: 0, marker: true, payload: vp8({ start: true, key: true }) } },
    { at: 33, m: { seq: 11, ts: 3000, payload: vp8({ start: true }) } },
    // 12 lost: the frame at 3000 never completes
    { at: 34, m: { seq: 13, ts: 3000, marker: true, payload: vp8({ start: false }) } },
    { at: 66, m: { seq: 14, ts: 6000, marker: true, payload: vp8({ start: true }) } }, // refers to the lost one
    { at: 100, m: { seq: 15, ts: 9000, marker: true, payload: vp8({ start: true, key: true }) } },
    { at: 133, m: { seq: 16, ts: 12000, marker: true, payload: vp8({ start: true }) } },
    // 17, the start of the next frame, lost with the whole of the frame after it
    { at: 166, m: { seq: 18, ts: 15000, marker: true, payload: vp8({ start: false }) } },
    { at: 200, m: { seq: 19, ts: 18000, marker: true, payload: vp8({ start: true }) } },
    // whole frames lost between two complete ones
    { at: 300, m: { seq: 30, ts: 27000, marker: true, payload: vp8({ start: true }) } },
  ]);
  t.same(f.map((x) => [Math.round(x.time), x.key]), [[0, true], [100, true], [133, false]]);
  t.equal(asm.dropped, 5);
});

const nal = (type: number, ...body: number[]) => Buffer.from([0x60 | type, ...body]);
const stapA = (...nals: Buffer[]) => Buffer.concat([Buffer.from([0x78]), ...nals.flatMap((n) => [Buffer.from([n.length >> 8, n.length & 0xff]), n])]);
const fuA = (type: number, start: boolean, end: boolean, ...body: number[]) => Buffer.from([0x7c, (start ? 0x80 : 0) | (end ? 0x40 : 0) | type, ...body]);
const annexB = (...nals: Buffer[]) => Buffer.concat(nals.flatMap((n) => [Buffer.from([0, 0, 0, 1]), n]));

t.test('H264Depacketizer: single NAL units, STAP-A and FU-A to Annex B; from the first IDR', async (t) => {
  const sps = nal(7, 0x42, 0xc0, 0x1e);
  const pps = nal(8, 0xce);
  const asm = new H264Depacketizer();
  const f = frames(asm, [
    { at: 0, m: { seq: 1, ts: 0, marker: true, pt: 102, payload: nal(1, 0x11) } }, // before any IDR: dropped
    { at: 33, m: { seq: 2, ts: 3000, pt: 102, payload: stapA(sps, pps) } },
    { at: 33, m: { seq: 4, ts: 3000, pt: 102, payload: fuA(5, false, false, 0xb2) } }, // reordered
    { at: 33, m: { seq: 3, ts: 3000, pt: 102, payload: fuA(5, true, false, 0xb1) } },
    { at: 34, m: { seq: 5, ts: 3000, marker: true, pt: 102, payload: fuA(5, false, true, 0xb3) } },
    { at: 66, m: { seq: 6, ts: 6000, marker: true, pt: 102, payload: nal(1, 0x22) } },
    // an FU-A whose middle is lost: dropped, and so is the next frame, up to an IDR without SPS/PPS
    { at: 100, m: { seq: 7, ts: 9000, pt: 102, payload: fuA(1, true, false, 1) } },
    { at: 100, m: { seq: 9, ts: 9000, marker: true, pt: 102, payload: fuA(1, false, true, 3) } },
    { at: 133, m: { seq: 10, ts: 12000, marker: true, pt: 102, payload: nal(1, 0x33) } },
    { at: 166, m: { seq: 11, ts: 15000, marker: true, pt: 102, payload: nal(5, 0x44) } },
  ]);
  t.same(f.map((x) => [Math.round(x.time), x.key]), [[33, true], [67, false], [167, true]]);
  t.same(f[0]!.data, annexB(sps, pps, Buffer.from([0x65, 0xb1, 0xb2, 0xb3])), 'the IDR rebuilt from its fragments, NAL header from the FU indicator and header');
  t.same(f[1]!.data, annexB(nal(1, 0x22)));
  t.same(f[2]!.data, annexB(sps, pps, nal(5, 0x44)), 'an IDR that came alone gets the last SPS and PPS');
  t.equal(asm.dropped, 3);

  const interleaved = new H264Depacketizer();
  t.same(frames(interleaved, [{ at: 0, m: { seq: 1, ts: 0, marker: true, pt: 102, payload: Buffer.from([0x79, 0, 0]) } }]), [], 'STAP-B is not taken');
  t.equal(interleaved.unsupported, 1);
});

t.test('opusSamples() reads the TOC byte', async (t) => {
  t.equal(opusSamples(Buffer.from([0xf8, 0xff, 0xfe])), 960, 'CELT 20 ms, one frame');
  t.equal(opusSamples(Buffer.from([(1 << 3) | 1, 0, 0])), 1920, 'SILK 20 ms, two frames');
  t.equal(opusSamples(Buffer.from([(3 << 3) | 3, 2])), 5760, 'SILK 60 ms, code 3 with two frames');
  t.equal(opusSamples(Buffer.from([(3 << 3) | 3, 3])), 0, '180 ms is more than a packet holds');
  t.equal(opusSamples(Buffer.alloc(0)), 0);
});

t.test('OggOpusWriter: pages whose CRC checks, granule positions in 48 kHz samples', async (t) => {
  const pages: Buffer[] = [];
  const w = new OggOpusWriter((b) => pages.push(b), 1);
  for (let i = 0; i < 60; i++) w.packet(Buffer.from([0xf8, 0xff, 0xfe]), 960);
  w.silenceTo(60 * 960 + 480 + 240 + 119);
  w.end();
  t.equal(w.samples, 60 * 960 + 720, 'silence to the 2.5 ms below the target');
  t.equal(pages.length, 4, 'OpusHead, OpusTags, a page a second');
  for (const p of pages) {
    const copy = Buffer.from(p);
    copy.writeUInt32LE(0, 22);
    t.equal(oggCrc(copy), p.readUInt32LE(22));
  }
  t.same(pages.map((p) => Number(p.readBigInt64LE(6))), [0, 0, 48000, 60 * 960 + 720]);
  t.same(pages.map((p) => p[5]), [0x02, 0, 0, 0x04], 'beginning and end of stream');
  t.equal(pages[0]!.subarray(28, 36).toString('latin1'), 'OpusHead');
  t.equal(oggCrc(Buffer.from('123456789')), ~0x765e7680 >>> 0, 'CRC-32/CKSUM\'s check value, before its final inversion');
});

const track = (over: Partial<TrackInfo>): TrackInfo => ({
  trackId: 't',
  file: 't.rtp',
  kind: 'audio',
  source: 'mic',
  participantId: 'p',
  name: 'p',
  host: false,
  mimeType: 'audio/opus',
  clockRate: 48000,
  payloadType: 111,
  ssrc: 1234,
  firstPacketAt: 0,
  ...over,
});

const ffprobe = (file: string) => {
  const r = spawnSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_name,duration:format=duration', '-of', 'json', file], { encoding: 'utf8' });
  return { ok: r.status === 0 && !r.stderr.trim(), stderr: r.stderr, json: JSON.parse(r.stdout || '{}') as { streams?: { codec_name: string }[]; format?: { duration: string } } };
};

t.test('depacketizeTrack(): padding and RTX ignored, a muted stretch filled with silence, read by ffmpeg', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'aula-depack-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const w = await TrackWriter.create(dir, 't.rtp');
  const silence = [0xf8, 0xff, 0xfe];
  let seq = 65500;
  // 1 s of packets from 500 ms, a 2 s mute (no packets; the timestamps run on), then 1 s more
  for (let i = 0; i < 50; i++) w.write(500 + i * 20, rtp({ seq: seq++, ts: i * 960, pt: 111, payload: silence }));
  w.write(1490, rtp({ seq: seq++, ts: 0, pt: 111, payload: [], padding: 200 })); // padding only: empty payload
  w.write(1495, rtp({ seq: 3, ts: 0, pt: 112, payload: [1, 2, 3] })); // RTX
  for (let i = 0; i < 50; i++) w.write(3500 + i * 20, rtp({ seq: seq++, ts: 150 * 960 + i * 960, pt: 111, payload: silence }));
  await w.close();
  const m = await depacketizeTrack(dir, track({}), [{ path: join(dir, 't.ogg') }]);
  t.equal(m.startMs, 500);
  t.equal(m.endMs, 4500);
  t.same(m.spans, [[500, 1500], [3500, 4500]], 'the mute splits its spans');
  t.equal(m.frames, 100);
  t.equal(m.dropped, 0);
  t.same(m.written, [{ path: join(dir, 't.ogg'), startMs: 500, frames: 100 }]);
  const p = ffprobe(join(dir, 't.ogg'));
  t.ok(p.ok, p.stderr);
  t.equal(p.json.streams?.[0]?.codec_name, 'opus');
  t.equal(Number(p.json.format?.duration), 4, 'from the first packet to the last, the mute filled');
});

t.test('depacketizeTrack(): VP8 to IVF, windows from key frames, an unknown codec named', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'aula-depack-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const w = await TrackWriter.create(dir, 'v.rtp');
  // ten frames a second for 3 s; a key frame each second
  for (let i = 0; i < 30; i++) {
    w.write(1000 + i * 100, rtp({ seq: 65530 + i, ts: (2 ** 32 - 9000 + i * 9000) % 2 ** 32, marker: true, payload: vp8({ start: true, key: i % 10 === 0, data: [i] }) }));
  }
  await w.close();
  const v = track({ trackId: 'v', file: 'v.rtp', kind: 'video', source: 'camera', mimeType: 'video/VP8', clockRate: 90000, payloadType: 96 });
  const m = await depacketizeTrack(dir, v, [{ path: join(dir, 'all.ivf') }, { path: join(dir, 'part.ivf'), windows: [[2500, 3400]] }]);
  t.same(m.keys, [1000, 2000, 3000]);
  t.same([m.startMs, m.endMs, m.width, m.height], [1000, 4000, 640, 360]);
  t.same(m.written.map((x) => [x.startMs, x.frames]), [[1000, 30], [3000, 5]], 'a window is written from its first key frame');
  const ivf = readFileSync(join(dir, 'part.ivf'));
  t.equal(ivf.subarray(0, 4).toString('latin1'), 'DKIF');
  t.same([ivf.readBigUInt64LE(32 + 4), ivf.readBigUInt64LE(32 + 12 + ivf.readUInt32LE(32) + 4)], [0n, 100n], 'timestamps in ms from the file\'s start');
  const p = ffprobe(join(dir, 'all.ivf'));
  t.ok(p.ok, p.stderr);
  t.equal(p.json.streams?.[0]?.codec_name, 'vp8');

  const vp9 = await depacketizeTrack(dir, { ...v, mimeType: 'video/VP9' });
  t.equal(vp9.problem, 'video/VP9 is not a codec the recordings handle');
});

t.test('depacketizeTrack(): a camera off for 2 s is two spans, a screen that sent nothing for 30 s is one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'aula-depack-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const w = await TrackWriter.create(dir, 'v.rtp');
  const times = [0, 100, 200, 2300, 2400, 32_400, 32_500];
  times.forEach((ms, i) => w.write(ms, rtp({ seq: i, ts: ms * 90, marker: true, payload: vp8({ start: true, key: i === 0 }) })));
  await w.close();
  const v = track({ trackId: 'v', file: 'v.rtp', kind: 'video', source: 'camera', mimeType: 'video/VP8', clockRate: 90000, payloadType: 96 });
  t.same((await depacketizeTrack(dir, v)).spans, [[0, 300], [2300, 2500], [32_400, 32_600]], 'a camera: off while nothing came');
  t.same((await depacketizeTrack(dir, { ...v, source: 'screen' })).spans, [[0, 32_600]], 'a screen: on from its first frame to its last');
});
