import fc from 'fast-check';
import t, { type Test } from 'tap';
import { extractiveNotes, ExtractiveNotesEngine, bulletsFloor, lectureNotesSchema, type LectureNotes, type Transcript } from '../../src/platform/ai/notes.ts';
import { distinctSentences, transcriptSentences } from '../../src/platform/ai/notes-text.ts';
import type { Transcript as HeardTranscript } from '../../src/platform/ai/asr.ts';
import { longBoundaries, longLecture, shortClip } from './notes-fixtures.ts';

function valid(t: Test, transcript: Transcript, notes: LectureNotes): void {
  const schema = lectureNotesSchema({ durationSeconds: transcript.durationMs / 1000, minBullets: bulletsFloor(distinctSentences(transcriptSentences(transcript))) });
  const checked = schema.safeParse(notes);
  t.ok(checked.success, checked.success ? 'the notes fit the schema' : JSON.stringify(checked.error.issues));
}

function words(transcript: Transcript): Set<string> {
  return new Set(transcript.segments.flatMap((s) => s.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []));
}

function checkQuiz(t: Test, transcript: Transcript, notes: LectureNotes): void {
  const said = words(transcript);
  for (const q of notes.quiz) {
    t.ok(said.has(q.answer.toLowerCase()), `the answer "${q.answer}" is said in the class`);
    t.match(q.question, /_____/, 'the question has a blank');
    if (q.options) t.ok(q.options.includes(q.answer), 'the answer is one of the options');
  }
}

const topicWords = [
  /photosynthesis|chlorophyll|sunlight|leaves|glucose|oxygen|carbon|stomata|chloroplast|plants|energy|water/i,
  /volcano|magma|lava|eruption|crater|tectonic|plates|ash|mantle|basalt|pressure|crust/i,
  /rome|emperor|senate|legions|augustus|republic|caesar|provinces|citizens|gladiators|aqueducts|empire/i,
  /python|variables|functions|loops|compiler|algorithm|program|syntax|debugging|recursion|arrays|strings/i,
];

t.test('extractiveNotes() of a short clip: an overview, a couple of bullets, one chapter at 0, a quiz from its words', async (t) => {
  const notes = extractiveNotes(shortClip);
  valid(t, shortClip, notes);
  t.ok(notes.summary.overview.length > 0);
  t.ok(notes.summary.bullets.length >= 2, `${notes.summary.bullets.length} bullets`);
  t.same(notes.chapters.map((c) => c.startSeconds), [0]);
  t.match(notes.chapters[0]!.title, /photosynthesis|leaves|sunlight|sugar/i);
  t.ok(notes.quiz.length >= 1);
  checkQuiz(t, shortClip, notes);
  const all = [notes.summary.overview, ...notes.summary.bullets];
  t.equal(new Set(all).size, all.length, 'no sentence twice');
});

t.test('extractiveNotes() of a 30-minute class of four topics: chapters near the topic changes, titled by their terms', async (t) => {
  const lecture = longLecture();
  const started = performance.now();
  const notes = extractiveNotes(lecture);
  t.comment(`30-minute class: ${Math.round(performance.now() - started)} ms`);
  valid(t, lecture, notes);
  t.ok(notes.summary.overview.length > 0);
  t.ok(notes.summary.bullets.length >= 3, `${notes.summary.bullets.length} bullets`);
  const starts = notes.chapters.map((c) => c.startSeconds);
  t.equal(starts[0], 0);
  t.equal(starts.length, longBoundaries.length + 1, `chapters at ${starts.join(', ')}`);
  for (const b of longBoundaries) t.ok(starts.some((s) => Math.abs(s - b) <= 45), `a chapter starts within 45 s of ${b} s`);
  const titles = notes.chapters.map((c) => c.title.toLowerCase());
  topicWords.forEach((words, c) => t.match(titles[c], words, `chapter ${c + 1} is titled by its topic's words`));
  t.ok(topicWords.filter((words) => words.test(notes.summary.overview)).length >= 2, 'the overview speaks of more than one topic');
  t.ok(notes.quiz.length >= 5 && notes.quiz.length <= 10, `${notes.quiz.length} questions`);
  t.equal(new Set(notes.quiz.map((q) => q.answer.toLowerCase())).size, notes.quiz.length, 'each question asks for a different term');
  checkQuiz(t, lecture, notes);
});

