import fc from 'fast-check';
import t from 'tap';
import { csv, wantsCsv } from '../../http/csv.ts';
import { DEFAULT_ATTENDANCE_RULES, reconcile, type Stay } from '../../src/services/attendance.ts';

// The reconciliation rules of docs/attendance.md, as a pure function, and the CSV writer the reports use.
const MIN = 60_000;
const S = { startedAt: 0, endAt: 60 * MIN, lateAt: 10 * MIN };
const rules = DEFAULT_ATTENDANCE_RULES;

t.test('the documented examples', async (t) => {
  t.same(reconcile(S, rules, []), { status: 'ABSENT', durationSeconds: 0, intervals: [] }, 'never came');
  t.same(reconcile(S, rules, [{ joinedAt: 0, leftAt: null }]), { status: 'PRESENT', durationSeconds: 3600, intervals: [{ joinedAt: 0, leftAt: 60 * MIN }] }, 'still in: counted to the end');
  t.equal(reconcile(S, rules, [{ joinedAt: 10 * MIN, leftAt: null }]).status, 'PRESENT', 'exactly at the lateness limit is on time');
  t.equal(reconcile(S, rules, [{ joinedAt: 10 * MIN + 1, leftAt: null }]).status, 'LATE');
  t.equal(reconcile(S, rules, [{ joinedAt: 35 * MIN, leftAt: null }]).status, 'ABSENT', 'twenty-five minutes of sixty is below half');
  t.equal(reconcile(S, rules, [{ joinedAt: 30 * MIN, leftAt: null }]).status, 'LATE', 'exactly half counts');
  t.same(
    reconcile(S, rules, [{ joinedAt: 0, leftAt: 20 * MIN }, { joinedAt: 22 * MIN, leftAt: 60 * MIN }]).intervals,
    [{ joinedAt: 0, leftAt: 60 * MIN }],
    'a two-minute gap is merged and counted',
  );
  t.same(
    reconcile(S, rules, [{ joinedAt: 0, leftAt: 20 * MIN }, { joinedAt: 22 * MIN + 1, leftAt: 60 * MIN }]).durationSeconds,
    Math.round((60 * MIN - 2 * MIN - 1) / 1000),
    'a longer gap is not',
  );
  t.same(reconcile(S, rules, [{ joinedAt: -5 * MIN, leftAt: 70 * MIN }]).intervals, [{ joinedAt: 0, leftAt: 60 * MIN }], 'clipped to the session');
  t.same(reconcile({ startedAt: 0, endAt: 0, lateAt: 0 }, rules, [{ joinedAt: 0, leftAt: 0 }]).status, 'PRESENT', 'a session of no length: whoever came is present');
  t.equal(reconcile(S, { ...rules, presentShare: 0 }, [{ joinedAt: 59 * MIN, leftAt: null }]).status, 'LATE', 'a share of 0: coming is enough');
});

const stay = fc.record({ joinedAt: fc.integer({ min: -10 * MIN, max: 70 * MIN }), len: fc.option(fc.integer({ min: 0, max: 80 * MIN })) }).map(
  ({ joinedAt, len }): Stay => ({ joinedAt, leftAt: len === null ? null : joinedAt + len }),
);

t.test('properties: sorted disjoint intervals inside the session, gaps wider than the merge gap, duration their sum', async (t) => {
  fc.assert(
    fc.property(fc.array(stay, { maxLength: 12 }), fc.integer({ min: 0, max: 600 }), (stays, gap) => {
      const r = reconcile(S, { ...rules, mergeGapSeconds: gap }, stays);
      let sum = 0;
      r.intervals.forEach((i, k) => {
        if (i.joinedAt < S.startedAt || i.leftAt > S.endAt || i.leftAt < i.joinedAt) throw new Error(`outside: ${JSON.stringify(i)}`);
        if (k > 0 && i.joinedAt - r.intervals[k - 1]!.leftAt <= gap * 1000) throw new Error('gap not merged');
        sum += i.leftAt - i.joinedAt;
      });
      if (r.durationSeconds !== Math.round(sum / 1000)) throw new Error('duration is not the sum');
      if (r.durationSeconds > 3600) throw new Error('more than the session');
      // the order of the stays does not matter
      const again = reconcile(S, { ...rules, mergeGapSeconds: gap }, [...stays].reverse());
      if (JSON.stringify(again) !== JSON.stringify(r)) throw new Error('order-dependent');
    }),
    { numRuns: 2000 },
  );
  t.pass('held for 2,000 random sets of stays');
});

t.test('CSV: every text field quoted, empty nulls, CRLF, and names that would run as spreadsheet formulas', async (t) => {
  t.equal(csv(['a', 'b'], [['x', 1], [null, 'say "hi", then go']]), 'a,b\r\n"x",1\r\n,"say ""hi"", then go"\r\n');
  t.equal(csv(['name'], [['=HYPERLINK("x")'], ['+1'], ['-2'], ['@me'], ['\tx'], ['plain']]), `name\r\n"'=HYPERLINK(""x"")"\r\n"'+1"\r\n"'-2"\r\n"'@me"\r\n"'\tx"\r\n"plain"\r\n`);
  t.equal(csv(['n'], [[-3]]), 'n\r\n-3\r\n', 'numbers are not text');
  // A spreadsheet whose list separator is ';' splits an unquoted field there, and the second cell would be a formula.
  const hostile = csv(['name', 'role'], [["Bob;=cmd|' /C calc'!A0", 'STUDENT']]);
  t.equal(hostile, `name,role\r\n"Bob;=cmd|' /C calc'!A0","STUDENT"\r\n`);
  for (const sep of [',', ';', '\t']) {
    const cells = splitCsvLine(hostile.split('\r\n')[1]!, sep);
    t.notOk(cells.some((cell) => /^[=+\-@]/.test(cell)), `no cell starts a formula when a spreadsheet splits on ${JSON.stringify(sep)}`);
  }
  t.ok(wantsCsv('text/csv'));
  t.ok(wantsCsv('application/json;q=0.5, text/csv'));
  t.ok(wantsCsv('TEXT/CSV; charset=utf-8'));
  t.notOk(wantsCsv('application/json'));
  t.notOk(wantsCsv('text/csvx'));
  t.notOk(wantsCsv(undefined));
});

/** How a spreadsheet reads one CSV line with `sep` as its list separator: quoted fields keep their separators. */
function splitCsvLine(line: string, sep: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') (cell += '"'), i++;
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === sep) cells.push(cell), (cell = '');
    else cell += ch;
  }
  cells.push(cell);
  return cells;
}
