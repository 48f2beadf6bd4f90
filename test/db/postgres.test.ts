// postgres.js as patched (patches/postgres+3.4.9.patch): a pooled connection whose session the server
// ended while the process could not run (SIGSTOP, a long GC pause, a stalled VM; here the event loop is
// blocked) must come back clean. The fenced commit (src/platform/cluster/fencing.ts) makes Postgres end exactly
// such sessions: idle_in_transaction_session_timeout.
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { within } from '../../src/platform/cluster/deadline.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { createTestDatabase } from '../helpers/node.ts';

const url = await createTestDatabase(t);

/** Blocks the event loop, as a stopped process does: nothing is read, written or run meanwhile. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** One connection, so the next queries have to use the one whose session was ended. */
function pool(t: Test): Sql {
  const sql = postgres(url, { ...pgOptions, max: 1 }) as unknown as Sql;
  t.teardown(() => sql.end({ timeout: 1 }));
  return sql;
}

t.test('a query buffered when the server ended the idle transaction: the transaction fails, and the connection answers every later query with its own result', async (t) => {
  const sql = pool(t);
  const failed = sql.begin(async (tx) => {
    await tx`select set_config('idle_in_transaction_session_timeout', '100', true)`;
    const next = tx`select 2 as n`;
    void next.execute(); // in postgres.js's write buffer, not yet on the wire
    freeze(600); // the server ends the session meanwhile (FATAL 25P03, then it closes the socket)
    await next;
  });
  await t.rejects(within(failed, 5000, 'the transaction'), 'the transaction is refused, not left hanging');
  const outcome = (p: Promise<{ n: number }[]>) => within(p, 3000, 'query').then((rows) => rows.map((r) => r.n), (err: Error & { code?: string }) => err.code ?? err.message);
  for (let i = 0; i < 5; i++) t.same(await outcome(sql`select ${i}::int as n`), [i], `query ${i} answers with its own result`);
  const inTx = await within(
    sql.begin((tx) => Promise.all([outcome(tx`select 7::int as n`), outcome(tx`select 8::int as n`)])),
    5000,
    'a transaction',
  ).catch((err: Error & { code?: string }) => err.code ?? err.message);
  t.same(inTx, [[7], [8]], 'a transaction on the same connection too');
});

t.test('a query of a transaction whose session ended is refused; it never runs on the connection\'s next session', async (t) => {
  const sql = pool(t);
  await sql`create table marks (n int)`;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let late: Promise<unknown> | undefined;
  const failed = sql.begin(async (tx) => {
    await tx`select set_config('idle_in_transaction_session_timeout', '100', true)`;
    freeze(600); // nothing in flight this time: the server ends the session, the client learns it on resume
    await gate;
    late = tx`insert into marks values (1)`;
    await late;
  });
  await t.rejects(within(failed, 5000, 'the transaction'), 'the transaction is refused');
  // the pool reconnects the connection for someone else before the transaction's code goes on
  t.same(await within(sql`select 1 as one`, 5000, 'the next query'), [{ one: 1 }]);
  open();
  await new Promise((r) => setTimeout(r, 50));
  await t.rejects(within(late!, 5000, 'the late insert'), { code: 'CONNECTION_CLOSED' }, 'the late insert is refused');
  t.same(await sql`select n from marks`, [], 'and it did not run outside its transaction');
});
