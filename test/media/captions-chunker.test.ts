import t from 'tap';
import { CAPTION_RATE, Chunker, wavFile, type AudioChunk } from '../../media/captions/chunker.ts';

// The live captions' chunker (media/captions/chunker.ts): voice cut at quiet moments into chunks of
// 1.2 to 2 s, a long stretch with no quiet cut at its quietest point, quiet dropped, times kept.

const ms = (n: number) => Math.round((n / 1000) * CAPTION_RATE);
/** `durationMs` of a 300 Hz tone (voice) or zeros (quiet). */
function audio(durationMs: number, voiced: boolean, amp = 8000): Int16Array {
  const a = new Int16Array(ms(durationMs));
  if (voiced) for (let i = 0; i < a.length; i++) a[i] = Math.round(Math.sin((i * 2 * Math.PI * 300) / CAPTION_RATE) * amp);
  return a;
}

/** Feeds the pieces 20 ms at a time, as ffmpeg would, from wall-clock 0. */
function feed(pieces: Int16Array[]): { chunks: AudioChunk[]; chunker: Chunker } {
  const chunks: AudioChunk[] = [];
  const chunker = new Chunker((c) => chunks.push(c));
  const all = new Int16Array(pieces.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of pieces) {
    all.set(p, o);
    o += p.length;
  }
  for (let i = 0; i < all.length; i += 320) chunker.push(all.subarray(i, i + 320), ((i + 320) / CAPTION_RATE) * 1000);
  return { chunks, chunker };
}

t.test('words with pauses: one chunk per stretch of voice, cut in the quiet, starting a little before the voice', async (t) => {
  const { chunks } = feed([audio(500, false), audio(1500, true), audio(400, false), audio(1300, true), audio(600, false)]);
  t.equal(chunks.length, 2);
  t.ok(chunks[0]!.startAt >= 200 && chunks[0]!.startAt <= 500, `the first starts at ${chunks[0]!.startAt} ms, just before the voice at 500`);
  const len0 = (chunks[0]!.samples.length / CAPTION_RATE) * 1000;
  t.ok(len0 >= 1500 && len0 <= 2000, `the first is ${len0} ms: its voice and the quiet after`);
  t.ok(chunks[1]!.startAt > 2000, `the second starts at ${chunks[1]!.startAt} ms`);
});

t.test('voice with no pause is cut at 2 s at its quietest moment, and goes on in the next chunk', async (t) => {
  // loud voice with a softer (still voiced) dip at 1.6 s
  const { chunks, chunker } = feed([audio(1600, true), audio(60, true, 600), audio(2000, true)]);
  chunker.flush();
  t.ok(chunks.length >= 2, `${chunks.length} chunks`);
  const len0 = (chunks[0]!.samples.length / CAPTION_RATE) * 1000;
  t.ok(len0 >= 1600 && len0 <= 1700, `cut in the dip: ${len0} ms`);
  const total = chunks.reduce((n, c) => n + c.samples.length, 0);
  t.ok(total >= ms(3600), 'no audio lost at the cut');
});

t.test('quiet alone makes no chunk; flush ends the chunk under way', async (t) => {
  const { chunks, chunker } = feed([audio(3000, false)]);
  chunker.flush();
  t.equal(chunks.length, 0);
  const b = feed([audio(100, false), audio(600, true)]);
  t.equal(b.chunks.length, 0, 'still under way');
  b.chunker.flush();
  t.equal(b.chunks.length, 1, 'ended by flush');
});

t.test('wavFile: a 16 kHz mono 16-bit WAV', async (t) => {
  const w = wavFile(new Int16Array([1, -1, 2]));
  t.equal(w.toString('latin1', 0, 4), 'RIFF');
  t.equal(w.readUInt32LE(24), 16000);
  t.equal(w.readUInt16LE(22), 1);
  t.equal(w.readUInt32LE(40), 6);
  t.equal(w.length, 50);
});
