/**
 * Measures the offline engine for docs/ai-notes.md: word error rate and speed on the lesson spoken by
 * espeak-ng and flite voices, and on the real recorded sentences of Debian's pocketsphinx-testdata.
 *   node --import tsx test/ai/measure-asr.ts [--json]
 * Speed is audio seconds per CPU second of the decoder (user + system time of pocketsphinx_continuous
 * on one core), so a busy machine does not skew it; wall-clock x real time is printed too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEBIAN_EN_US_MODEL, PocketSphinxEngine } from '../../src/platform/ai/pocketsphinx.ts';
import { measureAsr, type AsrClip } from '../../src/platform/ai/measure.ts';
import { LESSON } from './lesson.ts';
import { concatWithSilences, speak, type Voice } from './speech.ts';

const VOICES: Voice[] = [
  { tts: 'espeak-ng', voice: 'en-us', speed: 130 },
  { tts: 'espeak-ng', voice: 'en-us', speed: 170 },
  { tts: 'espeak-ng', voice: 'en-us+f3', speed: 130 },
  { tts: 'espeak-ng', voice: 'en-gb-x-rp', speed: 150 },
  { tts: 'flite', voice: 'rms' },
  { tts: 'flite', voice: 'slt' },
  { tts: 'flite', voice: 'awb' },
];
const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';

/** CPU seconds (user + system) pocketsphinx_continuous spends on one 16 kHz WAV. */
function decoderCpuSeconds(wav: string): number {
  const script = `TIMEFORMAT='%U %S'; { time pocketsphinx_continuous -infile "$1" -logfn /dev/null -hmm ${DEBIAN_EN_US_MODEL}/en-us -lm ${DEBIAN_EN_US_MODEL}/en-us.lm.bin -dict ${DEBIAN_EN_US_MODEL}/cmudict-en-us.dict >/dev/null 2>/dev/null; } 2>&1`;
  const out = execFileSync('bash', ['-c', script, 'x', wav], { encoding: 'utf8' }).trim().split(/\s+/).map(Number);
  return (out[0] ?? 0) + (out[1] ?? 0);
}

const dir = mkdtempSync(join(tmpdir(), 'aula-measure-'));
const engine = new PocketSphinxEngine();
const rows: object[] = [];
try {
  const sets: { name: string; clips: AsrClip[] }[] = [];
  for (const v of VOICES) {
    const clips = LESSON.map((text, i) => ({ text, path: speak(text, join(dir, `${v.tts}-${v.voice}-${v.speed ?? 0}-${i}.wav`), v) }));
    sets.push({ name: `${v.tts} ${v.voice}${v.speed ? ` ${v.speed} wpm` : ''}`, clips });
  }
  // one long file, as a class is: the model is loaded once, so this is the speed that matters
  const rms = sets.find((s) => s.name === 'flite rms')!.clips;
  const long = concatWithSilences(Array.from({ length: 5 }, () => rms.map((c) => c.path)).flat(), 800, join(dir, 'long.wav'));
  if (existsSync(join(LIBRIVOX, 'transcription'))) {
    const clips = readFileSync(join(LIBRIVOX, 'transcription'), 'utf8').trim().split('\n').map((line) => {
      const m = /^<s> (.*) <\/s> \((.*)\)$/.exec(line.trim());
      return { text: m![1]!, path: join(LIBRIVOX, `${m![2]}.wav`) };
    });
    sets.push({ name: 'LibriVox, real speech (pocketsphinx-testdata)', clips });
  }
  sets.push({ name: 'flite rms, the lesson 5 times in one file', clips: [{ path: long, text: Array(5).fill(LESSON.join(' ')).join(' ') }] });
  for (const set of sets) {
    const m = await measureAsr(engine, set.clips);
    let cpu = 0;
    for (const c of set.clips) {
      const wav = join(dir, 'cpu.wav');
      execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', c.path, '-ar', '16000', '-ac', '1', wav]);
      cpu += decoderCpuSeconds(wav);
    }
    const row = { set: set.name, clips: m.clips, words: m.referenceWords, wer: +m.wer.toFixed(3), audioSeconds: +m.audioSeconds.toFixed(1), xRealTimeCpu: +(m.audioSeconds / cpu).toFixed(1), xRealTimeWall: +m.xRealTime.toFixed(1) };
    rows.push(row);
    if (!process.argv.includes('--json')) console.log(`| ${row.set} | ${row.clips} | ${row.words} | ${(row.wer * 100).toFixed(1)}% | ${row.audioSeconds} s | ${row.xRealTimeCpu}x | ${row.xRealTimeWall}x |`);
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
