// Passes (src/services/webhooks/delivery/passes.ts): kicks while a pass runs make one more pass, not
// one each; passes never overlap; a kicked pass keeps its distance from the one before.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Passes } from '../../src/services/webhooks/delivery/passes.ts';

t.test('kicks while a pass runs make one more pass after it, and passes never overlap', async (t) => {
  let running = 0;
  let overlapped = false;
  let runs = 0;
  let release!: () => void;
  const passes = new Passes(async () => {
    runs++;
    if (++running > 1) overlapped = true;
    if (runs === 1) await new Promise<void>((r) => (release = r));
    running--;
  }, (err) => t.fail(String(err)));
  passes.kick();
  await sleep(5);
  for (let i = 0; i < 10; i++) passes.kick();
  release();
  await sleep(5);
  await passes.idle();
  t.equal(runs, 2, 'ten kicks during the first pass made one more');
  t.notOk(overlapped);
});

t.test('a kicked pass starts no sooner than minIntervalMs after the start of the one before', async (t) => {
  const starts: number[] = [];
  const passes = new Passes(async () => void starts.push(performance.now()), (err) => t.fail(String(err)), 40);
  passes.kick();
  await passes.idle();
  passes.kick();
  await sleep(60);
  await passes.idle();
  t.equal(starts.length, 2);
  t.ok(starts[1]! - starts[0]! >= 39, `${(starts[1]! - starts[0]!).toFixed(1)} ms apart`);
});

t.test('a failed pass is reported and the next one runs', async (t) => {
  const errors: unknown[] = [];
  let n = 0;
  const passes = new Passes(async () => {
    if (n++ === 0) throw new Error('boom');
  }, (err) => errors.push(err));
  passes.kick();
  await passes.idle();
  await sleep(1);
  passes.kick();
  await passes.idle();
  t.equal(n, 2);
  t.equal(errors.length, 1);
});
