import { spawnSync } from 'node:child_process';

/** What the tests read of audio and video files with Debian's ffmpeg and ffprobe. */

export function run(cmd: string, args: string[]): Buffer {
  const r = spawnSync(cmd, args, { maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout;
}

/** The file's codecs (sorted) and duration, as ffprobe says. */
export function probe(file: string): { codecs: string[]; durationS: number } {
  const j = JSON.parse(run('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_name:format=duration', '-of', 'json', file]).toString()) as {
    streams: { codec_name: string }[];
    format: { duration: string };
  };
  return { codecs: j.streams.map((s) => s.codec_name).sort(), durationS: Number(j.format.duration) };
}

/** The audio, mono 48 kHz. */
export function pcm(file: string): Float32Array {
  const b = run('ffmpeg', ['-v', 'error', '-i', file, '-map', '0:a', '-ac', '1', '-ar', '48000', '-f', 'f32le', '-']);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
}

/** Goertzel: the power of `hz` in 10 ms windows, one value per window. */
export function power(samples: Float32Array, hz: number): number[] {
  const size = 480;
  const k = 2 * Math.cos((2 * Math.PI * hz) / 48000);
  const out: number[] = [];
  for (let w = 0; w + size <= samples.length; w += size) {
    let s1 = 0;
    let s2 = 0;
    for (let i = w; i < w + size; i++) {
      const s0 = samples[i]! + k * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    out.push((s1 * s1 + s2 * s2 - k * s1 * s2) / (size * size));
  }
  return out;
}

/** The share of 10 ms windows over [fromS, toS) where the tone is well above silence. */
export function toneShare(p: number[], fromS: number, toS: number, floor = 0.001): number {
  const w = p.slice(Math.round(fromS * 100), Math.round(toS * 100));
  return w.length ? w.filter((v) => v > floor).length / w.length : 0;
}

/** The first 10 ms window (in ms) where the tone is there; -1 if never. */
export const onsetMs = (p: number[], floor = 0.001): number => {
  const i = p.findIndex((v) => v > floor);
  return i < 0 ? -1 : i * 10;
};
