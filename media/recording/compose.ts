import { spawn } from 'node:child_process';
import { mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { depacketizeTrack, type Span, type TrackMedia, type TrackOutput } from './depacketize.ts';
import { readManifest } from './format.ts';
import { layout, type Placement, type Role } from './layout.ts';

/**
 * The composition: a recording's segments (format.ts) to one MP4 a student can play anywhere (H.264
 * and AAC, 1280x720), and its audio alone as M4A. Per segment, every track is rewritten into a
 * container without transcoding (depacketize.ts), the layout decides what is shown when (layout.ts),
 * and one ffmpeg run draws and encodes it; the segments are then joined without re-encoding.
 *
 * ffmpeg runs under `nice -n 19` with `threads` threads (1 by default): live rooms on the same machine
 * keep their cores. Only what the layout shows is decoded: a camera's file holds just the frames from
 * the key frame before each span it is shown in, so a class of thirty cameras costs what its few
 * speakers cost.
 */

export interface ComposeResult {
  durationMs: number;
  mp4Bytes: number;
  m4aBytes: number;
}

export interface ComposeOptions {
  /** Aborting kills ffmpeg; compose() then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Threads for ffmpeg's decoders, filters and encoder; 1 by default. */
  threads?: number;
}

const FFMPEG = 'ffmpeg';
const WIDTH = 1280;
const HEIGHT = 720;
const FPS = 15;
const BOXES: Record<Role, { x: number; y: number; w: number; h: number }> = {
  full: { x: 0, y: 0, w: WIDTH, h: HEIGHT },
  screen: { x: 0, y: 0, w: 960, h: HEIGHT },
  side: { x: 960, y: 0, w: 320, h: 240 },
};
/** Frames from this long before a span are let through, so the span's first picture is a fresh one. */
const LEAD_MS = 500;

const sec = (ms: number) => (Math.max(0, ms) / 1000).toFixed(3);

/**
 * Composes `segments` (their folders, in the order recorded) into `out.mp4` and `out.m4a`. Rejects
 * with an Error a person can read: "the recording has no audio or video", "ffmpeg failed: ...".
 */
export async function compose(segments: string[], out: { mp4: string; m4a: string }, opts: ComposeOptions = {}): Promise<ComposeResult> {
  const threads = Math.max(1, Math.floor(opts.threads ?? 1));
  const signal = opts.signal;
  signal?.throwIfAborted();
  const work = await mkdtemp(join(dirname(out.mp4), '.compose-'));
  try {
    const plans: SegmentPlan[] = [];
    for (const [i, dir] of segments.entries()) {
      const plan = await planSegment(dir, join(work, `s${i}`), signal);
      if (plan.durationMs > 0) plans.push(plan);
    }
    if (!plans.some((p) => p.video.length || p.audio.length)) {
      const skipped = plans.flatMap((p) => p.skipped);
      throw new Error(skipped.length ? `the recording has no audio or video that can be read (${skipped.join('; ')})` : 'the recording has no audio or video');
    }

    const parts: string[] = [];
    for (const [i, plan] of plans.entries()) {
      const part = join(work, `s${i}.mp4`);
      const script = join(work, `s${i}.filters`);
      await writeFile(script, filterGraph(plan));
      await ffmpeg(segmentArgs(plan, script, part, threads), signal);
      parts.push(part);
    }

    const mp4 = `${out.mp4}.part`;
    const m4a = `${out.m4a}.part`;
    if (parts.length === 1) await rename(parts[0]!, mp4);
    else {
      const list = join(work, 'segments.txt');
      await writeFile(list, parts.map((p) => `file '${p.replaceAll("'", "'\\''")}'\n`).join(''));
      await ffmpeg(['-f', 'concat', '-safe', '0', '-i', list, '-c', 'copy', '-movflags', '+faststart', '-f', 'mp4', mp4], signal);
    }
    await ffmpeg(['-i', mp4, '-map', '0:a', '-c', 'copy', '-movflags', '+faststart', '-f', 'ipod', m4a], signal);
    await rename(mp4, out.mp4);
    await rename(m4a, out.m4a);
    return {
      durationMs: plans.reduce((n, p) => n + p.durationMs, 0),
      mp4Bytes: (await stat(out.mp4)).size,
      m4aBytes: (await stat(out.m4a)).size,
    };
  } catch (err) {
    await Promise.all([rm(`${out.mp4}.part`, { force: true }), rm(`${out.m4a}.part`, { force: true })]);
    throw err;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export interface SegmentPlan {
  durationMs: number;
  /** In drawing order: each a file of the frames its placement needs. */
  video: { path: string; startMs: number; role: Role; spans: Span[] }[];
  audio: { path: string; startMs: number }[];
  /** Tracks left out, and why (a codec not handled). */
  skipped: string[];
}

/** Depacketizes a segment's tracks into `prefix`-named files and lays it out. */
export async function planSegment(dir: string, prefix: string, signal?: AbortSignal): Promise<SegmentPlan> {
  const m = await readManifest(dir).catch((err: Error) => {
    throw new Error(`a segment of the recording could not be read (${err.message})`, { cause: err });
  });
  const skipped: string[] = [];
  const scans = new Map<string, TrackMedia>();
  const audio: SegmentPlan['audio'] = [];
  let lastMs = 0;
  // every track is read, whatever its firstPacketAt says: an empty or missing file costs nothing
  for (const [i, t] of m.tracks.entries()) {
    if (t.kind === 'audio') {
      const media = await depacketizeTrack(dir, t, [{ path: `${prefix}-a${i}.ogg` }], signal);
      const w = media.written[0];
      if (media.problem) skipped.push(`${t.trackId}: ${media.problem}`);
      else if (w && w.startMs !== null) audio.push({ path: w.path, startMs: w.startMs });
      lastMs = Math.max(lastMs, media.endMs ?? 0);
    } else {
      const media = await depacketizeTrack(dir, t, [], signal);
      if (media.problem) skipped.push(`${t.trackId}: ${media.problem}`);
      else if (media.frames) scans.set(t.trackId, media);
      lastMs = Math.max(lastMs, media.endMs ?? 0);
    }
  }
  // a segment whose node died has no duration: it lasted as long as its media
  const durationMs = m.durationMs ?? Math.ceil(lastMs);
  const placements = layout({
    durationMs,
    speakers: m.speakers,
    tracks: [...scans.values()].map((s) => ({
      trackId: s.track.trackId,
      participantId: s.track.participantId,
      host: s.track.host,
      source: s.track.source === 'screen' ? 'screen' : 'camera',
      spans: s.spans,
    })),
  });

  const byTrack = new Map<string, Placement[]>();
  for (const p of placements) byTrack.set(p.trackId, [...(byTrack.get(p.trackId) ?? []), p]);
  const video: SegmentPlan['video'] = [];
  let n = 0;
  for (const [trackId, ps] of byTrack) {
    const scan = scans.get(trackId)!;
    const outputs: TrackOutput[] = ps.map((p) => ({ path: `${prefix}-v${n++}.ivf`, windows: windows(p.spans, scan.keys) }));
    const media = await depacketizeTrack(dir, scan.track, outputs, signal);
    ps.forEach((p, k) => {
      const w = media.written[k]!;
      if (w.startMs !== null) video.push({ path: w.path, startMs: w.startMs, role: p.role, spans: p.spans });
    });
  }
  // the screen under the camera beside it, should a camera ever reach into the screen's box
  const depth: Record<Role, number> = { full: 0, screen: 1, side: 2 };
  video.sort((a, b) => depth[a.role] - depth[b.role]);
  return { durationMs, video, audio, skipped };
}

/** Each span, from the last key frame before it (and its lead) to its end, overlaps merged. */
function windows(spans: Span[], keys: number[]): Span[] {
  const out: Span[] = [];
  for (const [a, b] of spans) {
    const from = a - LEAD_MS;
    let key = keys[0] ?? from;
    for (const k of keys) {
      if (k > from) break;
      key = k;
    }
    const last = out.at(-1);
    if (last && key <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([key, b]);
  }
  return out;
}

/** The filter graph of one segment (written to a file: a long class's expressions outgrow a command line). */
export function filterGraph(plan: SegmentPlan): string {
  const lines = [`color=c=black:s=${WIDTH}x${HEIGHT}:r=${FPS}:d=${sec(plan.durationMs)}[base]`];
  let below = 'base';
  plan.video.forEach((v, i) => {
    const box = BOXES[v.role];
    const gate = v.spans.map(([a, b]) => `between(t,${sec(a - LEAD_MS)},${sec(b)})`).join('+');
    const show = v.spans.map(([a, b]) => `gte(t,${sec(a)})*lt(t,${sec(b)})`).join('+');
    // at most the output's rate reaches the scaler: a 30 fps camera is scaled 15 times a second
    const rate = `isnan(prev_selected_t)+gte(t-prev_selected_t,${(1 / FPS - 0.005).toFixed(3)})`;
    lines.push(
      `[${i}:v]setpts=PTS-STARTPTS+${sec(v.startMs)}/TB,select='(${gate})*(${rate})',` +
        `scale=${box.w}:${box.h}:force_original_aspect_ratio=decrease:force_divisible_by=2:flags=bilinear[p${i}]`,
      `[${below}][p${i}]overlay=x=${box.x}+(${box.w}-w)/2:y=${box.y}+(${box.h}-h)/2:eof_action=pass:enable='${show}'[o${i}]`,
    );
    below = `o${i}`;
  });
  lines.push(`[${below}]format=yuv420p[v]`);
  const base = plan.video.length;
  plan.audio.forEach((a, i) => lines.push(`[${base + i}:a]adelay=delays=${Math.round(a.startMs)}:all=1[a${i}]`));
  const mixed =
    plan.audio.length === 0
      ? 'anullsrc=r=48000:cl=stereo'
      : plan.audio.length === 1
        ? '[a0]anull'
        : `${plan.audio.map((_, i) => `[a${i}]`).join('')}amix=inputs=${plan.audio.length}:duration=longest:dropout_transition=0:normalize=0`;
  lines.push(`${mixed},aresample=48000,aformat=sample_fmts=fltp:channel_layouts=stereo,apad[a]`);
  return lines.join(';\n') + '\n';
}

function segmentArgs(plan: SegmentPlan, script: string, out: string, threads: number): string[] {
  const t = String(threads);
  return [
    // a camera switching layers changes size: the scaler follows, where a rebuilt graph would start over
    ...plan.video.flatMap((v) => ['-reinit_filter', '0', '-threads', t, '-i', v.path]),
    ...plan.audio.flatMap((a) => ['-threads', t, '-i', a.path]),
    '-filter_complex_script', script,
    '-filter_complex_threads', t,
    '-map', '[v]', '-map', '[a]',
    '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p', '-r', String(FPS), '-g', String(FPS * 5), '-threads', t,
    '-c:a', 'aac', '-b:a', '96k', '-ar', '48000', '-ac', '2',
    '-t', sec(plan.durationMs),
    '-movflags', '+faststart', '-f', 'mp4', out,
  ];
}

/** Runs ffmpeg at the lowest CPU priority; rejects with its last line of errors, or the signal's reason. */
function ffmpeg(args: string[], signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const child = spawn('nice', ['-n', '19', FFMPEG, '-hide_banner', '-nostdin', '-v', 'error', '-y', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const abort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', abort, { once: true });
    child.on('error', (err) => {
      signal?.removeEventListener('abort', abort);
      reject(new Error(`ffmpeg could not be started: ${err.message}`));
    });
    child.on('close', (code) => {
      signal?.removeEventListener('abort', abort);
      if (signal?.aborted) return reject(signal.reason instanceof Error ? signal.reason : new Error('the composition was stopped'));
      if (code === 0) return resolve();
      // nice's own code when it cannot run the program
      if (code === 127) return reject(new Error('ffmpeg is not installed on this server (on Debian: apt-get install ffmpeg)'));
      const last = stderr.trim().split('\n').at(-1)?.trim();
      reject(new Error(`ffmpeg failed: ${last || `exit code ${code}`}`));
    });
  });
}