t.test('extractiveNotes() of a recognizer\'s output (no punctuation, no capitals) finds the same topic changes', async (t) => {
  const lecture = longLecture(false);
  const notes = extractiveNotes(lecture);
  valid(t, lecture, notes);
  const starts = notes.chapters.map((c) => c.startSeconds);
  for (const b of longBoundaries) t.ok(starts.some((s) => Math.abs(s - b) <= 45), `a chapter starts within 45 s of ${b} s (${starts.join(', ')})`);
  t.ok(notes.summary.bullets.every((b) => /^[A-Z].*\.$/.test(b)), 'bullets read as sentences');
});

t.test('extractiveNotes() of a 6-minute talk of four topics: shorter chapters, still at the topic changes', async (t) => {
  const talk = longLecture(true, 90_000);
  const notes = extractiveNotes(talk);
  valid(t, talk, notes);
  const starts = notes.chapters.map((c) => c.startSeconds);
  t.equal(starts.length, 4, `chapters at ${starts.join(', ')}`);
  for (const b of [90, 180, 270]) t.ok(starts.some((s) => Math.abs(s - b) <= 15), `a chapter starts within 15 s of ${b} s`);
});

t.test('extractiveNotes() of 30 minutes on one subject: one chapter, not chapters at chance dips', async (t) => {
  const oneTopic = longLecture(true, 1_800_000);
  const lecture = { ...oneTopic, durationMs: 1_800_000, segments: oneTopic.segments.filter((s) => s.endMs <= 1_800_000) };
  const notes = extractiveNotes(lecture);
  valid(t, lecture, notes);
  t.equal(notes.chapters.length, 1, `chapters at ${notes.chapters.map((c) => c.startSeconds).join(', ')}`);
  t.ok(notes.summary.bullets.length >= 3);
});

t.test('transcriptSentences() times a sentence by the engine\'s word times where given, else spreads the words evenly', async (t) => {
  const heard: HeardTranscript = {
    language: 'en',
    durationMs: 20_000,
    segments: [
      {
        startMs: 0,
        endMs: 20_000,
        text: 'Plants make sugar. Then a long pause follows here.',
        words: ['Plants', 'make', 'sugar.', 'Then', 'a', 'long', 'pause', 'follows', 'here.'].map((word, i) => ({ word, startMs: i < 3 ? i * 500 : 15_000 + i * 500, endMs: 0 })),
      },
    ],
  };
  t.same(transcriptSentences(heard).map((s) => s.startMs), [0, 16_500]);
  const untimed = { ...heard, segments: heard.segments.map(({ words: _, ...s }) => s) };
  t.same(transcriptSentences(untimed).map((s) => s.startMs), [0, Math.round((3 * 20_000) / 9)]);
  t.ok(extractiveNotes(heard).summary.overview, 'a transcription engine\'s transcript is a notes engine\'s input');
});

t.test('extractiveNotes() is deterministic', async (t) => {
  t.same(extractiveNotes(longLecture()), extractiveNotes(longLecture()));
  t.same(extractiveNotes(shortClip), extractiveNotes(structuredClone(shortClip)));
});

t.test('extractiveNotes() of silence, and of a language without a stop list', async (t) => {
  const silent = extractiveNotes({ language: 'en', durationMs: 60_000, segments: [] });
  valid(t, { language: 'en', durationMs: 60_000, segments: [] }, silent);
  t.same(silent.quiz, []);
  const spanish: Transcript = {
    language: 'es',
    durationMs: 20_000,
    segments: [
      { startMs: 0, endMs: 5_000, text: 'Hoy estudiamos la fotosíntesis de las plantas verdes.' },
      { startMs: 5_000, endMs: 10_000, text: 'La clorofila de las hojas absorbe la luz del sol.' },
      { startMs: 10_000, endMs: 15_000, text: 'Con la luz, las plantas producen azúcar y oxígeno.' },
      { startMs: 15_000, endMs: 20_000, text: 'Sin la luz del sol, las hojas no producen azúcar.' },
    ],
  };
  const notes = extractiveNotes(spanish);
  valid(t, spanish, notes);
  checkQuiz(t, spanish, notes);
});

