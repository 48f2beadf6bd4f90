/**
 * The synthetic class spoken (bench/notes.ts --spoken): every sentence of lib/notes-lecture.ts said by
 * flite at its time, into one 16 kHz track per participant as the recorder keeps them (the teacher in
 * flite's `rms` voice, the students in `slt` and `awb`), so that the whole way from a recording to notes
 * can be measured: each track transcribed apart by the offline engine, the segments merged on one
 * timeline with their speakers, and the notes made from that.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { wavHeader } from '../../src/platform/ai/audio.ts';
import type { Transcript, TranscriptSegment } from '../../src/platform/ai/notes.ts';
import { TEACHER, type Lecture } from './notes-lecture.ts';

const RATE = 16_000;

/** The flite voice of each participant: the teacher `rms`, the students `slt` and `awb` in turn. */
export function voiceOf(speaker: string, students: readonly string[]): string {
  if (speaker === TEACHER) return 'rms';
  return students.indexOf(speaker) % 2 === 0 ? 'slt' : 'awb';
}

/** The samples of a 16 kHz mono 16-bit WAV file (flite writes these). */
function readWav(path: string): Int16Array {
  const b = readFileSync(path);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path}: not a WAV file`);
  let at = 12;
  let format: { channels: number; rate: number; bits: number } | null = null;
  while (at + 8 <= b.length) {
    const id = b.toString('ascii', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === 'fmt ') format = { channels: b.readUInt16LE(at + 10), rate: b.readUInt32LE(at + 12), bits: b.readUInt16LE(at + 22) };
    if (id === 'data') {
      if (!format || format.channels !== 1 || format.rate !== RATE || format.bits !== 16) throw new Error(`${path}: not 16 kHz mono 16-bit (${JSON.stringify(format)})`);
      const end = Math.min(b.length, at + 8 + size);
      return new Int16Array(b.buffer.slice(b.byteOffset + at + 8, b.byteOffset + end - ((end - at - 8) % 2)));
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${path}: no data`);
}

function writeWav(path: string, samples: Int16Array): void {
  writeFileSync(path, Buffer.concat([wavHeader(RATE, samples.byteLength), Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength)]));
}

export interface SpokenTrack {
  speaker: string;
  voice: string;
  path: string;
  /** What is said on it, in order. */
  text: string;
  sentences: number;
  /** Seconds of speech on it (the rest is silence). */
  speechSeconds: number;
}

/**
 * Speaks `lecture` into one WAV per participant, each as long as the class. A sentence starts at its
 * time, or just after the participant's previous sentence if flite said that one more slowly than planned.
 */
export function speakLecture(lecture: Lecture, dir: string, students: readonly string[]): { tracks: SpokenTrack[]; synthesisSeconds: number } {
  const t0 = performance.now();
  const length = Math.round((lecture.transcript.durationMs / 1000) * RATE);
  const bySpeaker = new Map<string, { samples: Int16Array; end: number; texts: string[]; speech: number }>();
  const clip = join(dir, 'sentence.wav');
  for (const line of lecture.lines) {
    let track = bySpeaker.get(line.speaker);
    if (!track) bySpeaker.set(line.speaker, (track = { samples: new Int16Array(length), end: 0, texts: [], speech: 0 }));
    execFileSync('flite', ['-voice', voiceOf(line.speaker, students), '-t', line.text, '-o', clip], { stdio: 'ignore' });
    const s = readWav(clip);
    const at = Math.max(Math.round((line.startMs / 1000) * RATE), track.end + Math.round(0.2 * RATE));
    const n = Math.min(s.length, length - at);
    if (n <= 0) continue;
    track.samples.set(s.subarray(0, n), at);
    track.end = at + n;
    track.texts.push(line.text);
    track.speech += n / RATE;
  }
  unlinkSync(clip);
  const tracks: SpokenTrack[] = [];
  for (const [speaker, t] of bySpeaker) {
    const path = join(dir, `track-${speaker.toLowerCase()}.wav`);
    writeWav(path, t.samples);
    tracks.push({ speaker, voice: voiceOf(speaker, students), path, text: t.texts.join(' '), sentences: t.texts.length, speechSeconds: t.speech });
  }
  return { tracks, synthesisSeconds: (performance.now() - t0) / 1000 };
}

/** The participants' transcripts on one timeline, each segment with its speaker, as the class's transcript. */
export function mergeTracks(heard: { speaker: string; segments: readonly TranscriptSegment[] }[], durationMs: number): Transcript {
  const segments = heard.flatMap((h) => h.segments.map((s) => ({ ...s, speaker: h.speaker }))).sort((a, b) => a.startMs - b.startMs);
  return { language: 'en', durationMs, segments };
}
