/**
 * Polls, quizzes and Q&A: their kinds, limits and rules, shared by the room protocol (checks a host's
 * draft before it reaches an actor), the meeting machine (checks answers, grades quizzes) and the room
 * page. Pure and import-free at run time, like RoomAccess. docs/polls-and-questions.md is its prose.
 */

export const POLL_TYPES = ['YES_NO', 'TRUE_FALSE', 'SINGLE_CHOICE', 'MULTIPLE_CHOICE', 'FREE_TEXT'] as const;
export type PollType = (typeof POLL_TYPES)[number];

export const POLL_STATUSES = ['OPEN', 'CLOSED'] as const;
export type PollStatus = (typeof POLL_STATUSES)[number];
export const QUESTION_STATUSES = ['OPEN', 'ANSWERED', 'DISMISSED'] as const;
export type QuestionStatus = (typeof QUESTION_STATUSES)[number];

export const POLL_LIMITS = {
  questionChars: 500,
  /** SINGLE_CHOICE and MULTIPLE_CHOICE: 2 to 10 options. */
  minOptions: 2,
  maxOptions: 10,
  optionChars: 200,
  /** A FREE_TEXT answer. */
  answerChars: 500,
  /** Polls one meeting may hold (open and closed); one is open at a time. */
  perMeeting: 50,
  /** FREE_TEXT answers hosts see live (the latest); every answer is in the report once it closes. */
  liveTexts: 50,
} as const;

export const QUESTION_LIMITS = {
  textChars: 500,
  answerChars: 2000,
  /** Questions one meeting may hold. */
  perMeeting: 200,
} as const;

/** The options of the fixed kinds; the others take the host's. */
const FIXED_OPTIONS: Partial<Record<PollType, readonly string[]>> = { YES_NO: ['Yes', 'No'], TRUE_FALSE: ['True', 'False'] };

/** A host's poll as drafted: `correct` (option indexes) makes it a quiz. */
export interface PollDraft {
  question: string;
  type: PollType;
  anonymous: boolean;
  options: string[];
  correct: number[];
}

/** A problem with a draft, for a validation error: the field and why; null when it is fine. */
export type DraftProblem = { field: 'options' | 'correct'; message: string } | null;

/** The options a poll of this type shows: the fixed kinds ignore the given ones; FREE_TEXT has none. */
export function pollOptions(type: PollType, given: readonly string[]): string[] {
  if (type === 'FREE_TEXT') return [];
  return [...(FIXED_OPTIONS[type] ?? given)];
}

export function draftProblem(d: Pick<PollDraft, 'type' | 'options' | 'correct'>): DraftProblem {
  const options = pollOptions(d.type, d.options);
  if ((d.type === 'SINGLE_CHOICE' || d.type === 'MULTIPLE_CHOICE') && (options.length < POLL_LIMITS.minOptions || options.length > POLL_LIMITS.maxOptions)) {
    return { field: 'options', message: `A ${d.type} poll has ${POLL_LIMITS.minOptions} to ${POLL_LIMITS.maxOptions} options.` };
  }
  if (d.type === 'FREE_TEXT' && d.options.length > 0) {
    return { field: 'options', message: 'A FREE_TEXT poll has no options.' };
  }
  if (new Set(options.map((o) => o.trim().toLowerCase())).size !== options.length) return { field: 'options', message: 'The options must differ.' };
  if (d.correct.length === 0) return null;
  if (d.type === 'FREE_TEXT') return { field: 'correct', message: 'A FREE_TEXT poll cannot be a quiz: its answers are not graded.' };
  if (new Set(d.correct).size !== d.correct.length || d.correct.some((i) => !Number.isInteger(i) || i < 0 || i >= options.length)) {
    return { field: 'correct', message: 'correct lists option indexes (from 0), each once.' };
  }
  if (d.type !== 'MULTIPLE_CHOICE' && d.correct.length !== 1) return { field: 'correct', message: `A ${d.type} quiz has exactly one correct option.` };
  return null;
}

/** What is wrong with an answer to a poll, or null. */
export function answerProblem(p: { type: PollType; options: readonly string[] }, choices: readonly number[], text: string | null): string | null {
  if (p.type === 'FREE_TEXT') {
    if (choices.length) return 'A FREE_TEXT poll is answered with text, not choices.';
    if (!text?.trim()) return 'Give the answer as text.';
    if (text.length > POLL_LIMITS.answerChars) return `An answer has at most ${POLL_LIMITS.answerChars} characters.`;
    return null;
  }
  if (text !== null) return 'This poll is answered with choices (option indexes), not text.';
  if (new Set(choices).size !== choices.length || choices.some((i) => !Number.isInteger(i) || i < 0 || i >= p.options.length)) return 'choices lists option indexes (from 0), each once.';
  if (p.type === 'MULTIPLE_CHOICE' ? choices.length < 1 : choices.length !== 1) return p.type === 'MULTIPLE_CHOICE' ? 'Choose at least one option.' : 'Choose exactly one option.';
  return null;
}

/** A quiz answer is correct when it chose exactly the correct options; null for a poll (no correct options). */
export function isCorrect(correct: readonly number[], choices: readonly number[]): boolean | null {
  if (correct.length === 0) return null;
  return choices.length === correct.length && choices.every((c) => correct.includes(c));
}
