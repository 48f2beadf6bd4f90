/** Transcripts for the notes tests: a short clip, and a 30-minute class of four clearly different topics. */
import type { Transcript } from '../../src/platform/ai/notes.ts';

export const shortClip: Transcript = {
  language: 'en',
  durationMs: 21_000,
  segments: [
    { startMs: 0, endMs: 6_000, text: 'Good morning everyone, today we look at how plants make their food.', speaker: 'Teacher' },
    { startMs: 6_000, endMs: 12_000, text: 'Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.', speaker: 'Teacher' },
    { startMs: 12_000, endMs: 17_000, text: 'The chlorophyll in the leaves absorbs the light that drives photosynthesis.', speaker: 'Teacher' },
    { startMs: 17_000, endMs: 21_000, text: 'Without sunlight the leaves cannot produce sugar for the plant.', speaker: 'Teacher' },
  ],
};

const topics = [
  {
    name: 'photosynthesis',
    words: ['photosynthesis', 'chlorophyll', 'sunlight', 'leaves', 'glucose', 'oxygen', 'carbon', 'stomata', 'chloroplast', 'plants', 'energy', 'water'],
  },
  {
    name: 'volcanoes',
    words: ['volcano', 'magma', 'lava', 'eruption', 'crater', 'tectonic', 'plates', 'ash', 'mantle', 'basalt', 'pressure', 'crust'],
  },
  {
    name: 'rome',
    words: ['rome', 'emperor', 'senate', 'legions', 'augustus', 'republic', 'caesar', 'provinces', 'citizens', 'gladiators', 'aqueducts', 'empire'],
  },
  {
    name: 'programming',
    words: ['python', 'variables', 'functions', 'loops', 'compiler', 'algorithm', 'program', 'syntax', 'debugging', 'recursion', 'arrays', 'strings'],
  },
];

const templates = [
  'The {a} and the {b} work together, and that is why the {c} matters so much here.',
  'Remember that {a} depends on {b}, which we will see again with {c}.',
  'Scientists describe {a} in terms of {b} and {c}.',
  'If you look at the {a} closely, you will notice the {b} next to the {c}.',
  'Our textbook explains {a} with a diagram of {b}.',
  'Many students confuse {a} with {b}, but {c} tells them apart.',
  'A good way to picture {a} is to imagine {b} and {c} side by side.',
];

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The topic boundaries of longLecture, in seconds. */
export const longBoundaries = [450, 900, 1350];

/**
 * A 30-minute class: four topics of 7.5 minutes (or of `topicMs`), a sentence every 6 seconds, in
 * segments of two sentences.
 */
export function longLecture(punctuated = true, topicMs = 450_000): Transcript {
  const random = prng(27);
  const segments: Transcript['segments'][number][] = [];
  const sentenceMs = 6_000;
  let pending: string[] = [];
  for (let at = 0; at < 4 * topicMs; at += sentenceMs) {
    const topic = topics[Math.floor(at / topicMs)]!;
    const pickWord = () => topic.words[Math.floor(random() * topic.words.length)]!;
    const template = templates[Math.floor(random() * templates.length)]!;
    let text = template.replace('{a}', pickWord()).replace('{b}', pickWord()).replace('{c}', pickWord());
    if (!punctuated) text = text.toLowerCase().replace(/[.,]/g, '');
    pending.push(text);
    if (pending.length === 2) {
      segments.push({ startMs: at - sentenceMs, endMs: at + sentenceMs, text: pending.join(' '), speaker: 'Teacher' });
      pending = [];
    }
  }
  return { language: 'en', durationMs: 4 * topicMs, segments };
}
