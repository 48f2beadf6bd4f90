import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cutWav, detectSilences, planChunks, probeDurationMs, toWav16kMono, type Span } from './audio.ts';
import { TranscriptionError, type Transcript, type TranscriptSegment, type TranscriptWord, type TranscribeOptions, type TranscriptionEngine } from './transcript.ts';

/** 16 kHz mono 16-bit PCM: bytes per millisecond of a chunk, and its WAV header. */
const WAV_BYTES_PER_MS = 32;
const WAV_HEADER_BYTES = 78;

export interface OpenAiAsrOptions {
  /** The server's base URL up to and including `/v1` (or the full `.../audio/transcriptions` URL). */
  url: string;
  /** Sent as `Authorization: Bearer <key>`; never in a log line or an error message. */
  key?: string;
  model: string;
  /** Languages to offer organizations; empty (the default): any, the server decides. */
  languages?: readonly string[];
  /** One request's limit, upload and answer (default 5 minutes). */
  timeoutMs?: number;
  /** Attempts after the first on 429, 5xx, a timeout or a dropped connection (default 4). */
  retries?: number;
  /** The first retry's wait, doubled each time with jitter, at most `maxBackoffMs` (defaults 1 s and 60 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Longer audio is cut at silences into chunks no longer than this (default 10 minutes) ... */
  maxChunkMs?: number;
  /** ... and no bigger than this (default 24 MB; OpenAI takes 25 MB). */
  maxChunkBytes?: number;
  /** Retries are told here (pino's signature); nothing secret is passed. */
  log?: { warn(obj: object, msg: string): void };
}

/** The parts of a `verbose_json` answer read here (OpenAI, Groq, faster-whisper and whisper.cpp servers). */
interface VerboseJson {
  text?: unknown;
  duration?: unknown;
  segments?: { start?: unknown; end?: unknown; text?: unknown; words?: unknown }[];
  words?: unknown;
}

/**
 * Any OpenAI-compatible `/v1/audio/transcriptions` endpoint (docs/ai-notes.md): the audio as 16 kHz mono
 * WAV, `response_format=verbose_json` for segments with times; audio over the chunk limit is cut in the
 * silences found by ffmpeg and the chunks' segments shifted by their offsets.
 */
export class OpenAiTranscriptionEngine implements TranscriptionEngine {
  readonly name = 'openai';
  readonly #endpoint: string;
  readonly #key: string | undefined;
  readonly #o: Required<Omit<OpenAiAsrOptions, 'key' | 'log' | 'url'>>;
  readonly #log: OpenAiAsrOptions['log'];

