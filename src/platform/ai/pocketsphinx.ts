import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeDurationMs, run, toWav16kMono } from './audio.ts';
import { TranscriptionError, type Transcript, type TranscriptSegment, type TranscriptWord, type TranscribeOptions, type TranscriptionEngine } from './transcript.ts';

/** Where Debian's pocketsphinx-en-us puts the US English model (acoustic model, language model, dictionary). */
export const DEBIAN_EN_US_MODEL = '/usr/share/pocketsphinx/model/en-us';

export interface PocketSphinxOptions {
  /** The CLI of Debian's pocketsphinx package (0.8+5prealpha in Debian 12). */
  bin?: string;
  modelDir?: string;
  /** More decoder flags (`pocketsphinx_continuous -help`), after the model's. */
  args?: readonly string[];
}

/**
 * CMU PocketSphinx, offline, from Debian's `pocketsphinx` and `pocketsphinx-en-us` (docs/ai-notes.md):
 * English only. Each file is converted to 16 kHz mono and decoded by one `pocketsphinx_continuous`
 * process under `nice -n 19` (one core); its voice activity detection splits the audio into utterances,
 * which become the segments, with per-word times.
 */
export class PocketSphinxEngine implements TranscriptionEngine {
  readonly name = 'pocketsphinx';
  readonly #bin: string;
  readonly #modelDir: string;
  readonly #args: readonly string[];

  constructor(o: PocketSphinxOptions = {}) {
    this.#bin = o.bin ?? 'pocketsphinx_continuous';
    this.#modelDir = o.modelDir ?? DEBIAN_EN_US_MODEL;
    this.#args = o.args ?? [];
  }

  languages(): readonly string[] {
    return ['en'];
  }

  async transcribe(audioPath: string, o: TranscribeOptions): Promise<Transcript> {
    const language = o.language.toLowerCase().split('-')[0] ?? '';
    if (language !== 'en') throw new TranscriptionError(`pocketsphinx transcribes English only, not "${o.language}"`);
    const model = this.#modelDir;
    if (!existsSync(join(model, 'en-us', 'mdef'))) {
      throw new TranscriptionError(`pocketsphinx's English model is not at ${model}: install Debian's pocketsphinx-en-us`);
    }
    const dir = await mkdtemp(join(tmpdir(), 'aula-asr-'));
    try {
      const wav = join(dir, 'audio.wav');
      await toWav16kMono(audioPath, wav, { signal: o.signal });
      const durationMs = await probeDurationMs(wav, { signal: o.signal });
      const args = ['-infile', wav, '-time', 'yes', '-logfn', '/dev/null',
        '-hmm', join(model, 'en-us'), '-lm', join(model, 'en-us.lm.bin'), '-dict', join(model, 'cmudict-en-us.dict'), ...this.#args];
      let stdout: string;
      try {
        ({ stdout } = await run(this.#bin, args, { signal: o.signal, nice: true }));
      } catch (err) {
        if (o.signal?.aborted) throw err;
        throw new TranscriptionError(`pocketsphinx failed: ${(err as Error).message}`, { cause: err });
      }
      return { language: 'en', durationMs, segments: parsePocketSphinx(stdout, durationMs) };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** Words that are not words: silence, breath and noise markers, sentence bounds. */
const FILLER = /^(<s>|<\/s>|<sil>|\[.*\]|\+\+.*\+\+)$/;

/**
 * Parses `pocketsphinx_continuous -time yes` output: per utterance a hypothesis line, then one line per
 * word `word start end confidence` (seconds from the file's start) between `<s>` and `</s>`.
 */
export function parsePocketSphinx(stdout: string, durationMs: number): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let words: TranscriptWord[] = [];
  const flush = () => {
    if (words.length) {
      segments.push({ startMs: words[0]!.startMs, endMs: words[words.length - 1]!.endMs, text: words.map((w) => w.word).join(' '), words });
    }
    words = [];
  };
  for (const line of stdout.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length !== 4 || !/^[\d.]+$/.test(f[1]!) || !/^[\d.]+$/.test(f[2]!)) continue;
    const token = f[0]!;
    if (token === '<s>') flush();
    if (token === '</s>') {
      flush();
      continue;
    }
    if (FILLER.test(token)) continue;
    const clamp = (s: string) => Math.min(durationMs, Math.max(0, Math.round(Number.parseFloat(s) * 1000)));
    // alternative pronunciations come as word(2)
    words.push({ word: token.replace(/\(\d+\)$/, ''), startMs: clamp(f[1]!), endMs: clamp(f[2]!) });
  }
  flush();
  return segments;
}
