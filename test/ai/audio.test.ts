import t from 'tap';
import { parseSilences, planChunks } from '../../src/platform/ai/audio.ts';
import { retryAfterMs } from '../../src/platform/ai/openai-asr.ts';

t.test('parseSilences() reads ffmpeg silencedetect lines; one still open at the end closes with the audio', async (t) => {
  const stderr = [
    '[silencedetect @ 0x55] silence_start: 0',
    '[silencedetect @ 0x55] silence_end: 0.512 | silence_duration: 0.512',
    'size=N/A time=00:00:10.00 bitrate=N/A',
    '[silencedetect @ 0x55] silence_start: 4.2',
    '[silencedetect @ 0x55] silence_end: 5.9 | silence_duration: 1.7',
    '[silencedetect @ 0x55] silence_start: 9.5',
  ].join('\n');
  t.same(parseSilences(stderr, 10_000), [{ startMs: 0, endMs: 512 }, { startMs: 4200, endMs: 5900 }, { startMs: 9500, endMs: 10_000 }]);
});

t.test('planChunks() cuts in the middle of the last silence before the limit, else at the limit', async (t) => {
  t.same(planChunks(5000, [], 6000), [{ startMs: 0, endMs: 5000 }], 'short audio: one chunk');
  const silences = [{ startMs: 3000, endMs: 4000 }, { startMs: 8000, endMs: 9000 }, { startMs: 15_000, endMs: 15_400 }];
  t.same(planChunks(20_000, silences, 10_000), [{ startMs: 0, endMs: 8500 }, { startMs: 8500, endMs: 15_200 }, { startMs: 15_200, endMs: 20_000 }]);
  t.same(planChunks(25_000, [], 10_000), [{ startMs: 0, endMs: 10_000 }, { startMs: 10_000, endMs: 20_000 }, { startMs: 20_000, endMs: 25_000 }], 'no silence: hard cuts');
  t.same(planChunks(12_000, [{ startMs: 500, endMs: 900 }], 10_000), [{ startMs: 0, endMs: 10_000 }, { startMs: 10_000, endMs: 12_000 }], 'a silence at the very start makes no sliver');
  t.same(planChunks(14_000, [{ startMs: 9000, endMs: 12_000 }], 10_000), [{ startMs: 0, endMs: 9500 }, { startMs: 9500, endMs: 14_000 }], 'a silence across the limit: cut inside it, before the limit');
});

t.test('retryAfterMs() takes seconds or an HTTP date', async (t) => {
  t.equal(retryAfterMs('2'), 2000);
  t.equal(retryAfterMs('0.5'), 500);
  t.equal(retryAfterMs(new Date(61_000).toUTCString(), 1000), 60_000);
  t.equal(retryAfterMs(null), null);
  t.equal(retryAfterMs('soon'), null);
});
