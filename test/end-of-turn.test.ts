import t from 'tap';
import { atEndOfTurn } from '../src/platform/end-of-turn.ts';

// Jobs asked for in one turn of the event loop run together at its end, in order; each caller gets its
// own result or its own error.
t.test('jobs of one turn run together, after the turn, in the order asked', async (t) => {
  const ran: string[] = [];
  const a = atEndOfTurn(() => (ran.push('a'), 1));
  const b = atEndOfTurn(() => (ran.push('b'), 2));
  ran.push('turn');
  await Promise.resolve(); // microtasks of this turn do not run them either
  ran.push('microtask');
  t.same(await Promise.all([a, b]), [1, 2]);
  t.same(ran, ['turn', 'microtask', 'a', 'b']);
});

t.test('a job that throws rejects its own caller only; the next turn starts a new batch', async (t) => {
  const bad = atEndOfTurn(() => {
    throw new Error('no');
  });
  const good = atEndOfTurn(() => 'yes');
  await t.rejects(bad, { message: 'no' });
  t.equal(await good, 'yes');
  t.equal(await atEndOfTurn(() => 'again'), 'again');
});
