/**
 * A school lesson of twenty sentences, spoken by espeak-ng for the transcription tests and measurements
 * (docs/ai-notes.md). Plain words that Debian's US English dictionary knows.
 */
export const LESSON = [
  'Good morning everyone and welcome to the science class.',
  'Today we will learn how plants make their own food.',
  'Plants use sunlight to turn water and air into sugar.',
  'This process is called photosynthesis.',
  'The green color of a leaf comes from chlorophyll.',
  'Water travels from the roots up to the leaves.',
  'The leaves take in carbon dioxide from the air.',
  'At the same time they give out oxygen for us to breathe.',
  'Please open your books at page twenty.',
  'Look at the picture of the tree on the left.',
  'Can anyone tell me what the roots do?',
  'Yes, the roots hold the plant in the ground.',
  'Now let us talk about the water cycle.',
  'The sun warms the water in the rivers and the sea.',
  'The water rises into the sky and forms clouds.',
  'When the clouds are heavy the water falls as rain.',
  'Write down three things that plants need to live.',
  'We will have a short quiz at the end of the week.',
  'Remember to bring your homework on Monday.',
  'Thank you all for listening, see you tomorrow.',
] as const;

/** Words that carry no topic, left out when counting the content words a transcript should hold. */
export const STOP_WORDS = new Set('a an and are as at can do for from how in into is it let me of on our own the their them they this to up us we what when will with you your yes now all see out same'.split(' '));

export function contentWords(text: string): string[] {
  return [...new Set(text.toLowerCase().replace(/[^a-z\s]/g, ' ').split(/\s+/).filter((w) => w && !STOP_WORDS.has(w)))];
}
