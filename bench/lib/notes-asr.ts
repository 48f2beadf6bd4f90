/**
 * The transcription half of the notes scenario (bench/notes.ts): the clip sets, and the offline engine
 * measured on them with src/platform/ai/measure.ts, with the CPU time the engine's processes took.
 *
 * The clip sets: the science lesson of test/ai/lesson.ts spoken sentence by sentence by flite's `rms`
 * voice and by espeak-ng (test/ai/speech.ts makes the clips); the real recorded sentences that Debian's
 * pocketsphinx-testdata ships with their transcripts (LibriVox read speech, and spoken card names); and
 * one long file, the flite lesson said again and again with pauses between the sentences, for the speed
 * on a class-length file (the model is loaded once).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { measureAsr, type AsrClip, type AsrMeasurement } from '../../src/platform/ai/measure.ts';
import { DEBIAN_EN_US_MODEL } from '../../src/platform/ai/pocketsphinx.ts';
import type { Transcript, TranscriptionEngine } from '../../src/platform/ai/asr.ts';
import { LESSON } from '../../test/ai/lesson.ts';
import { concatWithSilences, speak, type Voice } from '../../test/ai/speech.ts';

export const TESTDATA = '/usr/share/pocketsphinx/test/data';

export const FLITE_RMS: Voice = { tts: 'flite', voice: 'rms' };
export const ESPEAK: Voice = { tts: 'espeak-ng', voice: 'en-us', speed: 140 };

export interface ClipSet {
  name: string;
  clips: AsrClip[];
}

/** What the machine lacks for the transcription part, as an install line; null when nothing. */
export function missingTools(): string | null {
  const has = (cmd: string) => {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  const missing = [
    has('pocketsphinx_continuous') ? null : 'pocketsphinx',
    existsSync(join(DEBIAN_EN_US_MODEL, 'en-us', 'mdef')) ? null : 'pocketsphinx-en-us',
    has('flite') ? null : 'flite',
    has('espeak-ng') ? null : 'espeak-ng',
    has('ffmpeg') && has('ffprobe') ? null : 'ffmpeg',
  ].filter((p) => p !== null);
  return missing.length ? `apt-get install -y ${missing.join(' ')}` : null;
}

/** Debian's version of a package, or null. */
export function debianVersion(pkg: string): string | null {
  try {
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null;
  } catch {
    return null;
  }
}

/** The lesson's first `sentences` sentences, one clip each, in `voice`. */
export function lessonClips(dir: string, voice: Voice, sentences: number): AsrClip[] {
  return LESSON.slice(0, sentences).map((text, i) => ({ text, path: speak(text, join(dir, `${voice.tts}-${voice.voice}-${i}.wav`), voice) }));
}

/** pocketsphinx-testdata's recorded sentences that have reference transcripts (`<s> words </s> (file)` lines). */
export function testdataSets(): ClipSet[] {
  const sets: ClipSet[] = [];
  const read = (name: string, folder: string, transcription: string) => {
    const file = join(TESTDATA, folder, transcription);
    if (!existsSync(file)) return;
    const clips = readFileSync(file, 'utf8').trim().split('\n').flatMap((line) => {
      const m = /^<s>\s*(.*?)\s*<\/s>\s*\((.*)\)$/.exec(line.trim());
      const path = m ? join(TESTDATA, folder, `${m[2]}.wav`) : '';
      return m && existsSync(path) ? [{ text: m[1]!, path }] : [];
    });
    if (clips.length) sets.push({ name, clips });
  };
  read('real speech: LibriVox read sentences (pocketsphinx-testdata)', 'librivox', 'transcription');
  read('real speech: card names (pocketsphinx-testdata)', 'cards', 'cards.transcription');
  return sets;
}

/** The duration of a WAV file in seconds. */
export function wavSeconds(path: string): number {
  return Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=nw=1:nk=1', path], { encoding: 'utf8' }).trim());
}

/**
 * `clips` said again and again, `pauseMs` between sentences, until the file lasts at least `seconds`
 * (whole passes); its reference is their texts in the same order.
 */
export function longFile(dir: string, clips: readonly AsrClip[], seconds: number, pauseMs = 800): { clip: AsrClip; passes: number } {
  const pass = clips.reduce((s, c) => s + wavSeconds(c.path), 0) + (clips.length * pauseMs) / 1000;
  const passes = Math.max(1, Math.ceil(seconds / pass));
  const all = Array.from({ length: passes }, () => clips).flat();
  const path = concatWithSilences(all.map((c) => c.path), pauseMs, join(dir, 'long.wav'));
  return { clip: { path, text: all.map((c) => c.text).join(' ') }, passes };
}

/** CPU seconds of this process's children that have ended and been waited for (cutime + cstime of /proc/self/stat). */
export function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100; // in USER_HZ
}

export interface SetResult {
  name: string;
  clips: number;
  referenceWords: number;
  wer: number;
  audioSeconds: number;
  wallSeconds: number;
  /** CPU seconds of the engine's processes (ffmpeg's conversion, ffprobe, the decoder) and of this process meanwhile. */
  cpuSeconds: number;
  /** Audio seconds per wall second (the machine is shared: other work slows this one). */
  xRealTimeWall: number;
  /** Audio seconds per CPU second: the decoder is single-threaded, so this is x real time on one core of its own. */
  xRealTimeCpu: number;
  perClip: (AsrMeasurement['perClip'][number] & { cpuSeconds: number; reference: string })[];
}

/** Transcribes the set with `engine` (measure.ts's measureAsr), counting the CPU its processes take for each clip; `keep` is given each transcript. */
export async function measureSet(engine: TranscriptionEngine, set: ClipSet, keep?: (t: Transcript, clip: number) => void): Promise<SetResult> {
  const cpu: number[] = [];
  let clip = 0;
  const timed: TranscriptionEngine = {
    name: engine.name,
    languages: () => engine.languages(),
    transcribe: async (path, o) => {
      const kids = childrenCpuSeconds();
      const self = process.cpuUsage();
      try {
        const t = await engine.transcribe(path, o);
        keep?.(t, clip);
        return t;
      } finally {
        clip++;
        const own = process.cpuUsage(self);
        cpu.push(childrenCpuSeconds() - kids + (own.user + own.system) / 1e6);
      }
    },
  };
  const m = await measureAsr(timed, set.clips);
  const cpuSeconds = cpu.reduce((a, b) => a + b, 0);
  return {
    name: set.name,
    clips: m.clips,
    referenceWords: m.referenceWords,
    wer: m.wer,
    audioSeconds: m.audioSeconds,
    wallSeconds: m.wallSeconds,
    cpuSeconds,
    xRealTimeWall: m.xRealTime,
    xRealTimeCpu: cpuSeconds ? m.audioSeconds / cpuSeconds : 0,
    perClip: m.perClip.map((c, i) => ({ ...c, cpuSeconds: cpu[i] ?? 0, reference: set.clips[i]!.text })),
  };
}