  constructor(o: OpenAiAsrOptions) {
    const base = o.url.replace(/\/+$/, '');
    this.#endpoint = base.endsWith('/audio/transcriptions') ? base : `${base}/audio/transcriptions`;
    this.#key = o.key;
    this.#log = o.log;
    this.#o = {
      model: o.model,
      languages: o.languages ?? [],
      timeoutMs: o.timeoutMs ?? 5 * 60_000,
      retries: o.retries ?? 4,
      backoffMs: o.backoffMs ?? 1000,
      maxBackoffMs: o.maxBackoffMs ?? 60_000,
      // below a few seconds a chunk holds no sentence, and planning would never end at 0
      maxChunkMs: Math.max(2000, o.maxChunkMs ?? 10 * 60_000),
      maxChunkBytes: Math.max(2000 * WAV_BYTES_PER_MS + WAV_HEADER_BYTES, o.maxChunkBytes ?? 24 * 1024 * 1024),
    };
  }

  languages(): readonly string[] {
    return this.#o.languages;
  }

  async transcribe(audioPath: string, o: TranscribeOptions): Promise<Transcript> {
    const dir = await mkdtemp(join(tmpdir(), 'aula-asr-'));
    try {
      const wav = join(dir, 'audio.wav');
      await toWav16kMono(audioPath, wav, { signal: o.signal });
      const durationMs = await probeDurationMs(wav, { signal: o.signal });
      const maxMs = Math.min(this.#o.maxChunkMs, Math.floor((this.#o.maxChunkBytes - WAV_HEADER_BYTES) / WAV_BYTES_PER_MS));
      const fits = durationMs <= maxMs && (await stat(wav)).size <= this.#o.maxChunkBytes;
      const chunks: Span[] = fits ? [{ startMs: 0, endMs: durationMs }] : planChunks(durationMs, await detectSilences(wav, { durationMs, signal: o.signal }), maxMs);
      const segments: TranscriptSegment[] = [];
      for (const [i, chunk] of chunks.entries()) {
        let file = wav;
        if (chunks.length > 1) {
          file = join(dir, `chunk-${i}.wav`);
          await cutWav(wav, file, chunk, { signal: o.signal });
        }
        const answer = await this.#request(file, o, chunks.length > 1 ? ` (chunk ${i + 1} of ${chunks.length})` : '');
        segments.push(...toSegments(answer, chunk));
        if (file !== wav) await rm(file, { force: true });
      }
      return { language: o.language, durationMs, segments };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** One chunk, with its retries. */
  async #request(file: string, o: TranscribeOptions, what: string): Promise<VerboseJson> {
    const audio = await readFile(file);
    let last = '';
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) o.signal?.throwIfAborted();
      const form = new FormData();
      form.set('file', new Blob([audio], { type: 'audio/wav' }), 'audio.wav');
      form.set('model', this.#o.model);
      form.set('response_format', 'verbose_json');
      form.set('language', o.language);
      form.append('timestamp_granularities[]', 'segment');
      const timeout = AbortSignal.timeout(this.#o.timeoutMs);
      const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
      let waitMs: number | null = null;
      try {
        const res = await fetch(this.#endpoint, { method: 'POST', body: form, signal, headers: this.#key ? { authorization: `Bearer ${this.#key}` } : {} });
        const body = await res.text();
        if (res.ok) {
          try {
            return JSON.parse(body) as VerboseJson;
          } catch {
            throw new TranscriptionError(`the transcription server answered ${res.status} with no JSON${what}: ${this.#scrub(body.slice(0, 200))}`);
          }
        }
        last = `${res.status}${body ? `: ${this.#scrub(body.slice(0, 200).replace(/\s+/g, ' '))}` : ''}`;
        if (res.status !== 429 && res.status < 500 && res.status !== 408) {
          throw new TranscriptionError(`the transcription server refused the audio${what}: HTTP ${last}`, { retryable: false });
        }
        if (res.status === 429) waitMs = retryAfterMs(res.headers.get('retry-after'));
      } catch (err) {
        if (err instanceof TranscriptionError) throw err;
        if (o.signal?.aborted) throw o.signal.reason;
        last = timeout.aborted ? `no answer within ${this.#o.timeoutMs} ms` : `connection failed (${this.#scrub((err as Error).message)})`;
      }
      if (attempt >= this.#o.retries) {
        throw new TranscriptionError(`the transcription server at ${redactUrl(this.#endpoint)} failed${what}, gave up after ${attempt + 1} attempts: ${last}`, { retryable: true });
      }
      const backoff = Math.min(this.#o.maxBackoffMs, this.#o.backoffMs * 2 ** attempt);
      const wait = Math.min(this.#o.maxBackoffMs, waitMs ?? Math.round(backoff / 2 + (Math.random() * backoff) / 2));
      this.#log?.warn({ endpoint: redactUrl(this.#endpoint), attempt: attempt + 1, waitMs: wait, reason: last }, 'transcription request failed; retrying');
      await sleep(wait, undefined, o.signal ? { signal: o.signal } : {});
    }
  }

  /** Takes the key out of text that came from elsewhere (a server echoing the request, an error message). */
  #scrub(text: string): string {
    return this.#key ? text.split(this.#key).join('[redacted]') : text;
  }
}

/** Retry-After in seconds or as an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const s = Number(header.trim());
  if (Number.isFinite(s) && s >= 0) return Math.round(s * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The URL without credentials or query, fit for a log line. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(the configured URL)';
  }
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : null);

function toWords(v: unknown, offsetMs: number, endMs: number): TranscriptWord[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const words: TranscriptWord[] = [];
  for (const w of v as { word?: unknown; start?: unknown; end?: unknown }[]) {
    const start = num(w?.start);
    const end = num(w?.end);
    if (typeof w?.word !== 'string' || start === null || end === null) continue;
    words.push({ word: w.word.trim(), startMs: Math.min(endMs, offsetMs + Math.round(start * 1000)), endMs: Math.min(endMs, offsetMs + Math.round(end * 1000)) });
  }
  return words.length ? words : undefined;
}

/** A verbose_json answer's segments, shifted to where its chunk starts and kept inside the chunk. */
export function toSegments(answer: VerboseJson, chunk: Span): TranscriptSegment[] {
  const out: TranscriptSegment[] = [];
  const clamp = (s: number) => Math.min(chunk.endMs, chunk.startMs + Math.max(0, Math.round(s * 1000)));
  const allWords = toWords(answer.words, chunk.startMs, chunk.endMs);
  if (Array.isArray(answer.segments) && answer.segments.length) {
    for (const s of answer.segments) {
      const start = num(s?.start);
      const end = num(s?.end);
      const text = typeof s?.text === 'string' ? s.text.trim() : '';
      if (start === null || end === null || !text) continue;
      const seg: TranscriptSegment = { startMs: clamp(start), endMs: clamp(Math.max(start, end)), text };
      const words = toWords(s.words, chunk.startMs, chunk.endMs) ?? allWords?.filter((w) => w.startMs >= seg.startMs && w.startMs < seg.endMs);
      if (words?.length) seg.words = words;
      out.push(seg);
    }
    return out;
  }
  // a server that ignores verbose_json: the chunk's text as one segment
  const text = typeof answer.text === 'string' ? answer.text.trim() : '';
  if (text) out.push({ startMs: chunk.startMs, endMs: chunk.endMs, text, ...(allWords ? { words: allWords } : {}) });
  return out;
}
