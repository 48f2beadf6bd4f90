/**
 * Lecture notes from any OpenAI-compatible chat endpoint (`/v1/chat/completions`: OpenAI, Groq, a
 * self-hosted vLLM or llama.cpp server), asked for the notes as one JSON object and checked against
 * the notes schema.
 *
 * What fails how: an answer that does not parse or does not fit the schema gives the offline notes
 * instead (the model spoke, but not usefully; the class still gets notes). A request that fails after
 * its retries (the endpoint down, a wrong key, a timeout) throws a NotesEngineError: the job then
 * fails with that reason and is retried or shown to the operator, rather than hiding a broken
 * configuration behind offline notes. The key goes only into the Authorization header; every error
 * message is scrubbed of it in case an endpoint echoes it.
 */
import { ExtractiveNotesEngine } from './notes-extractive.ts';
import {
  NOTES_LIMITS,
  bulletsFloor,
  lectureNotesSchema,
  type LectureNotes,
  type NotesEngine,
  type NotesOptions,
  type Transcript,
} from './notes-schema.ts';
import { distinctSentences, transcriptSentences } from './notes-text.ts';

export interface OpenAiNotesSettings {
  /** The API's base (`https://api.openai.com/v1`, `http://host:8000`) or the full chat completions URL. */
  url: string;
  key?: string | undefined;
  model: string;
  /** Per request. */
  timeoutMs?: number;
  /** Further attempts after a 429, a 5xx, a timeout or a network error. */
  retries?: number;
  /** The first wait between attempts, doubled each time; a 429's Retry-After wins when given. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** How much of the transcript goes into the prompt, in characters (about four to a token). */
  transcriptChars?: number;
  /** The notes when the model's answer is unusable. */
  fallback?: NotesEngine;
  /** Told why an answer was not used (never with the key). */
  onFallback?: (reason: string) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export class NotesEngineError extends Error {
  override readonly name = 'NotesEngineError';
  /** The endpoint's HTTP status, when it answered. */
  readonly status: number | undefined;
  /** Worth trying again later (the endpoint down or busy), as opposed to a refused key or a bad request. */
  readonly retryable: boolean;

  constructor(message: string, o: { status?: number; retryable?: boolean } = {}) {
    super(message);
    this.status = o.status;
    this.retryable = o.retryable ?? false;
  }
}

function chatUrl(url: string): string {
  const u = new URL(url);
  // Credentials in the URL would end up in error messages; the key belongs in `key`.
  u.username = '';
  u.password = '';
  const path = u.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/chat/completions')) u.pathname = path.endsWith('/v1') ? `${path}/chat/completions` : `${path}/v1/chat/completions`;
  return u.toString();
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After in seconds or as an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function clock(ms: number): string {
  const s = Math.floor(ms / 1000);
  const hh = Math.floor(s / 3600);
  const mm = String(Math.floor(s / 60) % 60).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return hh ? `${hh}:${mm}:${ss}` : `${mm}:${ss}`;
}

/**
 * The transcript as prompt lines (`[mm:ss] Speaker: words`), within `budget` characters. A class too
 * long for it is cut into windows of about a chapter (the class over 12 parts, at least five minutes
 * each) and each window keeps its start: the model still sees every part of the class and when it begins.
 */
export function promptTranscript(t: Transcript, budget: number): string {
  const lines = [...t.segments]
    .sort((a, b) => a.startMs - b.startMs)
    .filter((s) => s.text.trim())
    .map((s) => ({ at: s.startMs, line: `[${clock(s.startMs)}] ${s.speaker ? `${s.speaker}: ` : ''}${s.text.replace(/\s+/g, ' ').trim()}` }));
  const whole = lines.map((l) => l.line).join('\n');
  if (whole.length <= budget) return whole;
  const duration = Math.max(t.durationMs, lines.at(-1)?.at ?? 0, 1);
  const windowMs = Math.max(duration / NOTES_LIMITS.maxChapters, 5 * 60_000);
  const windows: string[][] = [];
  for (const l of lines) (windows[Math.floor(l.at / windowMs)] ??= []).push(l.line);
  const filled = windows.filter(Boolean);
  const marker = '[…]';
  const share = Math.floor(budget / filled.length) - marker.length - 2;
  const out: string[] = [];
  for (const w of filled) {
    let used = 0;
    for (const line of w) {
      if (used + line.length + 1 > share) {
        if (used === 0) out.push(line.slice(0, Math.max(0, share)));
        break;
      }
      out.push(line);
      used += line.length + 1;
    }
    if (used < w.join('\n').length) out.push(marker);
  }
  return out.join('\n').slice(0, budget);
}

function instructions(language: string, durationSeconds: number, minBullets: number): string {
  const L = NOTES_LIMITS;
  return [
    'You write lecture notes from the transcript of a recorded class.',
    `Write them in the language whose BCP 47 tag is "${language}".`,
    'Answer with exactly one JSON object and nothing else, of this shape:',
    '{"summary":{"overview":string,"bullets":[string]},"chapters":[{"title":string,"startSeconds":integer}],"quiz":[{"question":string,"answer":string,"options":[string]}]}',
    `- summary.overview: what the class covered, in at most ${L.overviewChars} characters.`,
    `- summary.bullets: ${minBullets} to ${L.maxBullets} key points, each one sentence.`,
    `- chapters: 1 to ${L.maxChapters}, where the topic changes, the first at 0, startSeconds increasing and below ${Math.max(1, durationSeconds)} (the transcript's [mm:ss] marks give the times); short titles.`,
    `- quiz: up to ${L.maxQuiz} questions a student can answer from the class; answer is the correct answer and, when options are given (2 to ${L.maxOptions}), one of them.`,
    'Lines marked […] stand for parts of the class left out for length.',
  ].join('\n');
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * Small slips a model makes that say nothing about the notes themselves: chapters out of order or at
 * fractional seconds, a chapter past the end, a list too long. Anything else is left to the schema.
 */
function tidy(answer: unknown, durationSeconds: number): unknown {
  if (!isRecord(answer)) return answer;
  const out = { ...answer };
  if (isRecord(out['summary']) && Array.isArray(out['summary']['bullets'])) {
    out['summary'] = { ...out['summary'], bullets: out['summary']['bullets'].slice(0, NOTES_LIMITS.maxBullets) };
  }
  const chapters = out['chapters'];
  if (Array.isArray(chapters) && chapters.every((c) => isRecord(c) && typeof c['startSeconds'] === 'number')) {
    const byStart = new Map<number, Record<string, unknown>>();
    for (const c of chapters as Record<string, unknown>[]) {
      const at = Math.max(0, Math.floor(c['startSeconds'] as number));
      if ((at === 0 || at < durationSeconds) && !byStart.has(at)) byStart.set(at, { ...c, startSeconds: at });
    }
    out['chapters'] = [...byStart.keys()].sort((a, b) => a - b).map((at) => byStart.get(at)!).slice(0, NOTES_LIMITS.maxChapters);
  }
  if (Array.isArray(out['quiz'])) out['quiz'] = out['quiz'].slice(0, NOTES_LIMITS.maxQuiz);
  return out;
}

export class OpenAiNotesEngine implements NotesEngine {
  readonly name = 'openai';
  readonly #url: string;
  readonly #key: string | undefined;
  readonly #model: string;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #transcriptChars: number;
  readonly #fallback: NotesEngine;
  readonly #onFallback: (reason: string) => void;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(s: OpenAiNotesSettings) {
    this.#url = chatUrl(s.url);
    this.#key = s.key || undefined;
    this.#model = s.model;
    this.#timeoutMs = s.timeoutMs ?? 120_000;
    this.#retries = s.retries ?? 3;
    this.#backoffMs = s.backoffMs ?? 1_000;
    this.#maxBackoffMs = s.maxBackoffMs ?? 60_000;
    this.#transcriptChars = s.transcriptChars ?? 60_000;
    this.#fallback = s.fallback ?? new ExtractiveNotesEngine();
    this.#onFallback = s.onFallback ?? (() => {});
    this.#sleep = s.sleep ?? sleep;
  }

  async notes(t: Transcript, o: NotesOptions): Promise<LectureNotes> {
    const durationSeconds = Math.floor(t.durationMs / 1000);
    const minBullets = bulletsFloor(distinctSentences(transcriptSentences(t)));
    const content = await this.#complete(
      [
        { role: 'system', content: instructions(o.language || t.language, durationSeconds, minBullets) },
        { role: 'user', content: promptTranscript(t, this.#transcriptChars) || '(no speech was recognized)' },
      ],
      o.signal,
    );
    const reason = (why: string) => {
      this.#onFallback(this.#scrub(why));
      return this.#fallback.notes(t, o);
    };
    if (content === null) return reason('the answer has no message content');
    let parsed: unknown;
    try {
      // Some servers wrap JSON in a Markdown fence even when asked for a JSON object.
      parsed = JSON.parse(content.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, '$1'));
    } catch {
      return reason('the answer is not JSON');
    }
    const checked = lectureNotesSchema({ durationSeconds, minBullets }).safeParse(tidy(parsed, durationSeconds));
    if (!checked.success) {
      return reason(`the answer does not fit the notes schema: ${checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`.slice(0, 500));
    }
    const n = checked.data;
    return {
      summary: { overview: n.summary.overview, bullets: n.summary.bullets },
      chapters: n.chapters.map((c) => ({ title: c.title, startSeconds: c.startSeconds })),
      quiz: n.quiz.map((q) => (q.options ? { question: q.question, answer: q.answer, options: q.options } : { question: q.question, answer: q.answer })),
    };
  }

  /** The first choice's message content, or null when the answer has none; throws after the retries. */
  async #complete(messages: { role: string; content: string }[], signal: AbortSignal | undefined): Promise<string | null> {
    const body = JSON.stringify({ model: this.#model, messages, response_format: { type: 'json_object' }, temperature: 0.2 });
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#key) headers['authorization'] = `Bearer ${this.#key}`;
    let last: NotesEngineError | undefined;
    let retryAfter: number | null = null;
    for (let attempt = 0; attempt <= this.#retries; attempt++) {
      if (attempt > 0) await this.#sleep(Math.min(this.#maxBackoffMs, retryAfter ?? this.#backoffMs * 2 ** (attempt - 1)), signal);
      retryAfter = null;
      signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(this.#timeoutMs);
      let res: Response;
      let text: string;
      try {
        res = await fetch(this.#url, { method: 'POST', headers, body, signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const why = timeout.aborted
          ? `no answer within ${this.#timeoutMs} ms`
          : err instanceof Error
            ? `${err.message}${err.cause instanceof Error ? ` (${err.cause.message})` : ''}`
            : String(err);
        last = new NotesEngineError(this.#scrub(`notes engine: ${why} from ${this.#url}`), { retryable: true });
        continue;
      }
      if (res.ok) {
        try {
          const content = (JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
          return typeof content === 'string' ? content : null;
        } catch {
          return null;
        }
      }
      const detail = text.replace(/\s+/g, ' ').slice(0, 300);
      const retryable = res.status === 429 || res.status >= 500;
      last = new NotesEngineError(this.#scrub(`notes engine: HTTP ${res.status} from ${this.#url}${detail ? `: ${detail}` : ''}`), { status: res.status, retryable });
      if (!retryable) throw last;
      if (res.status === 429) retryAfter = retryAfterMs(res.headers.get('retry-after'));
    }
    throw last!;
  }

  #scrub(message: string): string {
    return this.#key ? message.replaceAll(this.#key, '[redacted]') : message;
  }
}
