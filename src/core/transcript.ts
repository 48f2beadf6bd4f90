/**
 * A recording's transcript as Aula keeps it (docs/ai-notes.md): each participant's track transcribed
 * apart and merged on the recording's timeline, so every segment says who spoke. Names are not kept
 * in it: a segment names its speaker by participant, and the reader gets the names as they are now
 * (a deleted account reads "Deleted user"). The caption and text files are made from it here.
 */

export interface TranscriptSpeaker {
  /** The participant whose track it was (the room's participantId). */
  id: string;
  /** The account behind it, when the attendance knew it. */
  userId: string | null;
}

export interface TranscriptWordTime {
  startMs: number;
  endMs: number;
  word: string;
}

export interface ClassTranscriptSegment {
  /** ms on the recording's timeline (its video's time). */
  startMs: number;
  endMs: number;
  text: string;
  /** A TranscriptSpeaker's id. */
  speaker: string;
  words?: TranscriptWordTime[];
}

export interface ClassTranscript {
  language: string;
  durationMs: number;
  speakers: TranscriptSpeaker[];
  /** In order of their start. */
  segments: ClassTranscriptSegment[];
}

/** Words of a transcript (what transcript.ready's wordCount counts). */
export function wordCount(t: Pick<ClassTranscript, 'segments'>): number {
  let n = 0;
  for (const s of t.segments) n += s.text.split(/\s+/).filter(Boolean).length;
  return n;
}

/** A caption shows at most this long and this many characters (two lines of a player's width). */
const CUE_MS = 6000;
const CUE_CHARS = 84;

/** `00:01:02.345`. */
export function vttTime(ms: number): string {
  const t = Math.max(0, Math.round(ms));
  const h = Math.floor(t / 3_600_000);
  const m = Math.floor((t % 3_600_000) / 60_000);
  const s = Math.floor((t % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(t % 1000, 3)}`;
}

const vttText = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('-->', '--&gt;');

/** A segment cut into captions of a readable size, on its word times where the engine gave them. */
export function cues(s: ClassTranscriptSegment): { startMs: number; endMs: number; text: string }[] {
  const words = s.words?.length ? s.words : null;
  if (!words) {
    // no word times: cut the text evenly over the segment's span
    const all = s.text.trim().split(/\s+/).filter(Boolean);
    if (!all.length) return [];
    const parts: string[][] = [[]];
    for (const w of all) {
      const cur = parts.at(-1)!;
      if (cur.length && [...cur, w].join(' ').length > CUE_CHARS) parts.push([w]);
      else cur.push(w);
    }
    const span = Math.max(1, s.endMs - s.startMs);
    let at = s.startMs;
    return parts.map((p) => {
      const len = (span * p.length) / all.length;
      const cue = { startMs: Math.round(at), endMs: Math.round(at + len), text: p.join(' ') };
      at += len;
      return cue;
    });
  }
  const out: { startMs: number; endMs: number; text: string }[] = [];
  let cur: TranscriptWordTime[] = [];
  const flush = () => {
    if (cur.length) out.push({ startMs: cur[0]!.startMs, endMs: cur.at(-1)!.endMs, text: cur.map((w) => w.word).join(' ') });
    cur = [];
  };
  for (const w of words) {
    const text = [...cur, w].map((x) => x.word).join(' ');
    if (cur.length && (text.length > CUE_CHARS || w.endMs - cur[0]!.startMs > CUE_MS)) flush();
    cur.push(w);
  }
  flush();
  return out;
}

/** WebVTT captions: one cue per readable piece, with its speaker as a voice (`<v Name>`). */
export function toWebVtt(t: ClassTranscript, nameOf: (speaker: string) => string): string {
  const lines = ['WEBVTT', ''];
  let n = 0;
  for (const s of t.segments) {
    const voice = vttText(nameOf(s.speaker));
    for (const c of cues(s)) {
      lines.push(String(++n), `${vttTime(c.startMs)} --> ${vttTime(Math.max(c.endMs, c.startMs + 300))}`, `<v ${voice}>${vttText(c.text)}`, '');
    }
  }
  return lines.join('\n');
}

/** The transcript as text: a paragraph per turn, `[00:01:02] Name: words`. */
export function toPlainText(t: ClassTranscript, nameOf: (speaker: string) => string): string {
  const out: string[] = [];
  let last: { speaker: string; endMs: number } | null = null;
  for (const s of t.segments) {
    const text = s.text.trim();
    if (!text) continue;
    // the same speaker going on within a few seconds is one paragraph
    if (last && last.speaker === s.speaker && s.startMs - last.endMs < 3000) out[out.length - 1] += ` ${text}`;
    else out.push(`[${vttTime(s.startMs).slice(0, 8)}] ${nameOf(s.speaker)}: ${text}`);
    last = { speaker: s.speaker, endMs: s.endMs };
  }
  return out.join('\n\n') + (out.length ? '\n' : '');
}
