/**
 * The notes benchmark: `npm run bench -- --scenario notes [options]` (bench/run.ts hands over here).
 * The offline engines of src/platform/ai/ that turn a recorded class into lecture notes (issue 27):
 *
 * Transcription: the offline engine (PocketSphinx, as openTranscriptionEngine() gives it with the
 * default settings) on clips with known words (lib/notes-asr.ts): the lesson of test/ai/lesson.ts
 * spoken by flite's `rms` voice and by espeak-ng, the real recorded sentences of Debian's
 * pocketsphinx-testdata, and one long file of flite speech. Word error rate, and speed as audio
 * seconds per CPU second of the engine's processes (x real time on one core: the decoder is
 * single-threaded) and per wall second.
 *
 * Notes: the extractive engine (openNotesEngine({ engine: 'extractive' })) on a synthetic 30-minute
 * class (lib/notes-lecture.ts: a teacher and six students, four topics), written with punctuation (as
 * an OpenAI-compatible recognizer writes) and without (as PocketSphinx does); its time, and what it
 * made: chapters (against where the topics start), bullets, quiz questions.
 *
 * See bench/README.md, "The notes scenario".
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTranscriptionEngine, type TranscriptSegment } from '../src/platform/ai/asr.ts';
import { lectureNotesSchema, openNotesEngine, type LectureNotes } from '../src/platform/ai/notes.ts';
import { benchArgs } from './lib/args.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';
import { ESPEAK, FLITE_RMS, debianVersion, lessonClips, longFile, measureSet, missingTools, testdataSets, type ClipSet, type SetResult } from './lib/notes-asr.ts';
import { STUDENT_NAMES, syntheticLecture, type Lecture } from './lib/notes-lecture.ts';
import { mergeTracks, speakLecture } from './lib/notes-spoken.ts';
import { median } from './lib/report.ts';

const USAGE = `npm run bench -- --scenario notes [options]

  --part P          asr, notes or both                                             [both]

 asr: the offline transcription engine (PocketSphinx) on clips with known words
  --sentences N     sentences of the lesson (test/ai/lesson.ts, 20) spoken by each
                    voice, one clip each: flite rms and espeak-ng                  [20]
  --long-minutes N  the long file: the flite lesson said again, whole passes, until
                    it lasts this long (0: no long file)                            [5]
  (the real recorded sentences of Debian's pocketsphinx-testdata are measured when
  that package is installed)

 notes: the extractive notes engine on a synthetic class
  --class-minutes N the class's length (four topics of equal length)               [30]
  --rounds N        notes made this many times per transcript; the first (cold) and
                    the median of the others are reported                           [5]

  --spoken          also the whole way from a recording: the class spoken by flite
                    into one track per participant (teacher rms, students slt and
                    awb), each track transcribed by PocketSphinx, the notes made from
                    what it heard (about 5 more minutes on a quiet machine, 20 on a busy one)

  --quick           6 sentences per voice, a 1-minute long file, 3 rounds (1 to 2 minutes)
  --json            print the results as one JSON object on stdout (tables go to stderr)
  --out FILE        JSON results                         [bench/results/notes-<time>.json]

Needs Debian's pocketsphinx, pocketsphinx-en-us, flite, espeak-ng and ffmpeg (apt-get install -y
pocketsphinx pocketsphinx-en-us pocketsphinx-testdata flite espeak-ng ffmpeg); --part notes needs none.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    part: { type: 'string', default: 'both' },
    sentences: { type: 'string' },
    'long-minutes': { type: 'string' },
    'class-minutes': { type: 'string', default: '30' },
    rounds: { type: 'string' },
    spoken: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
  'notes',
);
if (!['asr', 'notes', 'both'].includes(opt.part)) {
  console.error(`--part must be asr, notes or both\n\n${USAGE}`);
  process.exit(2);
}
const sentences = Math.min(20, int('sentences', opt.sentences ?? (opt.quick ? '6' : '20'), 1));
const longMinutes = int('long-minutes', opt['long-minutes'] ?? (opt.quick ? '1' : '5'), 0);
const classMinutes = int('class-minutes', opt['class-minutes'], 4);
const rounds = int('rounds', opt.rounds ?? (opt.quick ? '3' : '5'), 1);
const say = (s: string) => (opt.json ? process.stderr.write(s + '\n') : process.stdout.write(s + '\n'));
const here = new URL('.', import.meta.url).pathname;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

// ---- transcription ---------------------------------------------------------------------------------

/** The engine the server opens with the default settings (AULA_ASR_ENGINE=pocketsphinx), once the machine has what it needs. */
function offlineEngine() {
  const missing = missingTools();
  if (missing) {
    console.error(`transcription needs Debian's speech packages: ${missing} (or --part notes without --spoken)`);
    process.exit(2);
  }
  return openTranscriptionEngine({ AULA_ASR_ENGINE: 'pocketsphinx', AULA_ASR_MODEL: 'whisper-1' });
}

