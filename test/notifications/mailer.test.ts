import t, { type Test } from 'tap';
import { iso, ManualClock } from '../../src/core/clock.ts';
import { MAIL_MAX_AGE_MS, MAIL_RETRY_DELAYS_MS, Mailer, type MailerOptions } from '../../src/services/notifications/mailer.ts';
import { notifyEndpointDisabled, notifyOrgAdmins } from '../../src/services/notifications/notify.ts';
import { addAdminRow, addOrg, captureLogger, openTestSql } from './fixtures/db.ts';
import { startSmtpSink } from './fixtures/smtp.ts';

const sql = await openTestSql(t);
const FROM = 'Aula <no-reply@aula.test>';

interface EmailRow {
  id: string;
  toAddress: string;
  attempts: number;
  nextAttemptAt: Date;
  claimedUntil: Date | null;
  sentAt: Date | null;
  failedAt: Date | null;
  lastError: string | null;
}

const emails = () => sql<EmailRow[]>`select * from email_outbox order by to_address, id`;
const email = async (id: string) => (await sql<EmailRow[]>`select * from email_outbox where id = ${id}`)[0]!;

function mailer(t: Test, clock: ManualClock, smtpUrl: string | undefined, opts: MailerOptions = {}, log = captureLogger().log): Mailer {
  const m = new Mailer(sql, clock, log, { AULA_SMTP_URL: smtpUrl, AULA_MAIL_FROM: FROM }, opts);
  t.teardown(() => m.stop());
  return m;
}

/** A port where nothing listens now: a sink's, after it stopped. */
async function deadPort(t: Test): Promise<number> {
  const sink = await startSmtpSink(t);
  await sink.stop();
  return sink.port;
}

/** An organization with these owners/admins, and one email each (notifyOrgAdmins). */
async function queue(clock: ManualClock, addresses: string[], title = 'Hello'): Promise<string[]> {
  const orgId = await addOrg(sql, clock, 'School');
  for (const a of addresses) await addAdminRow(sql, orgId, a, 'admin');
  const r = await notifyOrgAdmins(sql, { orgId, kind: 'test', title, body: `Body of ${title}.`, data: {}, at: clock.now() });
  return r.map((x) => x.emailId);
}

t.beforeEach(async () => {
  await sql`delete from email_outbox`;
  await sql`delete from notifications`;
});

t.test('sends each queued email once, to its owner or admin, with its subject and body', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t);
  const orgId = await addOrg(sql, clock, 'Riverside School');
  await addAdminRow(sql, orgId, 'owner@riverside.test', 'owner');
  await addAdminRow(sql, orgId, 'admin@riverside.test', 'admin');
  await addAdminRow(sql, orgId, 'disabled@riverside.test', 'admin', true);
  const url = 'https://hooks.riverside.test/aula';
  await notifyEndpointDisabled(sql, { orgId, endpointId: 'whe_1', url, reason: 'FAILING', failingSince: clock.now() - 3 * 86_400_000, at: clock.now() });

  const m = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  t.equal(await m.tick(), 2, 'two sent');
  const got = await sink.waitFor(2);
  t.same(got.map((g) => g.to).sort(), [['admin@riverside.test'], ['owner@riverside.test']], 'one message per recipient, no one else');
  const rows = await emails();
  for (const g of got) {
    t.equal(g.from, 'no-reply@aula.test', 'envelope sender from AULA_MAIL_FROM');
    t.equal(g.headers.from, 'Aula <no-reply@aula.test>');
    t.equal(g.subject, `Webhook endpoint disabled: ${url}`);
    t.match(g.text, /Aula disabled a webhook endpoint of Riverside School\./);
    t.match(g.text, /every delivery failed, since 2026-01-02 09:00 UTC/);
    t.match(g.text, /with the body \{"status":"ACTIVE"\}/);
    t.match(g.headers['content-type'], /^text\/plain; charset=utf-8/);
    t.equal(g.headers['auto-submitted'], 'auto-generated');
    const row = rows.find((r) => r.toAddress === g.to[0])!;
    t.equal(g.headers['message-id'], `<${row.id}@aula.test>`, 'the Message-ID is the email id: the same on a resend');
  }
  for (const r of rows) t.match(r, { attempts: 1, claimedUntil: null, failedAt: null, lastError: null, sentAt: new Date(clock.now()) });
  t.equal(await m.tick(), 0, 'nothing is sent twice');
  clock.advance(24 * 3_600_000);
  t.equal(await m.tick(), 0);
  t.equal(sink.messages.length, 2);
});

