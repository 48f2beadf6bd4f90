import { execFileSync } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A synthetic voice from Debian: espeak-ng (formant synthesis) or flite (more natural diphone/cluster voices). */
export interface Voice {
  tts: 'espeak-ng' | 'flite';
  voice: string;
  /** espeak-ng's words per minute. */
  speed?: number;
}

/** Speaks `text` into a 16 kHz mono WAV at `path` and returns the path. */
export function speak(text: string, path: string, v: Voice = { tts: 'espeak-ng', voice: 'en-us', speed: 140 }): string {
  const raw = `${path}.raw.wav`;
  if (v.tts === 'flite') execFileSync('flite', ['-voice', v.voice, '-t', text, '-o', raw], { stdio: 'ignore' });
  else execFileSync('espeak-ng', ['-v', v.voice, '-s', String(v.speed ?? 140), '-w', raw, text], { stdio: 'ignore' });
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', raw, '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', path]);
  unlinkSync(raw);
  return path;
}

/** Joins WAV clips with `silenceMs` of silence between them into one 16 kHz mono WAV at `path`. */
export function concatWithSilences(clips: readonly string[], silenceMs: number, path: string): string {
  const inputs = clips.flatMap((c) => ['-i', c]);
  const pads = clips.map((_c, i) => `[${i}:a]apad=pad_dur=${silenceMs / 1000}[a${i}]`).join(';');
  const joined = clips.map((_c, i) => `[a${i}]`).join('');
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', ...inputs, '-filter_complex', `${pads};${joined}concat=n=${clips.length}:v=0:a=1`, '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', path]);
  return path;
}

/** Speaks `text` as 48 kHz mono 16-bit samples (what a test peer's microphone sends: test/helpers/media.ts). */
export function speechPcm(text: string, v: Voice = { tts: 'flite', voice: 'rms' }, dir = tmpdir()): Int16Array {
  const wav = speak(text, join(dir, `speech-${process.pid}-${Math.random().toString(36).slice(2)}.wav`), v);
  try {
    const raw = execFileSync('ffmpeg', ['-loglevel', 'error', '-i', wav, '-ar', '48000', '-ac', '1', '-f', 's16le', '-'], { maxBuffer: 256 << 20 });
    return new Int16Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + (raw.length & ~1)));
  } finally {
    unlinkSync(wav);
  }
}
