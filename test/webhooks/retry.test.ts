// The retry policy on its own (src/services/webhooks/delivery/retry.ts): what becomes of a message
// after an attempt, for any attempt number, answer, Retry-After and jitter draw.
import fc from 'fast-check';
import t from 'tap';
import { afterAttempt, MAX_ATTEMPTS, MAX_RETRY_AFTER_MS, RETRY_JITTER, RETRY_SCHEDULE_MS, retryDelay } from '../../src/services/webhooks/delivery/retry.ts';

const NOW = Date.parse('2026-03-02T08:00:00Z');
const draw = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const previous = fc.integer({ min: 0, max: MAX_ATTEMPTS - 1 });
const failure = fc.record(
  {
    ok: fc.constant(false),
    status: fc.option(fc.constantFrom(400, 404, 408, 429, 500, 502, 503, 504), { nil: undefined }),
    retryAfterSeconds: fc.option(fc.integer({ min: 0, max: 3 * 86_400 }), { nil: undefined }),
  },
  { requiredKeys: ['ok'] },
);

t.test('afterAttempt: a 2xx succeeds and is never retried', async (t) => {
  fc.assert(
    fc.property(previous, draw, fc.integer({ min: 200, max: 299 }), (prev, r, status) => {
      const next = afterAttempt(prev, { ok: true, status }, NOW, () => r);
      return next.status === 'SUCCEEDED' && next.next === null && next.attempts === prev + 1 && !next.gone;
    }),
  );
  t.pass();
});

t.test('afterAttempt: a 410 ends the message at once, whatever the attempt', async (t) => {
  fc.assert(
    fc.property(previous, draw, fc.option(fc.integer({ min: 0, max: 86_400 }), { nil: undefined }), (prev, r, retryAfterSeconds) => {
      const next = afterAttempt(prev, { ok: false, status: 410, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) }, NOW, () => r);
      return next.status === 'FAILED' && next.gone && next.next === null && next.attempts === prev + 1;
    }),
  );
  t.pass();
});

t.test('afterAttempt: a failure is retried on the schedule (±10%), postponed by Retry-After up to 24 h, until the 8th', async (t) => {
  fc.assert(
    fc.property(previous, draw, failure, (prev, r, result) => {
      const next = afterAttempt(prev, result, NOW, () => r);
      if (next.attempts !== prev + 1 || next.gone) return false;
      if (next.attempts >= MAX_ATTEMPTS) return next.status === 'FAILED' && next.next === null;
      if (next.status !== 'PENDING' || next.next === null) return false;
      const delay = next.next - NOW;
      const base = RETRY_SCHEDULE_MS[next.attempts - 1]!;
      const low = Math.round(base * (1 - RETRY_JITTER));
      const high = Math.round(base * (1 + RETRY_JITTER));
      if (result.retryAfterSeconds === undefined) return delay >= low && delay <= high;
      const asked = Math.min(result.retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS);
      // never sooner than the schedule nor than what the receiver asked (capped), never later than both
      return delay >= low && delay >= asked && delay <= Math.max(high, asked);
    }),
  );
  t.pass();
});

t.test('retryDelay: the delays grow with the attempt whatever the draws', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: MAX_ATTEMPTS - 2 }), draw, draw, (a, r1, r2) => retryDelay(a, () => r1)! < retryDelay(a + 1, () => r2)!),
  );
  t.equal(retryDelay(0, () => 0.5), null, 'no delay before a first attempt');
  t.equal(retryDelay(MAX_ATTEMPTS, () => 0.5), null, 'none after the last');
});