const asrTable = (results: SetResult[]) => {
  say('');
  say('| clip set | clips | words | WER | audio | x real time, one core (per CPU s) | x real time, wall |');
  say('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    say(`| ${r.name} | ${r.clips} | ${r.referenceWords} | ${pct(r.wer)} | ${r.audioSeconds.toFixed(0)} s | ${r.xRealTimeCpu.toFixed(1)}x | ${r.xRealTimeWall.toFixed(1)}x |`);
  }
};
const sayAsr = (r: SetResult) =>
  say(`  ${r.name}: WER ${pct(r.wer)} of ${r.referenceWords} words, ${r.audioSeconds.toFixed(0)} s of audio, ${r.xRealTimeCpu.toFixed(1)}x real time per CPU second (${r.cpuSeconds.toFixed(1)} s), ${r.xRealTimeWall.toFixed(1)}x wall`);

async function asrPart(work: string) {
  const engine = offlineEngine();
  say(`transcription: ${engine.name} ${debianVersion('pocketsphinx') ?? ''}, ${sentences} lesson sentence(s) per voice, a ${longMinutes}-minute long file; load average ${load()}`);

  const t0 = performance.now();
  const rms = lessonClips(work, FLITE_RMS, sentences);
  const sets: ClipSet[] = [
    { name: `flite rms, the lesson (${sentences} sentences, a clip each)`, clips: rms },
    { name: `espeak-ng en-us 140 words/min, the lesson (${sentences} sentences, a clip each)`, clips: lessonClips(work, ESPEAK, sentences) },
    ...testdataSets(),
  ];
  if (sets.length === 2) say('  (no real recorded speech: apt-get install -y pocketsphinx-testdata adds it)');
  let passes = 0;
  if (longMinutes > 0) {
    // the long file is always made of the whole lesson, however many sentences the short clips have
    const long = longFile(work, sentences === 20 ? rms : lessonClips(work, FLITE_RMS, 20), longMinutes * 60);
    passes = long.passes;
    sets.push({ name: `flite rms, one long file (the lesson ${passes} times, 0.8 s between sentences)`, clips: [long.clip] });
  }
  const synthesisSeconds = (performance.now() - t0) / 1000;
  say(`  clips made in ${synthesisSeconds.toFixed(1)} s`);

  const results: SetResult[] = [];
  for (const set of sets) {
    const r = await measureSet(engine, set);
    results.push(r);
    sayAsr(r);
  }
  const report = () => asrTable(results);
  return { result: { engine: engine.name, pocketsphinx: debianVersion('pocketsphinx'), sentencesPerVoice: sentences, longMinutes, longPasses: passes, synthesisSeconds, sets: results }, report };
}

// ---- notes -------------------------------------------------------------------------------------------

interface NotesRun {
  wallMs: number;
  cpuMs: number;
}

/**
 * How the notes' chapters line up with the topics: for each topic start after the first, the nearest
 * chapter start; found when within a minute (or a quarter of a topic, in a short class).
 */
function chapterMatch(notes: LectureNotes, lecture: Lecture) {
  const starts = notes.chapters.map((c) => c.startSeconds);
  const tolerance = Math.min(60, lecture.transcript.durationMs / 1000 / lecture.topicStartsMs.length / 4);
  const offsets = lecture.topicStartsMs.slice(1).map((ms) => {
    const topic = ms / 1000;
    const nearest = starts.reduce((best, s) => (Math.abs(s - topic) < Math.abs(best - topic) ? s : best), starts[0] ?? 0);
    return nearest - topic;
  });
  const found = offsets.filter((d) => Math.abs(d) <= tolerance).length;
  return { topicStartsSeconds: lecture.topicStartsMs.map((ms) => ms / 1000), offsetsSeconds: offsets, toleranceSeconds: tolerance, found, extra: Math.max(0, starts.length - 1 - found) };
}

