/**
 * Lecture notes without a model, from the transcript's own sentences: the summary is the most central
 * sentences (TextRank over TF-IDF vectors), the chapters start where the vocabulary changes (TextTiling:
 * lexical cohesion of the words before and after each point), and the quiz blanks a key term out of key
 * sentences. Deterministic: the same transcript gives the same notes, ties broken by position.
 */
import {
  NOTES_LIMITS,
  bulletsFloor,
  overviewSentences,
  type LectureNotes,
  type NotesEngine,
  type NotesOptions,
  type QuizQuestion,
  type Transcript,
} from './notes-schema.ts';
import { cosine, counts, distinctSentences, sentenceKey, tfidfVectors, transcriptSentences, type Sentence, type Vector } from './notes-text.ts';

/** TextRank: PageRank over the sentences, linked by their cosine similarity. */
function textRank(vectors: Vector[]): number[] {
  const n = vectors.length;
  // Unit vectors, so that each of the pairs (two million in a three-hour class) costs a dot product only.
  const units = vectors.map((v) => {
    const norm = Math.sqrt([...v.values()].reduce((sum, x) => sum + x * x, 0)) || 1;
    return [...v].map(([term, x]) => [term, x / norm] as const);
  });
  const lookup = units.map((u) => new Map(u));
  const links: { to: number; w: number }[][] = vectors.map(() => []);
  for (let i = 0; i < n; i++) {
    const a = units[i]!;
    for (let j = i + 1; j < n; j++) {
      const b = lookup[j]!;
      let w = 0;
      for (const [term, x] of a) w += x * (b.get(term) ?? 0);
      if (w > 0) {
        links[i]!.push({ to: j, w });
        links[j]!.push({ to: i, w });
      }
    }
  }
  const out = links.map((ls) => ls.reduce((sum, l) => sum + l.w, 0));
  const d = 0.85;
  let score = new Array<number>(n).fill(1 / n);
  for (let iter = 0; iter < 40; iter++) {
    const next = new Array<number>(n).fill((1 - d) / n);
    for (let j = 0; j < n; j++) {
      if (!out[j]) continue;
      for (const l of links[j]!) next[l.to]! += (d * score[j]! * l.w) / out[j]!;
    }
    score = next;
  }
  return score;
}

/** Short fragments, rhetorical questions, greetings and goodbyes say little on their own in a summary. */
function quality(s: Sentence): number {
  const words = s.words.length;
  let q = 1;
  if (words < 6 || s.terms.length < 3) q *= 0.3;
  if (words > 45) q *= 0.7;
  if (s.text.endsWith('?')) q *= 0.6;
  if (s.aside) q *= 0.3;
  return q;
}

/** Where chapters start: sentence indexes, the first 0. */
// Measured on synthetic classes: chapters of different subjects 0.2 to 0.45, halves of one subject 0.85 to 1.15.
const DISTINCT = 0.75;