t.test('SMTP down: retried after 1 min, 5 min, 30 min on the injected clock, sent once the server is back', async (t) => {
  const clock = new ManualClock();
  const port = await deadPort(t);
  const [id] = await queue(clock, ['owner@down.test']);
  const { log, lines } = captureLogger();
  const m = mailer(t, clock, `smtp://127.0.0.1:${port}`, {}, log);

  t.equal(await m.tick(), 0, 'first attempt fails');
  let row = await email(id!);
  t.match(row, { attempts: 1, sentAt: null, failedAt: null, claimedUntil: null });
  t.match(row.lastError, /ECONNECTION|ECONNREFUSED/);
  t.equal(row.nextAttemptAt.getTime(), clock.now() + 60_000, 'next attempt in 1 minute');
  t.match(lines.at(-1), { level: 40, emailId: id, attempts: 1, nextAttemptAt: iso(clock.now() + 60_000), msg: 'email not sent; will retry' });
  t.notOk(JSON.stringify(lines).includes('owner@down.test'), 'addresses are not logged');

  for (const [i, delay] of MAIL_RETRY_DELAYS_MS.slice(0, 3).entries()) {
    clock.advance(delay - 1);
    t.equal(await m.tick(), 0);
    t.equal((await email(id!)).attempts, i + 1, `not due 1 ms before the ${delay / 60_000} min delay`);
    clock.advance(1);
    t.equal(await m.tick(), 0);
    row = await email(id!);
    t.equal(row.attempts, i + 2, `attempt ${i + 2} when due`);
    t.equal(row.nextAttemptAt.getTime(), clock.now() + MAIL_RETRY_DELAYS_MS[i + 1]!);
  }

  const sink = await startSmtpSink(t, { port });
  t.equal(sink.port, port, 'the server is back on its port');
  clock.advance(MAIL_RETRY_DELAYS_MS[3]! - 1);
  t.equal(await m.tick(), 0, 'still waits for the 2 h delay');
  clock.advance(1);
  t.equal(await m.tick(), 1, 'sent on the 5th attempt');
  await sink.waitFor(1);
  t.same(sink.messages[0]!.to, ['owner@down.test']);
  row = await email(id!);
  t.match(row, { attempts: 5, failedAt: null, claimedUntil: null });
  t.equal(row.sentAt?.getTime(), clock.now());
});

t.test('after the 6th failed attempt (about 8.6 hours) the email is marked failed and left alone', async (t) => {
  const clock = new ManualClock();
  const port = await deadPort(t);
  const [id] = await queue(clock, ['owner@never.test']);
  const m = mailer(t, clock, `smtp://127.0.0.1:${port}`);
  t.equal(await m.tick(), 0);
  for (const delay of MAIL_RETRY_DELAYS_MS) {
    clock.advance(delay);
    t.equal(await m.tick(), 0);
  }
  const row = await email(id!);
  t.equal(row.attempts, 6);
  t.equal(row.failedAt?.getTime(), clock.now());
  t.match(row.lastError, /ECONNECTION|ECONNREFUSED/);
  t.equal(row.sentAt, null);
  const sink = await startSmtpSink(t, { port });
  clock.advance(7 * 86_400_000);
  t.equal(await m.tick(), 0, 'a failed email is not tried again');
  t.equal((await email(id!)).attempts, 6);
  t.equal(sink.messages.length, 0);
});

t.test('a recipient refused for good (550) fails at once; the others are sent', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t, { reject: ['bounce@reject.test'] });
  await queue(clock, ['bounce@reject.test', 'fine@reject.test']);
  const m = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  t.equal(await m.tick(), 1);
  const [bounce, fine] = await emails();
  t.match(bounce, { toAddress: 'bounce@reject.test', attempts: 1, sentAt: null, failedAt: new Date(clock.now()) });
  t.match(bounce!.lastError, /EENVELOPE RCPT TO 550/);
  t.match(fine, { toAddress: 'fine@reject.test', sentAt: new Date(clock.now()) });
  await sink.waitFor(1);
  t.same(sink.messages.map((x) => x.to), [['fine@reject.test']]);
});

