import t from 'tap';
import { iso, ManualClock } from '../../src/core/clock.ts';
import { transaction } from '../../src/platform/db/tx.ts';
import { notifyEndpointDisabled, notifyOrgAdmins } from '../../src/services/notifications/notify.ts';
import { addAdminRow, addOrg, openTestSql } from './fixtures/db.ts';

const clock = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
const sql = await openTestSql(t);

interface NotificationRow {
  id: string;
  orgId: string;
  adminId: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: Date;
  readAt: Date | null;
}
interface EmailRow {
  id: string;
  orgId: string;
  toAddress: string;
  subject: string;
  textBody: string;
  createdAt: Date;
  nextAttemptAt: Date;
  attempts: number;
  sentAt: Date | null;
}

t.test('notifyOrgAdmins: one notification and one email per active owner and admin of that organization', async (t) => {
  const orgId = await addOrg(sql, clock, 'Riverside School');
  const other = await addOrg(sql, clock, 'Other School');
  const owner = await addAdminRow(sql, orgId, 'owner@riverside.test', 'owner');
  const admin = await addAdminRow(sql, orgId, 'admin@riverside.test', 'admin');
  await addAdminRow(sql, orgId, 'gone@riverside.test', 'admin', true);
  await addAdminRow(sql, other, 'owner@other.test', 'owner');

  const at = clock.now() + 1234;
  const recipients = await transaction(sql, (tx) =>
    notifyOrgAdmins(tx, { orgId, kind: 'test.kind', title: 'A title', body: 'A body.', data: { n: 1, nested: { keyId: 'x' } }, at }),
  );
  t.same(recipients.map((r) => r.adminId).sort(), [owner, admin].sort(), 'the disabled admin and the other organization are left out');

  const notifications = await sql<NotificationRow[]>`select * from notifications order by admin_id`;
  t.equal(notifications.length, 2);
  for (const n of notifications) {
    t.equal(n.orgId, orgId);
    t.match(n.id, /^ntf_[0-9a-z]{26}$/);
    t.match(n, { kind: 'test.kind', title: 'A title', body: 'A body.', readAt: null });
    t.same(n.data, { n: 1, nested: { keyId: 'x' } }, 'data is kept as given (keys not camel-cased)');
    t.equal(n.createdAt.getTime(), at, 'time is `at`, not now()');
  }
  const emails = await sql<EmailRow[]>`select * from email_outbox order by to_address`;
  t.same(
    emails.map((e) => e.toAddress),
    ['admin@riverside.test', 'owner@riverside.test'],
  );
  for (const e of emails) {
    t.match(e.id, /^eml_[0-9a-z]{26}$/);
    t.match(e, { orgId, subject: 'A title', textBody: 'A body.', attempts: 0, sentAt: null });
    t.equal(e.createdAt.getTime(), at);
    t.equal(e.nextAttemptAt.getTime(), at, 'due at once');
  }
  t.same(
    recipients.map((r) => [r.notificationId, r.emailId]).sort(),
    recipients.map((r) => [notifications.find((n) => n.adminId === r.adminId)!.id, emails.find((e) => e.toAddress === r.email)!.id]).sort(),
  );

  // An organization without an active owner or admin: nothing, and no failure.
  const empty = await addOrg(sql, clock, 'Empty');
  t.same(await notifyOrgAdmins(sql, { orgId: empty, kind: 'k', title: 't', body: 'b', data: {}, at }), []);
  await sql`delete from notifications`;
  await sql`delete from email_outbox`;
});

t.test('written in the caller\'s transaction: a rollback leaves neither notification nor email', async (t) => {
  const orgId = await addOrg(sql, clock, 'Rollback School');
  await addAdminRow(sql, orgId, 'owner@rollback.test', 'owner');
  await t.rejects(
    transaction(sql, async (tx) => {
      await notifyOrgAdmins(tx, { orgId, kind: 'k', title: 't', body: 'b', data: {}, at: clock.now() });
      throw new Error('the caller fails after notifying');
    }),
    /the caller fails/,
  );
  t.equal((await sql`select 1 from notifications where org_id = ${orgId}`).length, 0);
  t.equal((await sql`select 1 from email_outbox where org_id = ${orgId}`).length, 0);
});