function topicBoundaries(sentences: Sentence[], vectors: Vector[], durationMs: number): number[] {
  const n = sentences.length;
  const seconds = durationMs / 1000;
  if (seconds < 120 || n < 12) return [0];
  // A few minutes for a long class, less for a short one: a chapter list of a 5-minute talk is short too.
  const minChapterMs = Math.min(180, Math.max(30, seconds / 8)) * 1000;
  const totalTerms = sentences.reduce((sum, s) => sum + s.terms.length, 0);
  const block = Math.min(120, Math.max(20, Math.round(totalTerms / 15)));

  // A word said all through the class (the speaker's habits, the course's own name) marks no shift:
  // each word is weighted by how few of the class's time windows hold it (zero when all do).
  const windows = Math.max(4, Math.min(20, Math.round(n / 10)));
  const inWindows = new Map<string, Set<number>>();
  for (const s of sentences) {
    const w = Math.min(windows - 1, Math.floor((s.startMs / Math.max(1, durationMs)) * windows));
    for (const term of s.terms) inWindows.set(term, (inWindows.get(term) ?? new Set()).add(w));
  }
  const weigh = (v: Vector): Vector => {
    for (const [term, tf] of v) v.set(term, tf * Math.log(windows / inWindows.get(term)!.size));
    return v;
  };

  // Cohesion at gap g (between sentences g-1 and g): the words of the block before against the block after.
  const cohesion: number[] = new Array<number>(n).fill(0);
  for (let g = 1; g < n; g++) {
    const left: Vector = new Map();
    for (let i = g - 1, got = 0; i >= 0 && got < block; i--) (counts(sentences[i]!.terms, left), (got += sentences[i]!.terms.length));
    const right: Vector = new Map();
    for (let i = g, got = 0; i < n && got < block; i++) (counts(sentences[i]!.terms, right), (got += sentences[i]!.terms.length));
    cohesion[g] = cosine(weigh(left), weigh(right));
  }
  const smooth = cohesion.map((_, g) => {
    if (g === 0) return 0;
    const around = [g - 1, g, g + 1].filter((i) => i >= 1 && i < n);
    return around.reduce((sum, i) => sum + cohesion[i]!, 0) / around.length;
  });
  // Depth: how far cohesion falls at a gap from the peaks on either side (Hearst's TextTiling).
  const depth: number[] = new Array<number>(n).fill(0);
  const minima: number[] = [];
  for (let g = 1; g < n; g++) {
    let l = g;
    while (l - 1 >= 1 && smooth[l - 1]! >= smooth[l]!) l--;
    let r = g;
    while (r + 1 < n && smooth[r + 1]! >= smooth[r]!) r++;
    depth[g] = smooth[l]! - smooth[g]! + (smooth[r]! - smooth[g]!);
    if ((g === 1 || smooth[g]! <= smooth[g - 1]!) && (g === n - 1 || smooth[g]! <= smooth[g + 1]!)) minima.push(g);
  }
  if (minima.length === 0) return [0];
  const ds = minima.map((g) => depth[g]!);
  const mean = ds.reduce((a, b) => a + b, 0) / ds.length;
  const sd = Math.sqrt(ds.reduce((a, b) => a + (b - mean) ** 2, 0) / ds.length);
  // Deeper than most dips, or half as deep as the deepest: a short talk has too few dips for the first.
  const cutoff = Math.max(0.1, Math.min(mean + sd / 2, Math.max(...ds) / 2));

  const chosen: number[] = [];
  const ranked = [...minima].sort((a, b) => depth[b]! - depth[a]! || a - b);
  for (const g of ranked) {
    if (depth[g]! < cutoff || chosen.length + 1 >= NOTES_LIMITS.maxChapters) break;
    const at = sentences[g]!.startMs;
    if (at < minChapterMs || durationMs - at < minChapterMs) continue;
    if (chosen.some((c) => Math.abs(sentences[c]!.startMs - at) < minChapterMs)) continue;
    chosen.push(g);
  }
  return distinctChapters([0, ...chosen.sort((a, b) => a - b)], vectors);
}

/**
 * A dip in cohesion can be chance: a class on one subject has them too. Two chapters are kept apart only
 * when they are clearly less alike than the halves of each are alike to each other; the least distinct
 * boundary goes first, until all that remain are distinct.
 */
function distinctChapters(starts: number[], vectors: Vector[]): number[] {
  const sum = (from: number, to: number): Vector => {
    const v: Vector = new Map();
    for (let i = from; i < to; i++) for (const [term, x] of vectors[i]!) v.set(term, (v.get(term) ?? 0) + x);
    return v;
  };
  const selfLikeness = (from: number, to: number) => cosine(sum(from, (from + to) >> 1), sum((from + to) >> 1, to));
  const bounds = [...starts];
  for (;;) {
    let worst = -1;
    let worstRatio = 0;
    for (let k = 1; k < bounds.length; k++) {
      const a0 = bounds[k - 1]!;
      const b0 = bounds[k]!;
      const b1 = bounds[k + 1] ?? vectors.length;
      const within = Math.min(selfLikeness(a0, b0), selfLikeness(b0, b1));
      const ratio = within > 0 ? cosine(sum(a0, b0), sum(b0, b1)) / within : 0;
      if (ratio > worstRatio) (worst = k), (worstRatio = ratio);
    }
    if (worst < 0 || worstRatio < DISTINCT) return bounds;
    bounds.splice(worst, 1);
  }
}

/** The words of one span that are rare in the others, best first (for a single span: its most frequent). */
function keyTerms(spans: Sentence[][]): { term: string; w: number }[][] {
  const tf = spans.map((span) => counts(span.flatMap((s) => s.terms)));
  const df = new Map<string, number>();
  for (const v of tf) for (const term of v.keys()) df.set(term, (df.get(term) ?? 0) + 1);
  return tf.map((v) =>
    [...v]
      .filter(([, n]) => n >= 2 || v.size < 10)
      // A word of every chapter names none of them.
      .map(([term, n]) => ({ term, w: n * (spans.length > 1 ? Math.log(spans.length / df.get(term)!) + 0.1 : 1) }))
      .sort(byWeight),
  );
}

