import t from 'tap';
import { cues, toPlainText, toWebVtt, vttTime, wordCount, type ClassTranscript } from '../../src/core/transcript.ts';
import { PocketSphinxEngine } from '../../src/platform/ai/pocketsphinx.ts';
import { ExtractiveNotesEngine } from '../../src/platform/ai/notes.ts';
import { RecordingNotes } from '../../src/services/recording-notes.ts';

// The transcript as people read it: WebVTT captions (readable cues on the word times, a voice per
// speaker, markup escaped) and text (a paragraph per turn); and which organizations get notes.
const names: Record<string, string> = { p1: 'Tina Teacher', p2: 'Sam <b>Student</b>' };
const nameOf = (s: string) => names[s] ?? 'Speaker';
const words = (from: number, text: string, step = 400) => text.split(' ').map((word, i) => ({ startMs: from + i * step, endMs: from + i * step + 350, word }));
const long = 'Plants use sunlight to turn water and air into sugar and this process is called photosynthesis which happens in the leaves of every green plant';
const transcript: ClassTranscript = {
  language: 'en',
  durationMs: 60_000,
  speakers: [{ id: 'p1', userId: 'usr_1' }, { id: 'p2', userId: 'usr_2' }],
  segments: [
    { startMs: 1000, endMs: 1000 + 25 * 400, text: long, speaker: 'p1', words: words(1000, long) },
    { startMs: 12_000, endMs: 13_000, text: 'What about <roots> & stems?', speaker: 'p2' },
    { startMs: 14_000, endMs: 15_000, text: 'Roots hold the plant.', speaker: 'p1', words: words(14_000, 'Roots hold the plant.', 200) },
    { startMs: 15_500, endMs: 16_000, text: 'Good.', speaker: 'p1' },
  ],
};

t.test('vttTime', async (t) => {
  t.equal(vttTime(0), '00:00:00.000');
  t.equal(vttTime(3_723_456), '01:02:03.456');
  t.equal(vttTime(-5), '00:00:00.000');
});

t.test('a long segment becomes cues of at most 84 characters and 6 s, on its word times', async (t) => {
  const cs = cues(transcript.segments[0]!);
  t.ok(cs.length >= 2, `${cs.length} cues`);
  for (const c of cs) {
    t.ok(c.text.length <= 84, c.text);
    t.ok(c.endMs - c.startMs <= 6000, `${c.endMs - c.startMs} ms`);
  }
  t.equal(cs.map((c) => c.text).join(' '), long, 'every word, in order');
  t.equal(cs[0]!.startMs, 1000);
  t.equal(cs[1]!.startMs, transcript.segments[0]!.words![cs[0]!.text.split(' ').length]!.startMs, 'the next cue starts at its first word');
});

t.test('WebVTT: the header, numbered cues with times, the speaker as a voice, markup escaped', async (t) => {
  const vtt = toWebVtt(transcript, nameOf);
  t.match(vtt, /^WEBVTT\n\n1\n00:00:01\.000 --> 00:00:0\d\.\d{3}\n<v Tina Teacher>Plants use sunlight/);
  t.ok(vtt.includes('<v Sam &lt;b&gt;Student&lt;/b&gt;>What about'), 'a name cannot close the voice tag');
  t.notMatch(vtt, /<roots>/);
  t.match(vtt, /What about &lt;roots&gt; &amp; stems\?/);
  const times = [...vtt.matchAll(/(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})/g)].map((m) => [m[1]!, m[2]!]);
  for (const [a, b] of times) t.ok(a! < b!, `${a} --> ${b}`);
});

t.test('text: a paragraph per turn, the same speaker going on joined', async (t) => {
  const text = toPlainText(transcript, nameOf);
  const paragraphs = text.trim().split('\n\n');
  t.equal(paragraphs.length, 3);
  t.match(paragraphs[0], /^\[00:00:01\] Tina Teacher: Plants use/);
  t.match(paragraphs[1], /^\[00:00:12\] Sam <b>Student<\/b>: What about <roots> & stems\?$/);
  t.equal(paragraphs[2], '[00:00:14] Tina Teacher: Roots hold the plant. Good.');
  t.equal(wordCount(transcript), 25 + 5 + 4 + 1);
});

t.test('who gets notes: the plan, the switch, an engine, its languages', async (t) => {
  const notes = (asr: PocketSphinxEngine | null) => new RecordingNotes({ asr, notes: new ExtractiveNotesEngine(), unconfigured: 'pocketsphinx_continuous is not installed' } as never);
  const ps = notes(new PocketSphinxEngine());
  t.equal(ps.unavailable({ plan: 'pro', aiNotes: true, language: 'en' }), null);
  t.equal(ps.unavailable({ plan: 'enterprise', aiNotes: true, language: 'en' }), null);
  t.match(ps.unavailable({ plan: 'standard', aiNotes: true, language: 'en' }), /standard plan does not include AI notes/);
  t.match(ps.unavailable({ plan: 'free', aiNotes: true, language: 'en' }), /free plan/);
  t.match(ps.unavailable({ plan: 'pro', aiNotes: false, language: 'en' }), /switched off/);
  t.match(ps.unavailable({ plan: 'pro', aiNotes: true, language: 'fr' }), /pocketsphinx\) cannot transcribe "fr"; it does en/);
  t.match(notes(null).unavailable({ plan: 'pro', aiNotes: true, language: 'en' }), /no transcription engine: pocketsphinx_continuous is not installed/);
});
