import { performance } from 'node:perf_hooks';
import { transcriptText, type TranscriptionEngine } from './transcript.ts';

/** Lower case, digits and letters only (apostrophes kept inside words), split on anything else. */
export function normalizeWords(text: string): string[] {
  return text.toLowerCase().replace(/[^a-z0-9'\s-]/g, ' ').replace(/(^|\s)'|'(\s|$)/g, ' ').split(/[\s-]+/).filter(Boolean);
}

/** Word error rate: the word-level Levenshtein distance (substitutions, deletions, insertions) over the reference's length. */
export function wordErrorRate(reference: string, hypothesis: string): { errors: number; words: number; wer: number } {
  const ref = normalizeWords(reference);
  const hyp = normalizeWords(hypothesis);
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  const errors = prev[hyp.length]!;
  return { errors, words: ref.length, wer: ref.length ? errors / ref.length : hyp.length ? 1 : 0 };
}

export interface AsrClip {
  path: string;
  /** What is said in it. */
  text: string;
  language?: string;
}

export interface AsrMeasurement {
  engine: string;
  clips: number;
  /** Word errors over reference words, all clips pooled. */
  wer: number;
  referenceWords: number;
  audioSeconds: number;
  wallSeconds: number;
  /** Audio seconds transcribed per wall-clock second (the offline engine decodes on one core). */
  xRealTime: number;
  perClip: { path: string; wer: number; hypothesis: string; audioSeconds: number; wallSeconds: number }[];
}

/** Transcribes each clip in turn with `engine` and measures its word error rate and speed (for the bench's `notes` scenario and docs/ai-notes.md). */
export async function measureAsr(engine: TranscriptionEngine, clips: readonly AsrClip[], o: { signal?: AbortSignal } = {}): Promise<AsrMeasurement> {
  let errors = 0;
  let words = 0;
  let audio = 0;
  let wall = 0;
  const perClip: AsrMeasurement['perClip'] = [];
  for (const clip of clips) {
    const t0 = performance.now();
    const transcript = await engine.transcribe(clip.path, { language: clip.language ?? 'en', ...(o.signal ? { signal: o.signal } : {}) });
    const seconds = (performance.now() - t0) / 1000;
    const hypothesis = transcriptText(transcript);
    const w = wordErrorRate(clip.text, hypothesis);
    errors += w.errors;
    words += w.words;
    audio += transcript.durationMs / 1000;
    wall += seconds;
    perClip.push({ path: clip.path, wer: w.wer, hypothesis, audioSeconds: transcript.durationMs / 1000, wallSeconds: seconds });
  }
  return { engine: engine.name, clips: clips.length, wer: words ? errors / words : 0, referenceWords: words, audioSeconds: audio, wallSeconds: wall, xRealTime: wall ? audio / wall : 0, perClip };
}
