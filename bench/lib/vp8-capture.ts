import { spawn, spawnSync } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { RTP_HEADER, VP8_PT, VP8_TS_STEP, vp8Descriptor } from './rtp.ts';

/**
 * Real VP8 for the video producers: ffmpeg (Debian's, with libvpx) encodes a moving test pattern once
 * per run at the three simulcast sizes a camera sends (media/codecs.ts: 320x180, 640x360, 1280x720 at
 * their maxBitrate), in libvpx's realtime mode with WebRTC-like settings (no look-ahead, no alt-ref
 * frames, error resilient) and a key frame every `gop` frames, and sends it with `-f rtp` to sockets
 * here. What comes back is kept as VP8 frames (the RTP payloads without ffmpeg's payload descriptor),
 * ready to be replayed by `replaySchedule` with fresh headers.
 */

export interface Chunk {
  /** VP8 bytes after the payload descriptor */
  data: Buffer;
  /** the first chunk of a frame (S bit, partition 0) */
  start: boolean;
}

export interface Layer {
  width: number;
  height: number;
  bitrate: number;
  /** frames in order; frame 0 is a key frame */
  frames: Chunk[][];
  keyFrames: number[];
}

export interface Capture {
  layers: Layer[];
  frames: number;
  fps: number;
  /** how ffmpeg was run: `fast` (as fast as it encodes) or `realtime` (-re, after a fast try lost packets) */
  mode: 'fast' | 'realtime';
  ffmpeg: string;
}

export function ffmpegVersion(): string | null {
  const r = spawnSync('ffmpeg', ['-hide_banner', '-version'], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const first = r.stdout.split('\n')[0] ?? '';
  const enc = spawnSync('ffmpeg', ['-hide_banner', '-encoders'], { encoding: 'utf8' });
  return enc.stdout.includes('libvpx') ? first : null;
}

const bindUdp = (rcvbuf: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = createSocket({ type: 'udp4', recvBufferSize: rcvbuf });
    s.once('error', reject);
    s.bind(0, '127.0.0.1', () => resolve(s));
  });

/**
 * Encodes `warmupFrames + frames` frames and keeps the last `frames` (libvpx's rate control settles
 * in the first seconds). `frames` must be a multiple of `gop`, so the kept part starts on a key frame
 * and loops onto one.
 */
export async function captureVp8Simulcast(o: {
  layers: { width: number; height: number; bitrate: number }[];
  fps: number;
  gop: number;
  frames: number;
  warmupFrames: number;
  timeoutMs: number;
}): Promise<Capture> {
  const version = ffmpegVersion();
  if (!version) throw new Error('ffmpeg with libvpx is needed for the video part (apt-get install -y ffmpeg)');
  if (o.frames % o.gop || o.warmupFrames % o.gop) throw new Error('frames and warmupFrames must be multiples of gop');
  let lastError: Error | null = null;
  for (const mode of ['fast', 'realtime'] as const) {
    try {
      const layers = await encodeOnce(o, mode);
      return { layers, frames: o.frames, fps: o.fps, mode, ffmpeg: version };
    } catch (err) {
      lastError = err as Error;
    }
  }
  throw lastError!;
}