async function notesOf(name: string, lecture: Lecture) {
  const engine = openNotesEngine({ engine: 'extractive' });
  const runs: NotesRun[] = [];
  let notes: LectureNotes | null = null;
  for (let r = 0; r < rounds; r++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    notes = await engine.notes(lecture.transcript, { language: 'en' });
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    runs.push({ wallMs, cpuMs: (cpu.user + cpu.system) / 1000 });
  }
  const n = notes!;
  const warm = runs.length > 1 ? runs.slice(1) : runs;
  const schema = lectureNotesSchema({ durationSeconds: lecture.transcript.durationMs / 1000 }).safeParse(n);
  const match = chapterMatch(n, lecture);
  return {
    name,
    engine: engine.name,
    transcript: {
      minutes: lecture.transcript.durationMs / 60_000,
      segments: lecture.transcript.segments.length,
      sentences: lecture.sentences,
      words: lecture.words,
      speakers: lecture.speakers.length,
      speechMinutes: lecture.speechMs / 60_000,
      topics: lecture.topics,
    },
    firstMs: runs[0]!.wallMs,
    medianMs: median(warm.map((r) => r.wallMs)),
    medianCpuMs: median(warm.map((r) => r.cpuMs)),
    runs,
    chapters: n.chapters,
    chapterMatch: match,
    bullets: n.summary.bullets.length,
    overviewChars: n.summary.overview.length,
    quiz: n.quiz.length,
    quizWithChoices: n.quiz.filter((q) => q.options).length,
    schemaValid: schema.success,
    notes: n,
  };
}

type NotesResult = Awaited<ReturnType<typeof notesOf>>;

async function notesPart() {
  say(`notes: the extractive engine on a synthetic ${classMinutes}-minute class, ${rounds} run(s) per transcript; load average ${load()}`);
  const results = [
    await notesOf('with punctuation (as an OpenAI-compatible recognizer writes)', syntheticLecture({ minutes: classMinutes })),
    await notesOf('lower case, no punctuation, an utterance between pauses (as PocketSphinx writes)', syntheticLecture({ minutes: classMinutes, punctuated: false })),
  ];
  return notesReport(results);
}

function notesReport(results: NotesResult[]) {
  const first = results[0];
  if (first) {
    const t = first.transcript;
    say(`  the class: ${t.segments} segments, ${t.sentences} sentences, ${t.words} words, ${t.speakers} speakers, ${t.speechMinutes.toFixed(1)} minutes of speech; topics start at ${first.chapterMatch.topicStartsSeconds.map((s) => `${s} s`).join(', ')}`);
  }
  for (const r of results) sayNotes(r);
  const report = (more: NotesResult[] = []) => {
    say('');
    say(`| ${classMinutes}-minute class, extractive notes | first run | median of the rest (CPU) | chapters | topic starts found (nearest chapter) | bullets | quiz (with choices) |`);
    say('|---|---:|---:|---:|---|---:|---:|');
    for (const r of [...results, ...more]) {
      const m = r.chapterMatch;
      say(`| ${r.name} | ${r.firstMs.toFixed(0)} ms | ${r.medianMs.toFixed(0)} ms (${r.medianCpuMs.toFixed(0)} ms) | ${r.chapters.length} | ${m.found} of ${m.offsetsSeconds.length} (${m.offsetsSeconds.map((d) => `${d >= 0 ? '+' : ''}${d.toFixed(0)} s`).join(', ')})${m.extra ? `, ${m.extra} extra` : ''} | ${r.bullets} | ${r.quiz} (${r.quizWithChoices}) |`);
    }
  };
  return { result: { classMinutes, rounds, transcripts: results }, report, invalid: results.some((r) => !r.schemaValid) };
}

function sayNotes(r: NotesResult) {
  say(`  ${r.name}: ${r.firstMs.toFixed(0)} ms first, ${r.medianMs.toFixed(0)} ms median (${r.medianCpuMs.toFixed(0)} ms CPU); ${r.chapters.length} chapters (${r.chapters.map((c) => `${c.startSeconds} s "${c.title}"`).join(', ')}), ${r.bullets} bullets, ${r.quiz} quiz questions${r.schemaValid ? '' : ' — NOT valid notes (schema)'}`);
}