function byWeight(a: { term: string; w: number }, b: { term: string; w: number }): number {
  return b.w - a.w || (a.term < b.term ? -1 : 1);
}

/** The class's key terms, best first: each term as good as it is in the chapter where it matters most. */
function classTerms(perChapter: { term: string; w: number }[][]): string[] {
  const best = new Map<string, number>();
  for (const list of perChapter) for (const { term, w } of list) best.set(term, Math.max(w, best.get(term) ?? 0));
  return [...best].map(([term, w]) => ({ term, w })).sort(byWeight).map((x) => x.term);
}

/** The most frequent spelling of each stem, lower case (ties: the first alphabetically). */
function surfaces(sentences: Sentence[]): Map<string, string> {
  const seen = new Map<string, Map<string, number>>();
  for (const s of sentences) {
    for (const w of s.words) {
      if (!w.stem) continue;
      const forms = seen.get(w.stem) ?? new Map<string, number>();
      const lower = w.surface.toLowerCase();
      forms.set(lower, (forms.get(lower) ?? 0) + 1);
      seen.set(w.stem, forms);
    }
  }
  return new Map([...seen].map(([term, forms]) => [term, [...forms].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0]]));
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cut = s.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return (space > max / 2 ? cut.slice(0, space) : cut) + '…';
}

/** A sentence as a line of notes: a recognizer's output has no capital or full stop. */
function asLine(s: Sentence): string {
  const text = capitalize(s.text);
  return /[.!?…。！？]$/.test(text) ? text : text + '.';
}

function title(terms: string[], forms: Map<string, string>, n: number): string {
  const words = terms.slice(0, 3).map((t) => forms.get(t) ?? t);
  if (words.length === 0) return `Part ${n}`;
  const list = words.length === 1 ? words[0]! : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
  return clip(capitalize(list), NOTES_LIMITS.titleChars);
}

const BLANK = '_____';

function cloze(s: Sentence, termRank: Map<string, number>, used: Set<string>): { question: string; answer: string; stem: string } | null {
  if (s.words.length < 6 || s.text.length > 300 || s.text.endsWith('?')) return null;
  let best: { surface: string; stem: string; rank: number } | null = null;
  for (const w of s.words) {
    if (!w.stem || w.surface.length < 4 || used.has(w.stem)) continue;
    const rank = termRank.get(w.stem);
    if (rank !== undefined && (best === null || rank < best.rank)) best = { surface: w.surface, stem: w.stem, rank };
  }
  if (!best) return null;
  const escaped = best.surface.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const question = asLine(s).replace(new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'u'), BLANK);
  if (!question.includes(BLANK)) return null;
  return { question, answer: best.surface, stem: best.stem };
}