t.test('notifyEndpointDisabled (FAILING): title, data, and an email that says why, since when, and how to recover', async (t) => {
  const orgId = await addOrg(sql, clock, 'Hillside Academy');
  const owner = await addAdminRow(sql, orgId, 'owner@hillside.test', 'owner');
  const failingSince = Date.parse('2026-01-02T08:30:00Z');
  const at = Date.parse('2026-01-05T08:31:00Z');
  const url = 'https://hooks.hillside.test/aula';
  const r = await transaction(sql, (tx) =>
    notifyEndpointDisabled(tx, { orgId, endpointId: 'whe_01kexample0000000000000000', url, reason: 'FAILING', failingSince, at, baseUrl: 'https://aula.example.com/' }),
  );
  t.equal(r.length, 1);
  const [n] = await sql<NotificationRow[]>`select * from notifications where admin_id = ${owner}`;
  t.equal(n!.kind, 'webhook.endpoint_disabled');
  t.equal(n!.title, `Webhook endpoint disabled: ${url}`);
  t.same(n!.data, { endpointId: 'whe_01kexample0000000000000000', url, reason: 'FAILING', failingSince: iso(failingSince), disabledAt: iso(at) });
  t.match(n!.body, /has failed since 2026-01-02 08:30 UTC \(3 days\)/);
  t.match(n!.body, /status to ACTIVE/);
  t.match(n!.body, /redeliver/);

  const [e] = await sql<EmailRow[]>`select * from email_outbox where org_id = ${orgId}`;
  t.equal(e!.toAddress, 'owner@hillside.test');
  t.equal(e!.subject, `Webhook endpoint disabled: ${url}`);
  const text = e!.textBody;
  t.match(text, /Aula disabled a webhook endpoint of Hillside Academy\./);
  t.match(text, /Disabled at: +2026-01-05 08:31 UTC/);
  t.match(text, /every delivery failed, since 2026-01-02 08:30 UTC/);
  t.match(text, `PATCH https://aula.example.com/api/v1/orgs/${orgId}/webhooks/whe_01kexample0000000000000000  with the body {"status":"ACTIVE"}`);
  t.match(text, `GET https://aula.example.com/api/v1/orgs/${orgId}/webhooks/whe_01kexample0000000000000000/deliveries`);
  t.match(text, `POST https://aula.example.com/api/v1/orgs/${orgId}/webhooks/deliveries/<deliveryId>/redeliver`);
  t.match(text, /as an owner or admin of Hillside Academy/);
});

t.test('notifyEndpointDisabled (GONE): the 410 is the reason; relative addresses without a base URL', async (t) => {
  const orgId = await addOrg(sql, clock, 'Gone School');
  await addAdminRow(sql, orgId, 'admin@gone.test', 'admin');
  await notifyEndpointDisabled(sql, { orgId, endpointId: 'whe_x', url: 'https://gone.test/h', reason: 'GONE', failingSince: null, at: clock.now() });
  const [n] = await sql<NotificationRow[]>`select * from notifications where org_id = ${orgId}`;
  t.match(n!.body, /answered 410 Gone/);
  t.same(n!.data, { endpointId: 'whe_x', url: 'https://gone.test/h', reason: 'GONE', failingSince: null, disabledAt: iso(clock.now()) });
  const [e] = await sql<EmailRow[]>`select * from email_outbox where org_id = ${orgId}`;
  t.match(e!.textBody, /Reason: +the receiver answered 410 Gone/);
  t.match(e!.textBody, `PATCH /api/v1/orgs/${orgId}/webhooks/whe_x `);
});

t.test('a subject is one line of at most 200 characters', async (t) => {
  const orgId = await addOrg(sql, clock, 'Long');
  await addAdminRow(sql, orgId, 'owner@long.test', 'owner');
  await notifyOrgAdmins(sql, { orgId, kind: 'k', title: `line one\r\nBcc: someone@evil.test ${'x'.repeat(300)}`, body: 'b', data: {}, at: clock.now() });
  const [e] = await sql<EmailRow[]>`select * from email_outbox where org_id = ${orgId}`;
  t.notMatch(e!.subject, /[\r\n]/);
  t.equal(e!.subject.length, 200);
  t.ok(e!.subject.endsWith('…'));
});