async function encodeOnce(o: Parameters<typeof captureVp8Simulcast>[0], mode: 'fast' | 'realtime'): Promise<Layer[]> {
  const rtp: Socket[] = [];
  const rtcp: Socket[] = [];
  const packets: Buffer[][] = o.layers.map(() => []);
  try {
    for (let i = 0; i < o.layers.length; i++) {
      const s = await bindUdp(4 * 1024 * 1024);
      s.on('message', (b) => packets[i]!.push(b));
      rtp.push(s);
      // ffmpeg sends sender reports; an unbound port would answer with ICMP errors that fail its sends
      rtcp.push(await bindUdp(65536));
    }
    const total = o.frames + o.warmupFrames;
    const top = o.layers[o.layers.length - 1]!;
    const split = o.layers.map((_, i) => `[s${i}]`).join('');
    const filter = `[0:v]split=${o.layers.length}${split};` + o.layers.map((l, i) => `[s${i}]scale=${l.width}:${l.height}[v${i}]`).join(';');
    const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', ...(mode === 'realtime' ? ['-re'] : [])];
    args.push('-f', 'lavfi', '-i', `testsrc2=size=${top.width}x${top.height}:rate=${o.fps}`, '-frames:v', String(total), '-filter_complex', filter);
    o.layers.forEach((l, i) => {
      const kbps = `${Math.round(l.bitrate / 1000)}k`;
      args.push('-map', `[v${i}]`, '-frames:v', String(total), '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8');
      args.push('-b:v', kbps, '-minrate', kbps, '-maxrate', kbps, '-g', String(o.gop), '-keyint_min', String(o.gop));
      args.push('-lag-in-frames', '0', '-auto-alt-ref', '0', '-error-resilient', '1', '-threads', '1');
      args.push('-ssrc', String(1000 + i), '-payload_type', String(VP8_PT), '-f', 'rtp');
      args.push(`rtp://127.0.0.1:${rtp[i]!.address().port}?pkt_size=1200&rtcpport=${rtcp[i]!.address().port}`);
    });
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    if (code !== 0) throw new Error(`ffmpeg exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
    await new Promise((r) => setTimeout(r, 300));
    return packets.map((list, i) => toLayer(list, o.layers[i]!, o, mode));
  } finally {
    for (const s of [...rtp, ...rtcp]) s.close();
  }
}

function toLayer(list: Buffer[], spec: { width: number; height: number; bitrate: number }, o: { frames: number; warmupFrames: number; gop: number }, mode: string): Layer {
  if (!list.length) throw new Error(`no RTP from ffmpeg for ${spec.width}x${spec.height}`);
  const seq0 = list[0]!.readUInt16BE(2);
  const ts0 = list[0]!.readUInt32BE(4);
  const frames: Chunk[][] = [];
  const keyFrames: number[] = [];
  list.forEach((p, i) => {
    if (p.readUInt16BE(2) !== ((seq0 + i) & 0xffff)) throw new Error(`${spec.width}x${spec.height}: packets lost or reordered in the ${mode} capture (at ${i})`);
    const cc = p[0]! & 0x0f;
    const ext = (p[0]! & 0x10) !== 0;
    let off = RTP_HEADER + cc * 4;
    if (ext) off += 4 + p.readUInt16BE(off + 2) * 4;
    const payload = p.subarray(off, p.length - (p[0]! & 0x20 ? p[p.length - 1]! : 0));
    const d = vp8Descriptor(payload);
    if (!d) throw new Error(`${spec.width}x${spec.height}: a packet without a VP8 payload descriptor`);
    const f = Math.round(((p.readUInt32BE(4) - ts0) >>> 0) / VP8_TS_STEP);
    if (f < o.warmupFrames) return;
    const k = f - o.warmupFrames;
    if (k >= o.frames) return;
    (frames[k] ??= []).push({ data: Buffer.from(payload.subarray(d.length)), start: d.start });
    if (d.keyFrame) keyFrames.push(k);
  });
  for (let k = 0; k < o.frames; k++) {
    if (!frames[k]?.length || !frames[k]![0]!.start) throw new Error(`${spec.width}x${spec.height}: frame ${k} of the kept part is missing or does not start a frame`);
  }
  if (!keyFrames.includes(0)) throw new Error(`${spec.width}x${spec.height}: the kept part does not start on a key frame (key frames at ${keyFrames.join(',')})`);
  return { ...spec, frames, keyFrames };
}

/** One packet of the replay: which layer, which frame, which chunk, and when it leaves (ms into the loop). */
export interface Slot {
  at: number;
  layer: number;
  frame: number;
  chunk: number;
  /** last packet of its frame in its layer: the RTP marker bit */
  last: boolean;
}

/**
 * The order and times of one loop of the capture, as a browser would send it: each frame is due at
 * its capture time (frame / fps), and its packets, all layers, leave through a pacer at `pacing`
 * times the capture's average bitrate (Chrome's pacing factor is 2.5), so a key frame is spread over
 * tens of milliseconds instead of leaving in one burst.
 */
export function replaySchedule(c: Capture, pacing = 2.5): { slots: Slot[]; loopMs: number; bitrate: number } {
  const loopMs = (c.frames * 1000) / c.fps;
  let bytes = 0;
  for (const l of c.layers) for (const f of l.frames) for (const ch of f) bytes += ch.data.length + RTP_HEADER + 6;
  const bitrate = (bytes * 8) / (loopMs / 1000);
  const bitsPerMs = (bitrate * pacing) / 1000;
  const slots: Slot[] = [];
  let free = 0;
  for (let f = 0; f < c.frames; f++) {
    const due = (f * 1000) / c.fps;
    c.layers.forEach((l, li) => {
      const chunks = l.frames[f]!;
      chunks.forEach((ch, k) => {
        const at = Math.max(due, free);
        free = at + ((ch.data.length + RTP_HEADER + 6) * 8) / bitsPerMs;
        slots.push({ at, layer: li, frame: f, chunk: k, last: k === chunks.length - 1 });
      });
    });
  }
  return { slots, loopMs, bitrate };
}
