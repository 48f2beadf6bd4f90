import t from 'tap';
import { iso, ManualClock } from '../../src/core/clock.ts';
import { notifyEndpointDisabled, notifyOrgAdmins } from '../../src/services/notifications/notify.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { startSmtpSink } from './fixtures/smtp.ts';

// The node's clock starts at the real time (rate-limit windows run on the real clock).
const clock = new ManualClock(Date.now());
const sink = await startSmtpSink(t, { auth: 'aula:mail-password' });
const node = await startTestNode(t, {
  clock,
  overrides: { AULA_SMTP_URL: `smtp://aula:mail-password@127.0.0.1:${sink.port}`, AULA_MAIL_FROM: 'Aula <no-reply@aula.test>' },
});
const { app } = node;
const tenant = await createTenant(node);
const other = await createTenant(node);
const PASSWORD = 'correct horse battery staple';

await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'owner@school.test', role: 'owner', password: PASSWORD });
await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'admin@school.test', role: 'admin', password: PASSWORD });
await app.services.admins.create(app.sql, { orgId: other.orgId, email: 'owner@other.test', role: 'owner', password: PASSWORD });

async function signIn(orgId: string, email: string): Promise<{ sessionToken: string; csrfToken: string }> {
  const res = await api(node, 'POST', '/auth/sign-in', { body: { orgId, email, password: PASSWORD } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(res.body)}`);
  return res.body.data;
}
const ownerSession = await signIn(tenant.orgId, 'owner@school.test');
const adminSession = await signIn(tenant.orgId, 'admin@school.test');
const otherSession = await signIn(other.orgId, 'owner@other.test');

const base = `/orgs/${tenant.orgId}/notifications`;
const t0 = clock.now();
await notifyEndpointDisabled(app.sql, { orgId: tenant.orgId, endpointId: 'whe_first', url: 'https://a.school.test/h', reason: 'FAILING', failingSince: t0 - 3 * 86_400_000, at: t0 });
await notifyEndpointDisabled(app.sql, { orgId: tenant.orgId, endpointId: 'whe_second', url: 'https://b.school.test/h', reason: 'GONE', failingSince: null, at: t0 + 1000 });
await notifyOrgAdmins(app.sql, { orgId: tenant.orgId, kind: 'test.notice', title: 'Third', body: 'The newest.', data: { x: 1 }, at: t0 + 2000 });
await notifyOrgAdmins(app.sql, { orgId: other.orgId, kind: 'test.notice', title: 'Other org', body: 'Not yours.', data: {}, at: t0 });

t.test('lists the signed-in admin\'s own notifications, newest first, page by page', async (t) => {
  const res = await api(node, 'GET', base, { bearer: ownerSession.sessionToken });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.nextCursor, null);
  const list = res.body.data;
  t.same(list.map((n: any) => n.title), ['Third', 'Webhook endpoint disabled: https://b.school.test/h', 'Webhook endpoint disabled: https://a.school.test/h']);
  t.same(list[2], {
    id: list[2].id,
    kind: 'webhook.endpoint_disabled',
    title: 'Webhook endpoint disabled: https://a.school.test/h',
    body: list[2].body,
    data: { endpointId: 'whe_first', url: 'https://a.school.test/h', reason: 'FAILING', failingSince: iso(t0 - 3 * 86_400_000), disabledAt: iso(t0) },
    createdAt: iso(t0),
    readAt: null,
  });
  t.match(list[2].id, /^ntf_/);
  t.match(list[1].data, { reason: 'GONE', failingSince: null });

  const mine = new Set(list.map((n: any) => n.id));
  const theirs = await api(node, 'GET', base, { bearer: adminSession.sessionToken });
  t.equal(theirs.body.data.length, 3, 'the admin has notifications of their own');
  t.notOk(theirs.body.data.some((n: any) => mine.has(n.id)), 'and none of the owner\'s');

  const p1 = await api(node, 'GET', `${base}?limit=2`, { bearer: ownerSession.sessionToken });
  t.same(p1.body.data.map((n: any) => n.id), list.slice(0, 2).map((n: any) => n.id));
  t.type(p1.body.nextCursor, 'string');
  const p2 = await api(node, 'GET', `${base}?limit=2&cursor=${p1.body.nextCursor}`, { bearer: ownerSession.sessionToken });
  t.same(p2.body.data.map((n: any) => n.id), [list[2].id]);
  t.equal(p2.body.nextCursor, null);

  assertError(t, await api(node, 'GET', `${base}?cursor=nonsense`, { bearer: ownerSession.sessionToken }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', `${base}?unread=yes`, { bearer: ownerSession.sessionToken }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', `${base}?limit=101`, { bearer: ownerSession.sessionToken }), 400, 'validation_failed');
});

t.test('marking read: once, kept on repeat; unread=true leaves it out; only the owner of a notification may', async (t) => {
  const list = (await api(node, 'GET', base, { bearer: ownerSession.sessionToken })).body.data;
  const target = list[1];
  clock.advance(60_000);
  const readAt = iso(clock.now());
  const res = await api(node, 'POST', `${base}/${target.id}/read`, { bearer: ownerSession.sessionToken });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(res.body.data, { ...target, readAt });

  clock.advance(60_000);
  const again = await api(node, 'POST', `${base}/${target.id}/read`, { bearer: ownerSession.sessionToken });
  t.equal(again.body.data.readAt, readAt, 'the first read time stays');

  const unread = await api(node, 'GET', `${base}?unread=true`, { bearer: ownerSession.sessionToken });
  t.same(unread.body.data.map((n: any) => n.id), [list[0].id, list[2].id]);
  const all = await api(node, 'GET', `${base}?unread=false`, { bearer: ownerSession.sessionToken });
  t.equal(all.body.data.length, 3, 'unread=false lists all');

  const d = assertError(t, await api(node, 'POST', `${base}/${list[0].id}/read`, { bearer: adminSession.sessionToken }), 404, 'not_found');
  t.same(d, { id: list[0].id }, 'another admin\'s notification is not found');
  assertError(t, await api(node, 'POST', `${base}/ntf_00000000000000000000000000/read`, { bearer: ownerSession.sessionToken }), 404, 'not_found');
  t.equal((await api(node, 'GET', `${base}?unread=true`, { bearer: ownerSession.sessionToken })).body.data.length, 2, 'unchanged by the refusals');
});

t.test('another organization\'s admin, no session, and a cookie without CSRF are refused', async (t) => {
  const list = (await api(node, 'GET', base, { bearer: ownerSession.sessionToken })).body.data;
  assertError(t, await api(node, 'GET', base, { bearer: otherSession.sessionToken }), 403, 'org_mismatch');
  assertError(t, await api(node, 'POST', `${base}/${list[0].id}/read`, { bearer: otherSession.sessionToken }), 403, 'org_mismatch');
  const own = await api(node, 'GET', `/orgs/${other.orgId}/notifications`, { bearer: otherSession.sessionToken });
  t.same(own.body.data.map((n: any) => n.title), ['Other org'], 'they see only their own organization\'s');

  assertError(t, await api(node, 'GET', base), 401, 'admin_session_missing');
  assertError(t, await api(node, 'GET', base, { key: tenant.key }), 401, 'auth_malformed');
  const cookie = { cookie: `aula_session=${ownerSession.sessionToken}` };
  t.equal((await api(node, 'GET', base, { headers: cookie })).status, 200, 'the cookie works for reading');
  assertError(t, await api(node, 'POST', `${base}/${list[0].id}/read`, { headers: cookie }), 403, 'csrf_failed');
  const ok = await api(node, 'POST', `${base}/${list[0].id}/read`, { headers: { ...cookie, 'x-csrf-token': ownerSession.csrfToken } });
  t.equal(ok.status, 200);
});

t.test('the node\'s own Mailer sends the emails through AULA_SMTP_URL, with its credentials', async (t) => {
  t.equal(app.mailer.enabled, true);
  // The node also polls on its own; either way each email goes out once.
  await app.mailer.tick();
  const got = await sink.waitFor(7);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(sink.messages.length, 7, '3 notices × 2 nodes, and 1 in the other organization');
  t.ok(got.every((m) => m.user === 'aula' && m.from === 'no-reply@aula.test'));
  t.same(
    got.filter((m) => m.to[0] === 'owner@school.test').map((m) => m.subject).sort(),
    ['Third', 'Webhook endpoint disabled: https://a.school.test/h', 'Webhook endpoint disabled: https://b.school.test/h'],
  );
  t.equal(got.filter((m) => m.to[0] === 'admin@school.test').length, 3);
});
