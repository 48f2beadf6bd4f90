import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Batcher } from '../../src/platform/db/batch.ts';

t.test('while statements are free an item goes at once; when they are busy the waiting items share the next one', async (t) => {
  const runs: number[][] = [];
  const b = new Batcher<number, string>(async (items) => {
    runs.push(items);
    await sleep(20);
    return items.map((i) => (i === 5 ? null : `row ${i}`));
  }, { concurrency: 2, maxItems: 3 });
  const out = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((i) => b.add(i)));
  t.same(runs, [[1], [2], [3, 4, 5], [6, 7]], 'two alone, then what waited, at most three at a time');
  t.same(out, ['row 1', 'row 2', 'row 3', 'row 4', null, 'row 6', 'row 7'], 'each item gets its own answer, null where there is none');
});

t.test('with a linger a statement waits a few milliseconds for company, and not when the batch is full', async (t) => {
  const flushed: number[][] = [];
  const b = new Batcher<number>(async (batch) => {
    flushed.push(batch);
    await sleep(5);
  }, { concurrency: 1, maxItems: 4, lingerMs: 200 });
  const first = [1, 2, 3].map((i) => b.add(i));
  await sleep(10);
  t.same(flushed, [], 'nothing flushed within the linger');
  await Promise.all(first);
  t.same(flushed, [[1, 2, 3]], 'one flush for the three');
  const t0 = performance.now();
  await Promise.all([4, 5, 6, 7, 8].map((i) => b.add(i)));
  t.ok(performance.now() - t0 < 150, 'a full batch does not wait out the linger, nor does what waited behind it');
  t.same(flushed.slice(1), [[4, 5, 6, 7], [8]], 'at most four at a time; what came meanwhile goes in the next');
});

t.test('an item of a failed statement rejects with its error; the next statement runs', async (t) => {
  let fail = true;
  const b = new Batcher<number, number>(async (items) => {
    if (fail) throw new Error('db down');
    return items;
  }, { concurrency: 1, maxItems: 4 });
  await t.rejects(b.add(1), /db down/);
  fail = false;
  t.equal(await b.add(2), 2);
});