// ---- the whole way: the class spoken, transcribed track by track, notes from what was heard ----------

async function spokenPart(work: string) {
  const engine = offlineEngine();
  const lecture = syntheticLecture({ minutes: classMinutes });
  say(`spoken: the ${classMinutes}-minute class said by flite, one track per participant, each transcribed by ${engine.name}; load average ${load()}`);
  const dir = join(work, 'spoken');
  mkdirSync(dir);
  const { tracks, synthesisSeconds } = speakLecture(lecture, dir, STUDENT_NAMES);
  say(`  ${tracks.length} tracks made in ${synthesisSeconds.toFixed(1)} s`);
  const heard: { speaker: string; segments: TranscriptSegment[] }[] = [];
  const teacher = tracks.filter((t) => t.voice === 'rms');
  const students = tracks.filter((t) => t.voice !== 'rms');
  const sets: SetResult[] = [];
  for (const [name, group] of [
    [`the class spoken: the teacher's track (flite rms, ${classMinutes} minutes, ${(teacher.reduce((s, t) => s + t.speechSeconds, 0) / 60).toFixed(0)} of them speech)`, teacher],
    [`the class spoken: the ${students.length} students' tracks (flite slt and awb, mostly silence)`, students],
  ] as const) {
    const r = await measureSet(engine, { name, clips: group.map((t) => ({ path: t.path, text: t.text })) }, (t, i) => heard.push({ speaker: group[i]!.speaker, segments: t.segments }));
    sets.push(r);
    sayAsr(r);
  }
  const all = sets.reduce((s, r) => ({ cpu: s.cpu + r.cpuSeconds, wall: s.wall + r.wallSeconds }), { cpu: 0, wall: 0 });
  const transcript = mergeTracks(heard, lecture.transcript.durationMs);
  const notes = await notesOf('transcribed by PocketSphinx from the class spoken by flite (--spoken)', { ...lecture, transcript });
  sayNotes(notes);
  say(`  the whole class: ${all.cpu.toFixed(0)} CPU s (${all.wall.toFixed(0)} s wall) to transcribe its ${tracks.length} tracks, ${notes.medianMs.toFixed(0)} ms for the notes`);
  return {
    result: {
      tracks: tracks.map(({ path: _path, text: _text, ...t }) => t),
      synthesisSeconds,
      sets,
      transcribeCpuSeconds: all.cpu,
      transcribeWallSeconds: all.wall,
      notes,
    },
    sets,
    notes,
  };
}

async function main(): Promise<void> {
  const started = new Date();
  const t0 = performance.now();
  const work = mkdtempSync(join(tmpdir(), 'aula-bench-notes-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  const loadAverageAtStart = loadavg();

  const asr = opt.part === 'notes' ? null : await asrPart(work);
  const notes = opt.part === 'asr' ? null : await notesPart();
  const spoken = opt.spoken ? await spokenPart(work) : null;
  if (asr || spoken) asrTable([...(asr?.result.sets ?? []), ...(spoken?.sets ?? [])]);
  if (notes || spoken) (notes ?? notesReport([])).report(spoken ? [spoken.notes] : []);
  const wallSeconds = (performance.now() - t0) / 1000;
  say(`\n${wallSeconds.toFixed(0)} s in all; ${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}; load average ${loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')} at the start, ${load()} at the end`);
  if (loadavg()[0]! > cpus().length * 0.75) say('note: the machine was busy; the speeds are low for it, per CPU second too (on a shared VM the decoder gets less done per CPU second beside other work); WER and the notes do not depend on it');

  const result = {
    scenario: 'notes',
    startedAt: started.toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, loadAverageAtStart, loadAverageAtEnd: loadavg() },
    options: { part: opt.part, sentences, longMinutes, classMinutes, rounds, spoken: opt.spoken, quick: opt.quick },
    wallSeconds,
    ...(asr ? { asr: asr.result } : {}),
    ...(notes ? { notes: notes.result } : {}),
    ...(spoken ? { spoken: spoken.result } : {}),
  };
  const out = opt.out ?? join(here, 'results', `notes-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  say(`results: ${out}`);
  if (opt.json) process.stdout.write(JSON.stringify(result) + '\n');
  if (notes?.invalid || (spoken && !spoken.notes.schemaValid)) process.exitCode = 1;
}

try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
} finally {
  await cleanup();
}
