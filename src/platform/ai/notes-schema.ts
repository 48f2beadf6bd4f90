/**
 * What a notes engine reads and writes. Apart from notes.ts so that the engines can import it while
 * notes.ts imports the engines (no import circles).
 */
import { z } from 'zod';
import type { TranscriptSegment as HeardSegment } from './transcript.ts';

/** A segment of what an engine heard, with who spoke it (each participant's track is transcribed apart). */
export interface TranscriptSegment extends HeardSegment {
  speaker?: string;
}

/** A class's transcript: its participants' transcripts merged on one timeline. */
export interface Transcript {
  language: string;
  durationMs: number;
  segments: readonly TranscriptSegment[];
}

export interface QuizQuestion {
  question: string;
  answer: string;
  /** The choices of a multiple-choice question, the answer among them; absent for an open question. */
  options?: string[];
}

export interface LectureNotes {
  summary: { overview: string; bullets: string[] };
  chapters: { title: string; startSeconds: number }[];
  quiz: QuizQuestion[];
}

export interface NotesOptions {
  /** The organization's language (BCP 47, `en` by default); the notes are written in it. */
  language: string;
  signal?: AbortSignal;
}

export interface NotesEngine {
  readonly name: string;
  notes(t: Transcript, o: NotesOptions): Promise<LectureNotes>;
}

export const NOTES_LIMITS = {
  overviewChars: 1000,
  bulletChars: 400,
  minBullets: 3,
  maxBullets: 8,
  maxChapters: 12,
  titleChars: 120,
  maxQuiz: 10,
  questionChars: 600,
  answerChars: 200,
  maxOptions: 6,
} as const;

/**
 * The schema of a class's notes. It depends on the class: chapters start inside its duration, and a
 * clip of a few sentences cannot give three distinct bullets, so `minBullets` comes down with it
 * (see bulletsFloor).
 */
export function lectureNotesSchema(o: { durationSeconds: number; minBullets?: number }) {
  const L = NOTES_LIMITS;
  const minBullets = Math.min(o.minBullets ?? L.minBullets, L.minBullets);
  const text = (max: number) => z.string().trim().min(1).max(max);
  return z.object({
    summary: z.object({
      overview: text(L.overviewChars),
      bullets: z.array(text(L.bulletChars)).min(minBullets).max(L.maxBullets),
    }),
    chapters: z
      .array(z.object({ title: text(L.titleChars), startSeconds: z.number().int().min(0) }))
      .min(1)
      .max(L.maxChapters)
      .refine((cs) => cs.every((c, i) => i === 0 || c.startSeconds > cs[i - 1]!.startSeconds), 'chapters start in increasing order')
      .refine((cs) => cs.every((c) => c.startSeconds === 0 || c.startSeconds < o.durationSeconds), 'chapters start inside the class'),
    quiz: z
      .array(
        z
          .object({
            question: text(L.questionChars),
            answer: text(L.answerChars),
            options: z.array(text(L.answerChars)).min(2).max(L.maxOptions).optional(),
          })
          .refine((q) => q.options === undefined || q.options.includes(q.answer), 'the answer is one of the options'),
      )
      .max(L.maxQuiz),
  });
}

/** How many of a transcript's `sentences` different sentences make its overview: the top 2-3, one for a clip. */
export function overviewSentences(sentences: number): number {
  return sentences >= 8 ? 3 : sentences >= 5 ? 2 : Math.min(1, sentences);
}

/** How many bullets a transcript of `sentences` different sentences can give beside its overview. */
export function bulletsFloor(sentences: number): number {
  return Math.max(0, Math.min(NOTES_LIMITS.minBullets, sentences - overviewSentences(sentences)));
}
