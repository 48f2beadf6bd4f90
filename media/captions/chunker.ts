import { wavHeader } from '../../src/platform/ai/audio.ts';
/**
 * Cuts live 16 kHz mono speech into short chunks for a transcription engine (live captions,
 * docs/ai-notes.md): a chunk starts at the first voiced 20 ms frame (with a little of the quiet before
 * it), and ends at a quiet moment once it holds `minMs`, or at the quietest frame of its last part
 * when it reaches `maxMs` without one; a chunk with no voice in it is dropped.
 */

export const CAPTION_RATE = 16000;
const FRAME = 320; // 20 ms
const FRAME_MS = 20;

export interface ChunkerOptions {
  /** A chunk ends at the first quiet moment after this much audio (default 1200 ms) ... */
  minMs?: number;
  /** ... or is cut at this length whatever (default 2000 ms). */
  maxMs?: number;
  /** Quiet this long ends a chunk (default 160 ms). */
  quietMs?: number;
  /** A frame whose RMS is below this is quiet (default 400, of 32767). */
  quietRms?: number;
}

export interface AudioChunk {
  /** Wall-clock ms when the chunk's first sample arrived. */
  startAt: number;
  samples: Int16Array;
}

interface Frame {
  at: number;
  rms: number;
  samples: Int16Array;
}

export class Chunker {
  readonly #min: number;
  readonly #max: number;
  readonly #quiet: number;
  readonly #quietRms: number;
  readonly #emit: (c: AudioChunk) => void;
  #frames: Frame[] = [];
  /** Samples not yet a whole frame. */
  #rest = new Int16Array(0);
  #voiced = false;
  #quietRun = 0;

  constructor(emit: (c: AudioChunk) => void, o: ChunkerOptions = {}) {
    this.#emit = emit;
    this.#min = Math.round((o.minMs ?? 1200) / FRAME_MS);
    this.#max = Math.round((o.maxMs ?? 2000) / FRAME_MS);
    this.#quiet = Math.round((o.quietMs ?? 160) / FRAME_MS);
    this.#quietRms = o.quietRms ?? 400;
  }

  /** Samples that arrived at `now` (wall-clock ms). */
  push(pcm: Int16Array, now: number): void {
    const all = new Int16Array(this.#rest.length + pcm.length);
    all.set(this.#rest);
    all.set(pcm, this.#rest.length);
    const whole = all.length - (all.length % FRAME);
    const frames = whole / FRAME;
    for (let f = 0; f < frames; f++) {
      const samples = all.slice(f * FRAME, (f + 1) * FRAME);
      let sum = 0;
      for (const s of samples) sum += s * s;
      // the frames of one read arrived together: spread them back over the time they cover
      this.#frame({ at: now - (frames - 1 - f) * FRAME_MS, rms: Math.sqrt(sum / FRAME), samples });
    }
    this.#rest = all.slice(whole);
  }

  #frame(fr: Frame): void {
    const quiet = fr.rms < this.#quietRms;
    if (!this.#voiced) {
      // a little of the quiet before the voice is kept (a word's soft start)
      this.#frames.push(fr);
      if (this.#frames.length > 10) this.#frames.shift();
      if (!quiet) {
        this.#voiced = true;
        this.#quietRun = 0;
      }
      return;
    }
    this.#frames.push(fr);
    this.#quietRun = quiet ? this.#quietRun + 1 : 0;
    if (this.#frames.length >= this.#min && this.#quietRun >= this.#quiet) return this.flush();
    if (this.#frames.length >= this.#max) {
      // the quietest frame of the last 600 ms: the chunk ends there, what follows starts the next
      let cut = this.#frames.length;
      let low = Infinity;
      for (let i = this.#frames.length - 1; i >= this.#frames.length - 30 && i > this.#min / 2; i--) {
        if (this.#frames[i]!.rms < low) {
          low = this.#frames[i]!.rms;
          cut = i + 1;
        }
      }
      const next = this.#frames.slice(cut);
      this.#frames = this.#frames.slice(0, cut);
      this.flush();
      this.#frames = next;
      this.#voiced = next.some((f) => f.rms >= this.#quietRms);
      this.#quietRun = 0;
    }
  }

  /** Ends the chunk under way (the speaker changed, or their audio stopped coming). */
  flush(): void {
    const frames = this.#frames;
    const voiced = this.#voiced;
    this.#frames = [];
    this.#voiced = false;
    this.#quietRun = 0;
    if (!voiced || !frames.length) return;
    const samples = new Int16Array(frames.length * FRAME);
    frames.forEach((f, i) => samples.set(f.samples, i * FRAME));
    this.#emit({ startAt: frames[0]!.at - FRAME_MS, samples });
  }
}

/** A 16 kHz mono 16-bit WAV file of `samples`. */
export function wavFile(samples: Int16Array): Buffer {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  return Buffer.concat([wavHeader(CAPTION_RATE, data.length), data]);
}