t.test('credentials in AULA_SMTP_URL log in; wrong ones are retried, not dropped', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t, { auth: 'aula:s3cret pass' });
  const [id] = await queue(clock, ['owner@auth.test']);
  const { log, lines } = captureLogger();
  const wrong = mailer(t, clock, `smtp://aula:nope@127.0.0.1:${sink.port}`, {}, log);
  t.equal(await wrong.tick(), 0);
  const row = await email(id!);
  t.match(row, { attempts: 1, failedAt: null, sentAt: null });
  t.match(row.lastError, /EAUTH/);
  t.notOk(JSON.stringify(lines).includes('nope'), 'the password is never logged');

  const right = mailer(t, clock, `smtp://aula:s3cret%20pass@127.0.0.1:${sink.port}`);
  clock.advance(60_000);
  t.equal(await right.tick(), 1);
  await sink.waitFor(1);
  t.equal(sink.messages[0]!.user, 'aula');
});

t.test('two Mailers ticking at once send every email exactly once', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t);
  const addresses = Array.from({ length: 24 }, (_, i) => `admin${String(i).padStart(2, '0')}@busy.test`);
  const ids = await queue(clock, addresses);
  const url = `smtp://127.0.0.1:${sink.port}`;
  const a = mailer(t, clock, url, { batchSize: 3 });
  const b = mailer(t, clock, url, { batchSize: 3 });
  const [sentA, sentB] = await Promise.all([a.tick(), b.tick()]);
  t.equal(sentA + sentB, 24, `${sentA} + ${sentB}`);
  t.ok(sentA > 0 && sentB > 0, 'both took part');
  await sink.waitFor(24);
  // Give a duplicate, if there were one, the time to arrive.
  await new Promise((r) => setTimeout(r, 200));
  t.equal(sink.messages.length, 24, 'no duplicates');
  t.same(sink.messages.map((x) => x.to[0]).sort(), addresses);
  t.same(new Set(sink.messages.map((x) => x.headers['message-id'])).size, 24);
  const rows = await emails();
  t.same(rows.map((r) => r.id).sort(), [...ids].sort());
  t.ok(rows.every((r) => r.attempts === 1 && r.sentAt !== null), 'each row claimed once');
});

t.test('a claimed email belongs to its node until the lease runs out, then another sends it', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t);
  const [id] = await queue(clock, ['owner@lease.test']);
  // A node claimed it and died before sending.
  await sql`update email_outbox set claimed_until = ${iso(clock.now() + 5 * 60_000)}, attempts = 1 where id = ${id!}`;
  const m = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  t.equal(await m.tick(), 0, 'not while the lease holds');
  clock.advance(5 * 60_000 - 1);
  t.equal(await m.tick(), 0);
  clock.advance(1);
  t.equal(await m.tick(), 1, 'sent once the lease ran out');
  await sink.waitFor(1);
  t.match(await email(id!), { attempts: 2, sentAt: new Date(clock.now()) });
});

t.test('without AULA_SMTP_URL: emails stay queued, a warning once, and a configured Mailer sends them later', async (t) => {
  const clock = new ManualClock();
  const ids = await queue(clock, ['a@later.test', 'b@later.test']);
  const { log, lines } = captureLogger();
  const off = mailer(t, clock, undefined, {}, log);
  t.equal(off.enabled, false);
  off.start(10);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(await off.tick(), 0);
  const warnings = lines.filter((l) => l.level === 40);
  t.equal(warnings.length, 1, 'one warning');
  t.match(warnings[0]!.msg, /AULA_SMTP_URL is unset: emails .* stay queued/);
  await off.stop();
  for (const id of ids) t.match(await email(id), { attempts: 0, sentAt: null, failedAt: null, claimedUntil: null });

  const sink = await startSmtpSink(t);
  clock.advance(3 * 86_400_000);
  const on = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  t.equal(on.enabled, true);
  t.equal(await on.tick(), 2, 'nothing was lost');
  await sink.waitFor(2);
});

t.test('an email not sent within 7 days is dropped as stale rather than sent late', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t);
  const [id] = await queue(clock, ['owner@stale.test']);
  clock.advance(MAIL_MAX_AGE_MS + 1);
  const m = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  t.equal(await m.tick(), 0);
  const row = await email(id!);
  t.equal(row.failedAt?.getTime(), clock.now());
  t.match(row.lastError, /^expired/);
  t.equal(sink.messages.length, 0);
});

t.test('start() polls on its own; stop() waits for it', async (t) => {
  const clock = new ManualClock();
  const sink = await startSmtpSink(t);
  await queue(clock, ['owner@poll.test']);
  const m = mailer(t, clock, `smtp://127.0.0.1:${sink.port}`);
  m.start(20);
  await sink.waitFor(1);
  await m.stop();
  t.equal(await m.tick(), 0, 'a stopped Mailer sends nothing');
  t.ok((await emails())[0]!.sentAt);
});
