import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeDurationMs, run, toWav16kMono, wavHeader } from './audio.ts';
import {
  TranscriptionError,
  type LiveTranscriber,
  type LiveTranscriberOptions,
  type Transcript,
  type TranscriptSegment,
  type TranscriptWord,
  type TranscribeOptions,
  type TranscriptionEngine,
} from './transcript.ts';

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

  /** The decoder's flags for the model, after a check that it speaks the language and is installed. */
  #modelArgs(languageTag: string): string[] {
    const language = languageTag.toLowerCase().split('-')[0] ?? '';
    if (language !== 'en') throw new TranscriptionError(`pocketsphinx transcribes English only, not "${languageTag}"`);
    const model = this.#modelDir;
    if (!existsSync(join(model, 'en-us', 'mdef'))) {
      throw new TranscriptionError(`pocketsphinx's English model is not at ${model}: install Debian's pocketsphinx-en-us`);
    }
    return ['-time', 'yes', '-logfn', '/dev/null', '-hmm', join(model, 'en-us'), '-lm', join(model, 'en-us.lm.bin'), '-dict', join(model, 'cmudict-en-us.dict'), ...this.#args];
  }

  /** One decoder process for the stream, its model loaded once (live captions). */
  live(o: LiveTranscriberOptions): LiveTranscriber {
    return new LiveSphinx(this.#bin, this.#modelArgs(o.language), o);
  }

  async transcribe(audioPath: string, o: TranscribeOptions): Promise<Transcript> {
    const modelArgs = this.#modelArgs(o.language);
    const dir = await mkdtemp(join(tmpdir(), 'aula-asr-'));
    try {
      const wav = join(dir, 'audio.wav');
      await toWav16kMono(audioPath, wav, { signal: o.signal });
      const durationMs = await probeDurationMs(wav, { signal: o.signal });
      const args = ['-infile', wav, ...modelArgs];
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

/** Live pieces are 16 kHz mono. */
const LIVE_RATE = 16_000;
/** Quiet written after each piece, so the decoder's voice detection ends the utterance there and answers at once. */
const PIECE_PAD_SECONDS = 0.5;
/** Silence frames (10 ms) that end an utterance: less than the pad, so every piece ends one. */
const LIVE_POSTSPEECH_FRAMES = '25';
/**
 * A smaller search for live pieces (every second frame, the two best Gaussians, five words a frame):
 * test/serial/room-captions.test.ts measured captions 2.2 to 2.4 s after their audio began (max 2.6 s)
 * with 19 of 22 content words, against 2.5 to 2.8 s (max 4.6 s) and 20 to 21 of 22 with the full search,
 * at about two thirds of its CPU (docs/ai-notes.md, "Live captions").
 */
const LIVE_SEARCH = ['-ds', '2', '-topn', '2', '-maxwpf', '5'];

/**
 * A running `pocketsphinx_continuous` reading one endless WAV stream on its standard input (through
 * `cat`: the decoder opens /dev/stdin, which must be a pipe, not Node's socket), in a process group of
 * its own: closing kills the group; the decoder ending by itself ends the group, which is reported. Each piece is written
 * with half a second of quiet after it, so the decoder ends an utterance there and prints it with its
 * word times at once (its output line-buffered by stdbuf); an utterance is the piece's in which its first
 * word starts. The model is loaded once, not for every piece, and the cepstral normalization learns the
 * speaker's microphone as the class goes on. Under `nice -n 10`: below the media worker, above the notes.
 */
class LiveSphinx implements LiveTranscriber {
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #o: LiveTranscriberOptions;
  /** Pieces written and not yet answered: their number and where they start and end in the stream (s). */
  #pieces: { n: number; start: number; end: number }[] = [];
  #next = 0;
  #written = 0;
  #heard = 0;
  #words: { word: string; start: number; end: number }[] = [];
  #partial = '';
  #closed = false;

  constructor(bin: string, modelArgs: string[], o: LiveTranscriberOptions) {
    this.#o = o;
    const args = ['-infile', '/dev/stdin', '-vad_postspeech', LIVE_POSTSPEECH_FRAMES, ...modelArgs, ...LIVE_SEARCH];
    // the decoder's end ends its process group (cat, which waits on its input, with it), so its death is seen
    this.#proc = spawn('sh', ['-c', 'cat | (nice -n 10 stdbuf -oL "$@"; kill -TERM 0)', 'sh', bin, ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.#proc.stdin.on('error', () => {});
    this.#proc.stderr.resume();
    this.#proc.stdout.setEncoding('utf8');
    this.#proc.stdout.on('data', (text: string) => this.#read(text));
    this.#proc.on('error', (err) => this.#end(err));
    this.#proc.on('exit', (code, signal) => this.#end(new TranscriptionError(`pocketsphinx stopped (${signal ?? `exit ${code}`})`)));
    this.#proc.stdin.write(wavHeader(LIVE_RATE, 0x7fffffff));
  }

  get processGroup(): number | undefined {
    return this.#proc.pid;
  }

  get behindSeconds(): number {
    return Math.max(0, this.#written - this.#heard - PIECE_PAD_SECONDS);
  }

  write(samples: Int16Array): number {
    const n = this.#next++;
    if (this.#closed) return n;
    const start = this.#written;
    const end = start + samples.length / LIVE_RATE;
    this.#written = end + PIECE_PAD_SECONDS;
    this.#pieces.push({ n, start, end });
    this.#proc.stdin.write(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
    this.#proc.stdin.write(Buffer.alloc(Math.round(PIECE_PAD_SECONDS * LIVE_RATE) * 2));
    return n;
  }

  #read(text: string): void {
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop()!;
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f.length !== 4 || !/^[\d.]+$/.test(f[1]!) || !/^[\d.]+$/.test(f[2]!)) continue;
      const [token, start, end] = [f[0]!, Number.parseFloat(f[1]!), Number.parseFloat(f[2]!)];
      if (token === '</s>') this.#utterance(end);
      else if (!FILLER.test(token)) this.#words.push({ word: token.replace(/\(\d+\)$/, ''), start, end });
    }
  }

  /** An utterance ended at `end` (s): its words go to the piece its first word starts in. */
  #utterance(end: number): void {
    this.#heard = Math.max(this.#heard, end);
    const words = this.#words;
    this.#words = [];
    if (!words.length) return;
    const first = words[0]!.start;
    // the last piece that starts at or before the first word (its pad counts as its own)
    let piece = this.#pieces[0];
    for (const p of this.#pieces) if (p.start <= first + 0.05) piece = p;
    if (!piece) return;
    // pieces before it are answered (or had nothing to say)
    this.#pieces = this.#pieces.filter((p) => p.n >= piece.n);
    this.#o.onText(piece.n, words.map((w) => w.word).join(' '));
  }

  #end(err: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#o.onClose(err);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#proc.stdin.end();
    try {
      process.kill(-this.#proc.pid!, 'SIGKILL');
    } catch {
      // gone already
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