export function extractiveNotes(t: Transcript): LectureNotes {
  const sentences = transcriptSentences(t);
  // Chapters must start inside the stated duration, even if a segment runs past it.
  const durationMs = t.durationMs > 0 ? t.durationMs : Math.max(0, ...t.segments.map((s) => s.endMs));
  if (sentences.length === 0) {
    return { summary: { overview: 'No speech was recognized in this recording.', bullets: [] }, chapters: [{ title: 'Recording', startSeconds: 0 }], quiz: [] };
  }
  const vectors = tfidfVectors(sentences);
  const rank = textRank(vectors);
  const score = sentences.map((s, i) => rank[i]! * quality(s));
  const byScore = sentences.map((s) => s.index).sort((a, b) => score[b]! - score[a]! || a - b);

  const starts = topicBoundaries(sentences, vectors, durationMs);
  const spans = starts.map((start, c) => sentences.slice(start, starts[c + 1] ?? sentences.length));
  const forms = surfaces(sentences);
  const weighted = keyTerms(spans);
  const spanTerms = weighted.map((list) => list.map((x) => x.term));
  const chapters = starts.map((start, c) => ({
    title: title(spanTerms[c]!, forms, c + 1),
    startSeconds: c === 0 ? 0 : Math.floor(sentences[start]!.startMs / 1000),
  }));

  // Overview: the most central sentences, from different chapters while there are some; bullets: the
  // best remaining sentence of each chapter, then the next best overall. A sentence that says again what
  // a chosen one said is passed over while others remain.
  const chosen: number[] = [];
  const lines = new Set<string>();
  const pick = (i: number, strict: boolean): boolean => {
    const line = sentenceKey(sentences[i]!);
    if (lines.has(line) || chosen.includes(i)) return false;
    if (strict && chosen.some((c) => cosine(vectors[c]!, vectors[i]!) > 0.5)) return false;
    chosen.push(i);
    lines.add(line);
    return true;
  };
  // Sentences of different chapters do not repeat each other, whatever words they share.
  const take = (chapterBests: number[], want: number): number[] => {
    const got: number[] = [];
    for (const i of chapterBests) if (got.length < want && pick(i, false)) got.push(i);
    for (const strict of [true, false]) {
      for (const i of byScore) if (got.length < want && pick(i, strict)) got.push(i);
    }
    return got;
  };
  const bestOfChapters = () =>
    spans
      .map((span) => span.map((s) => s.index).filter((i) => !chosen.includes(i)).sort((a, b) => score[b]! - score[a]! || a - b)[0])
      .filter((i) => i !== undefined)
      .sort((a, b) => score[b]! - score[a]! || a - b);
  const distinct = distinctSentences(sentences);
  const overview = take(spans.length > 1 ? bestOfChapters() : [], overviewSentences(distinct)).sort((a, b) => a - b);
  // One a chapter and two more, or one for each five minutes of a class with few chapters.
  const wantBullets = Math.max(
    bulletsFloor(distinct),
    Math.min(NOTES_LIMITS.maxBullets, Math.max(chapters.length + 2, Math.round(durationMs / 300_000)), distinct - overview.length),
  );
  const bullets = take(spans.length > 1 ? bestOfChapters() : [], wantBullets);
  bullets.sort((a, b) => a - b);

  // Quiz: the key sentences of each chapter in turn, each with its best key term blanked out; the
  // choices are other key terms, of the same chapter first, that the sentence does not contain.
  const globalTerms = classTerms(weighted).filter((term) => (forms.get(term) ?? '').length >= 4);
  const termRank = new Map(globalTerms.map((term, i) => [term, i]));
  const wantQuiz = Math.min(NOTES_LIMITS.maxQuiz, Math.max(2, Math.round(durationMs / 180_000)));
  const chapterOf = (i: number) => starts.filter((s) => s <= i).length - 1;
  const queues = spans.map((span) => span.map((s) => s.index).sort((a, b) => score[b]! - score[a]! || a - b));
  const quiz: QuizQuestion[] = [];
  const used = new Set<string>();
  for (let round = 0; quiz.length < wantQuiz && queues.some((q) => q.length > 0); round++) {
    for (const q of queues) {
      if (quiz.length >= wantQuiz) break;
      let item: ReturnType<typeof cloze> = null;
      let i = -1;
      while (!item && q.length > 0) item = cloze(sentences[(i = q.shift()!)]!, termRank, used);
      if (!item) continue;
      used.add(item.stem);
      const inSentence = new Set(sentences[i]!.terms);
      const distractors: string[] = [];
      for (const term of [...spanTerms[chapterOf(i)]!, ...globalTerms]) {
        const form = forms.get(term);
        if (distractors.length >= 3 || !form || form.length < 4 || inSentence.has(term) || distractors.includes(form)) continue;
        if (form === item.answer.toLowerCase()) continue;
        distractors.push(form);
      }
      const question: QuizQuestion = { question: item.question, answer: item.answer };
      if (distractors.length > 0) question.options = [item.answer, ...distractors].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
      quiz.push(question);
    }
  }

  return {
    summary: {
      overview: clip(overview.map((i) => asLine(sentences[i]!)).join(' '), NOTES_LIMITS.overviewChars),
      bullets: bullets.map((i) => clip(asLine(sentences[i]!), NOTES_LIMITS.bulletChars)),
    },
    chapters,
    quiz,
  };
}

/** The offline notes engine, the default: no model, no network. */
export class ExtractiveNotesEngine implements NotesEngine {
  readonly name = 'extractive';

  async notes(t: Transcript, o: NotesOptions): Promise<LectureNotes> {
    o.signal?.throwIfAborted();
    return extractiveNotes({ ...t, language: o.language || t.language });
  }
}
