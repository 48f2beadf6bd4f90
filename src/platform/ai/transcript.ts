/** The transcription engines' shared vocabulary (re-exported by asr.ts, which the rest of the server imports). */

/** A word with its times, where the engine gives them. */
export interface TranscriptWord {
  startMs: number;
  endMs: number;
  word: string;
}

export interface TranscriptSegment {
  startMs: number;
  endMs: number;
  text: string;
  words?: TranscriptWord[];
}

/** What an engine heard in one audio file: times are from the start of that file. */
export interface Transcript {
  language: string;
  durationMs: number;
  segments: TranscriptSegment[];
}

export interface TranscribeOptions {
  /** An ISO 639-1 code such as `en`, one of the engine's `languages()`. */
  language: string;
  signal?: AbortSignal;
}

/** A speech-to-text engine (docs/ai-notes.md): the offline PocketSphinx or an OpenAI-compatible server. */
export interface TranscriptionEngine {
  readonly name: string;
  /** The languages it transcribes; an empty list means any (the server decides). */
  languages(): readonly string[];
  transcribe(audioPath: string, o: TranscribeOptions): Promise<Transcript>;
}

/** Why a transcription failed; the message never holds a key. */
export class TranscriptionError extends Error {
  override name = 'TranscriptionError';
  /** Worth trying again later (a timeout, a server that was down), as opposed to bad audio or a refused key. */
  readonly retryable: boolean;
  constructor(message: string, o: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.retryable = o.retryable ?? false;
  }
}

/** The text of a transcript, its segments joined. */
export function transcriptText(t: Transcript): string {
  return t.segments.map((s) => s.text.trim()).filter(Boolean).join(' ');
}
