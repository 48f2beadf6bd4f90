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
  /**
   * A recognizer kept running for one stream of speech (a room's live captions), where the engine can
   * keep its model loaded between pieces; absent: each piece is a file for `transcribe`.
   */
  live?(o: LiveTranscriberOptions): LiveTranscriber;
}

export interface LiveTranscriberOptions {
  language: string;
  /** The text heard in the piece `write` numbered (a piece may give several texts, or none). */
  onText(piece: number, text: string): void;
  /** The recognizer stopped on its own (its process died): the caller may open another. */
  onClose(err: Error): void;
}

/** Pieces of 16 kHz mono speech in, text out as each is recognized, in order. */
export interface LiveTranscriber {
  /** Appends a piece; returns its number, which `onText` gives back with its text. */
  write(samples: Int16Array): number;
  /** Seconds of speech written and not yet recognized: a caller drops pieces rather than fall behind. */
  readonly behindSeconds: number;
  /** The process group of the recognizer's processes, when it runs any (for measures). */
  readonly processGroup?: number | undefined;
  close(): void;
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