t.test('ExtractiveNotesEngine.notes() honours an aborted signal', async (t) => {
  const engine = new ExtractiveNotesEngine();
  t.equal(engine.name, 'extractive');
  t.same(await engine.notes(shortClip, { language: 'en' }), extractiveNotes(shortClip));
  await t.rejects(engine.notes(shortClip, { language: 'en', signal: AbortSignal.abort() }));
});

t.test('extractiveNotes() of any transcript fits the schema (generated transcripts)', async (t) => {
  const repeated = { language: 'en', durationMs: 60_000, segments: Array.from({ length: 6 }, (_, i) => ({ startMs: i * 10_000, endMs: i * 10_000 + 5_000, text: 'Plants make sugar from light.' })) };
  valid(t, repeated, extractiveNotes(repeated));
  const vocabulary = ['the', 'plants', 'sugar', 'volcano', 'lava', 'rome', 'senate', 'python', 'loops', 'and', 'is', 'of', 'a', 'why', '42', "it's", 'Émile', 'über', '.', '?', ',', 'x'];
  const segment = fc.record({
    startMs: fc.integer({ min: 0, max: 3_600_000 }),
    len: fc.integer({ min: 0, max: 60_000 }),
    words: fc.array(fc.constantFrom(...vocabulary), { maxLength: 60 }),
  });
  fc.assert(
    fc.property(fc.array(segment, { maxLength: 80 }), fc.constantFrom('en', 'de', 'ja'), (segs, language) => {
      const segments = segs.map((s) => ({ startMs: s.startMs, endMs: s.startMs + s.len, text: s.words.join(' ').replace(/ ([.?,])/g, '$1') }));
      const durationMs = Math.max(1, ...segments.map((s) => s.endMs));
      const transcript = { language, durationMs, segments };
      const notes = extractiveNotes(transcript);
      const schema = lectureNotesSchema({ durationSeconds: durationMs / 1000, minBullets: bulletsFloor(distinctSentences(transcriptSentences(transcript))) });
      const checked = schema.safeParse(notes);
      if (!checked.success) throw new Error(JSON.stringify(checked.error.issues));
    }),
    { numRuns: 150, seed: 27 },
  );
  t.pass('150 generated transcripts');
});

t.test('extractiveNotes(): a teacher\'s lead-ins are not in the notes, and the greeting is not a key point', async (t) => {
  const lines = [
    'Good morning everyone and welcome back, today we talk about plants, water and the sun.',
    'Write this down in your notebook: plants make their own food in their leaves.',
    'The leaves take in carbon dioxide from the air through tiny holes.',
    'Let me say that again: plants make their own food in their leaves, using sunlight.',
    'Sunlight gives the leaves the energy to turn water and carbon dioxide into sugar.',
    'Remember that the roots take up water from the soil.',
    'Water travels from the roots up the stem to the leaves.',
    'The green chlorophyll in the leaves catches the sunlight.',
    'Okay so, listen carefully: plants give out oxygen for us to breathe.',
    'Thank you all for listening, see you tomorrow.',
  ];
  for (const spoken of [false, true]) {
    // as written, and as a recognizer gives it (no capitals, no punctuation)
    const text = (l: string) => (spoken ? l.toLowerCase().replace(/[^a-z' ]/g, '') : l);
    const transcript: Transcript = { language: 'en', durationMs: 60_000, segments: lines.map((l, i) => ({ startMs: i * 6000, endMs: i * 6000 + 5500, text: text(l), speaker: 'Teacher' })) };
    const notes = extractiveNotes(transcript);
    valid(t, transcript, notes);
    const said = [notes.summary.overview, ...notes.summary.bullets, ...notes.quiz.map((q) => q.question)].join('\n');
    t.notMatch(said, /write this down|let me say that again|listen carefully|remember that|okay so/i, `${spoken ? 'spoken' : 'written'}: no lead-in in the notes`);
    t.notMatch(notes.summary.bullets.join('\n'), /good morning|see you tomorrow/i, `${spoken ? 'spoken' : 'written'}: no greeting or goodbye among the key points`);
    t.match(said, /plants make their own food in their leaves/i, 'the fact behind the lead-in is kept');
  }
});
