/**
 * The transcript as the extractive notes read it: sentences with their start times, their content
 * words reduced to stems, and the vectors that compare them.
 */
import type { Transcript } from './notes-schema.ts';

export interface Sentence {
  index: number;
  text: string;
  startMs: number;
  /** Stems of its content words, in order. */
  terms: string[];
  /** The words as written, each with its stem (null for a stop word). */
  words: { surface: string; stem: string | null }[];
  /** It runs the class rather than teaches (a greeting, a goodbye): a poor line of notes. */
  aside: boolean;
}

/**
 * A teacher's spoken lead-ins, which say how to take a fact rather than the fact: "Write this down in
 * your notebook: plants make their food in their leaves." is noted as "plants make their food in their
 * leaves." (English; the bench's notes scenario found them in the bullets, bench/README.md).
 */
const ENGLISH_LEAD_IN =
  /^(?:(?:ok(?:ay)?|so|now|right|well|alright|all right)\s*,?\s+)*(?:(?:write (?:this|that|it) down(?: in your (?:notebooks?|notes|books?))?|let me say (?:this|that|it) again|let me repeat (?:this|that|it)|remember(?: this| that)?|note (?:this|that)(?: down)?|listen(?: carefully)?|please note(?: that)?|don't forget(?: that)?|here is the key (?:point|idea)|the key (?:point|idea) is(?: that)?)\s*[:,;-]?\s+)+/i;
/** Sentences that greet or take leave of the class. */
const ENGLISH_ASIDE = /\b(?:good (?:morning|afternoon|evening)|welcome (?:to|back)|hello everyone|hi everyone|see you (?:tomorrow|next|on|all)|thank you (?:all|everyone) for|that's all for today)\b/i;

/** A sentence without its lead-in, when enough is left to stand alone. */
function withoutLeadIn(text: string): string {
  const m = ENGLISH_LEAD_IN.exec(text);
  if (!m) return text;
  const rest = text.slice(m[0].length);
  return rest.split(' ').length >= 4 ? rest : text;
}

export type Vector = Map<string, number>;

// Function words, and the filler of speech that every lecture shares whatever its subject.
const ENGLISH_STOP_WORDS = new Set(
  `a about above after again against all almost also although always am among an and another any anyone
  anything are aren't around as at back be because been before being below between both but by can can't
  cannot could couldn't did didn't do does doesn't doing don't done down during each either else enough even
  ever every few first for from further get gets getting give given go goes going gone gonna got gotta had
  hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how
  how's however i i'd i'll i'm i've if in into is isn't it it's its itself just kind know known last least
  less let let's like likely look looking lot lots made make makes many may maybe me might mine more most
  much must mustn't my myself need needs never next no nor not nothing now of off often oh ok okay on once
  one only onto or other others otherwise ought our ours ourselves out over own part particular perhaps
  please point pretty probably put quite rather really right said same say saying says second see seem seems
  seen several shall shan't she she'd she'll she's should shouldn't show since so some somebody someone
  something sometimes somewhat sort still such sure take talk talked talking tell than that that's the their
  theirs them themselves then there there's therefore these they they'd they'll they're they've thing things
  think this those though three through thus to today together too took toward towards two uh um under
  understand until up upon us use used uses using usually very via want wants was wasn't way ways we we'd
  we'll we're we've well went were weren't what what's whatever when when's where where's whether which
  while who who's whole whom whose why why's will with within without won't would wouldn't yeah yes yet you
  you'd you'll you're you've your yours yourself yourselves actually basically essentially going anyway
  gonna kinda mean means everyone everybody everything class lecture lesson question questions minute
  minutes talked remember called call example examples`.split(/\s+/),
);

/** A light English stemmer: enough that "volcano" and "volcanoes" count as one term. */
function stem(word: string, english: boolean): string {
  let w = word.replace(/['’]s$/, '');
  if (!english || w.length <= 4) return w;
  if (w.endsWith('ies')) return w.slice(0, -3) + 'y';
  if (w.endsWith('oes') || w.endsWith('sses') || w.endsWith('ches') || w.endsWith('shes') || w.endsWith('xes')) return w.slice(0, -2);
  if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  return w;
}

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
// A segment a recognizer wrote without punctuation is one long run; it is cut into sentence-sized pieces.
const MAX_SENTENCE_WORDS = 40;
const PIECE_WORDS = 25;

/** The transcript as sentences, each with its start time (words spread evenly over their segment). */
export function transcriptSentences(t: Transcript): Sentence[] {
  const english = /^en\b/i.test(t.language);
  const raw: { text: string; startMs: number }[] = [];
  const segments = [...t.segments].sort((a, b) => a.startMs - b.startMs);
  for (const seg of segments) {
    const text = seg.text.replace(/\s+/g, ' ').trim();
    if (!text) continue;
    const words = text.split(' ');
    const msPerWord = Math.max(0, seg.endMs - seg.startMs) / words.length;
    // The engine's own word times where it gives them (their count can differ from the text's words a little).
    const timed = seg.words?.length ? seg.words : null;
    const timeOf = (w: number) =>
      timed ? timed[Math.min(timed.length - 1, Math.round((w * timed.length) / words.length))]!.startMs : Math.round(seg.startMs + w * msPerWord);
    let at = 0;
    for (const piece of text.split(/(?<=[.!?…。！？])\s+/)) {
      const pw = piece.split(' ');
      for (let i = 0; i < pw.length; i += pw.length > MAX_SENTENCE_WORDS ? PIECE_WORDS : pw.length) {
        const chunk = (pw.length > MAX_SENTENCE_WORDS ? pw.slice(i, i + PIECE_WORDS) : pw).join(' ');
        raw.push({ text: english ? withoutLeadIn(chunk) : chunk, startMs: timeOf(at + i) });
      }
      at += pw.length;
    }
  }
  const stops = english ? ENGLISH_STOP_WORDS : frequentWords(raw.map((r) => r.text));
  return raw.map((r, index) => {
    const words = [...r.text.matchAll(WORD)].map((m) => {
      const lower = m[0].toLowerCase();
      const content = lower.length >= 3 && !stops.has(lower) && !/^\p{N}+$/u.test(lower);
      return { surface: m[0], stem: content ? stem(lower, english) : null };
    });
    return { index, text: r.text, startMs: r.startMs, words, terms: words.flatMap((w) => (w.stem ? [w.stem] : [])), aside: english && ENGLISH_ASIDE.test(r.text) };
  })
    // A "sentence" of punctuation alone (a recognizer's stray mark) says nothing.
    .filter((s) => s.words.length > 0)
    .map((s, index) => ({ ...s, index }));
}

/** Without a stop list for the language, the words in more than a quarter of the sentences stand in for one. */
function frequentWords(texts: string[]): Set<string> {
  const df = new Map<string, number>();
  for (const text of texts) {
    for (const w of new Set([...text.matchAll(WORD)].map((m) => m[0].toLowerCase()))) df.set(w, (df.get(w) ?? 0) + 1);
  }
  const limit = Math.max(2, texts.length / 4);
  return new Set([...df].filter(([, n]) => n > limit).map(([w]) => w));
}

export function counts(terms: Iterable<string>, into: Vector = new Map()): Vector {
  for (const term of terms) into.set(term, (into.get(term) ?? 0) + 1);
  return into;
}

export function cosine(a: Vector, b: Vector): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const [k, v] of small) dot += v * (large.get(k) ?? 0);
  for (const v of a.values()) na += v * v;
  for (const v of b.values()) nb += v * v;
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

export function tfidfVectors(sentences: Sentence[]): Vector[] {
  const df = new Map<string, number>();
  for (const s of sentences) for (const term of new Set(s.terms)) df.set(term, (df.get(term) ?? 0) + 1);
  const n = sentences.length;
  return sentences.map((s) => {
    const v = counts(s.terms);
    for (const [term, tf] of v) v.set(term, tf * Math.log(1 + n / df.get(term)!));
    return v;
  });
}

/** A sentence's identity for the notes: the same words, whatever the case and punctuation. */
export function sentenceKey(s: Sentence): string {
  return s.words.map((w) => w.surface.toLowerCase()).join(' ');
}

/** How many different sentences the transcript has: a notes engine can give no more summary lines. */
export function distinctSentences(sentences: Sentence[]): number {
  return new Set(sentences.map(sentenceKey)).size;
}
