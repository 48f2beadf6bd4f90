import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { TrackWriter, type TrackInfo } from '../../media/recording/format.ts';

/**
 * Real RTP for the recording tests and the bench: ffmpeg encodes a lavfi source (a tone, a test
 * pattern, a colour) and sends it with `-f rtp` to a socket here. `-readrate` paces it (a few times
 * real time) so that no packet is lost on loopback, however busy the machine.
 */

export interface Capture {
  packets: Buffer[];
  clockRate: number;
  payloadType: number;
  ssrc: number;
}

const bind = (): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
    s.once('error', reject);
    s.bind(0, '127.0.0.1', () => resolve(s));
  });

/**
 * `input` and `encode` are ffmpeg arguments: the source (`-f lavfi -i ...`) and the codec's options.
 * A capture that lost a packet on loopback (a hole in the sequence numbers: this process was too busy
 * to read its socket) is made again in real time.
 */
export async function captureRtp(o: { input: string[]; encode: string[]; payloadType: number; clockRate: number; readrate?: number }): Promise<Capture> {
  const first = await captureOnce(o, o.readrate ?? 4);
  return whole(first) ? first : captureOnce(o, 1);
}

const whole = (c: Capture) =>
  c.packets.every((p, i) => i === 0 || p.readUInt16BE(2) === ((c.packets[i - 1]!.readUInt16BE(2) + 1) & 0xffff));

async function captureOnce(o: { input: string[]; encode: string[]; payloadType: number; clockRate: number }, readrate: number): Promise<Capture> {
  const rtp = await bind();
  const rtcp = await bind(); // ffmpeg's sender reports land here, and are dropped
  const packets: Buffer[] = [];
  rtp.on('message', (m) => packets.push(m));
  const ssrc = 0x10000000 + Math.floor(Math.random() * 0x60000000);
  const args = [
    '-hide_banner', '-nostdin', '-v', 'error',
    '-readrate', String(readrate),
    ...o.input,
    ...o.encode,
    '-payload_type', String(o.payloadType), '-ssrc', String(ssrc),
    '-f', 'rtp', `rtp://127.0.0.1:${rtp.address().port}?rtcpport=${rtcp.address().port}&pkt_size=1200`,
  ];
  try {
    await new Promise<void>((resolve, reject) => {
      const p = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      p.on('error', reject);
      p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg ${args.join(' ')}: ${err.trim()}`))));
    });
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    rtp.close();
    rtcp.close();
  }
  return { packets, clockRate: o.clockRate, payloadType: o.payloadType, ssrc };
}

export const tone = (hz: number, seconds: number, readrate?: number): Promise<Capture> =>
  captureRtp({
    input: ['-f', 'lavfi', '-i', `sine=frequency=${hz}:sample_rate=48000:duration=${seconds}`],
    encode: ['-c:a', 'libopus', '-b:a', '32k', '-application', 'audio'],
    payloadType: 111,
    clockRate: 48000,
    ...(readrate ? { readrate } : {}),
  });

/** VP8 in WebRTC's realtime mode; `source` a lavfi video source, e.g. `testsrc=size=640x360:rate=15`. */
export const vp8 = (source: string, seconds: number, o: { bitrate?: string; gop?: number; readrate?: number } = {}): Promise<Capture> =>
  captureRtp({
    input: ['-f', 'lavfi', '-i', `${source}`, '-t', String(seconds)],
    encode: ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', o.bitrate ?? '600k', '-g', String(o.gop ?? 30), '-auto-alt-ref', '0', '-lag-in-frames', '0'],
    payloadType: 96,
    clockRate: 90000,
    ...(o.readrate ? { readrate: o.readrate } : {}),
  });

export const h264 = (source: string, seconds: number): Promise<Capture> =>
  captureRtp({
    input: ['-f', 'lavfi', '-i', source, '-t', String(seconds)],
    encode: ['-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-profile:v', 'baseline', '-pix_fmt', 'yuv420p', '-g', '30', '-b:v', '600k'],
    payloadType: 102,
    clockRate: 90000,
  });

/**
 * Writes `capture` as a track file: each packet's arrival is what its RTP timestamp says (the capture
 * itself ran faster than real time), from `startMs`, plus up to `jitterMs` of deterministic jitter.
 * `pause` leaves out [at, at + ms) of the timestamps' time from the arrivals, as a recording pause does.
 */
export async function writeTrack(
  dir: string,
  c: Capture,
  info: Pick<TrackInfo, 'trackId' | 'kind' | 'source' | 'participantId' | 'name' | 'host' | 'mimeType'>,
  o: { startMs: number; jitterMs?: number; pause?: { atMs: number; ms: number }; fromMs?: number; untilMs?: number },
): Promise<TrackInfo> {
  const w = await TrackWriter.create(dir, `${info.trackId}.rtp`);
  const ts0 = c.packets[0]!.readUInt32BE(4);
  let first: number | null = null;
  c.packets.forEach((p, i) => {
    const media = (((p.readUInt32BE(4) - ts0) >>> 0) * 1000) / c.clockRate;
    if (o.fromMs !== undefined && media < o.fromMs) return;
    if (o.untilMs !== undefined && media >= o.untilMs) return;
    if (o.pause && media >= o.pause.atMs && media < o.pause.atMs + o.pause.ms) return;
    const shifted = o.pause && media >= o.pause.atMs + o.pause.ms ? media - o.pause.ms : media;
    const at = o.startMs + shifted - (o.fromMs ?? 0) + (o.jitterMs ? ((i * 7919) % 13) * (o.jitterMs / 13) : 0);
    first ??= at;
    w.write(at, p);
  });
  await w.close();
  return { ...info, file: `${info.trackId}.rtp`, clockRate: c.clockRate, payloadType: c.payloadType, ssrc: c.ssrc, firstPacketAt: first };
}
