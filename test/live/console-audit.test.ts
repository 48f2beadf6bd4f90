import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { executeOp, nodeContext } from '../../src/server/cli/ops.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

// The audit log (docs/console-api.md): one entry per change an owner, an admin, the operator's CLI or an
// API key made, written with the change; read newest first, paged, filtered by action and by actor.
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true } });
const { app } = node;
const tenant = await createTenant(node, 'pro');
const PASSWORD = 'correct horse battery staple';
const ownerRow = await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'owner@school.example', role: 'owner', password: PASSWORD });
const bearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: 'owner@school.example', password: PASSWORD } })).body.data.sessionToken as string;
const org = `/orgs/${tenant.orgId}`;
const log = async (q = '') => {
  const res = await api(node, 'GET', `${org}/audit-log${q}`, { bearer });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body as { data: any[]; nextCursor: string | null };
};
const me = { type: 'admin', id: ownerRow.id, email: 'owner@school.example' };
// a local receiver address (allowed here by WEBHOOKS_ALLOW_PRIVATE_TARGETS); nothing needs to answer it
const HOOK = 'http://127.0.0.1:9/hooks/aula?token=s3cr3t-in-the-query';

t.test('webhook endpoint changes on the admin surface: created, updated, disabled, enabled, secret rotated, deleted', async (t) => {
  const made = await api(node, 'POST', `${org}/webhooks`, { bearer, body: { url: HOOK, events: ['meeting.started'] } });
  t.equal(made.status, 201, JSON.stringify(made.body));
  const id = made.body.data.id;
  const secret = made.body.data.secret as string;
  t.equal((await api(node, 'PATCH', `${org}/webhooks/${id}`, { bearer, body: { events: ['meeting.started', 'meeting.ended'], description: 'LMS' } })).status, 200);
  t.equal((await api(node, 'PATCH', `${org}/webhooks/${id}`, { bearer, body: { events: ['meeting.started', 'meeting.ended'] } })).status, 200, 'a PATCH that changes nothing');
  t.equal((await api(node, 'PATCH', `${org}/webhooks/${id}`, { bearer, body: { status: 'DISABLED' } })).status, 200);
  t.equal((await api(node, 'PATCH', `${org}/webhooks/${id}`, { bearer, body: { status: 'ACTIVE' } })).status, 200);
  const rotated = await api(node, 'POST', `${org}/webhooks/${id}/rotate-secret`, { bearer });
  t.equal(rotated.status, 200);
  t.equal((await api(node, 'DELETE', `${org}/webhooks/${id}`, { bearer })).status, 200);

  const entries = (await log('?action=webhook_endpoint.*')).data.filter((e) => e.target.id === id);
  t.same(
    entries.map((e) => e.action),
    ['webhook_endpoint.deleted', 'webhook_endpoint.secret_rotated', 'webhook_endpoint.enabled', 'webhook_endpoint.disabled', 'webhook_endpoint.updated', 'webhook_endpoint.created'],
    'newest first, one entry per change (none for the PATCH that changed nothing)',
  );
  for (const e of entries) t.match(e, { actor: me, target: { type: 'webhook_endpoint', id }, at: String, requestId: String });
  t.match(entries.at(-1).details, { host: '127.0.0.1:9', events: ['meeting.started'] });
  t.same(entries.at(-2).details.changed, ['description', 'events']);
  t.match(entries[1].details, { previousSecretExpiresAt: String });
  const text = JSON.stringify(entries);
  for (const s of [secret, rotated.body.data.secret, 's3cr3t', '/hooks/aula']) t.notOk(text.includes(s), `no ${s.slice(0, 8)}… in the log`);
});

t.test('a change on the API-key surface is recorded as that key', async (t) => {
  const made = await api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: HOOK } });
  t.equal(made.status, 201);
  const [e] = (await log(`?actor=${tenant.keyId}`)).data;
  t.match(e, { action: 'webhook_endpoint.created', actor: { type: 'api_key', id: tenant.keyId, email: null }, target: { id: made.body.data.id } });
  t.equal((await api(node, 'DELETE', `/public/webhooks/${made.body.data.id}`, { key: tenant.key })).status, 200);
});

t.test('organization settings: PATCH /orgs/:orgId is recorded with the fields it changed', async (t) => {
  t.equal((await api(node, 'PATCH', org, { bearer, body: { name: 'Renamed', allowedOrigins: ['https://lms.school.example'] } })).status, 200);
  const [e] = (await log('?action=organization.updated')).data;
  t.match(e, { actor: me, target: { type: 'organization', id: tenant.orgId }, details: { changed: ['name', 'allowedOrigins'] } });
  assertError(t, await api(node, 'PATCH', org, { bearer, body: { recordingRetentionDays: 0 } }), 400, 'validation_failed');
  t.equal((await log('?action=organization.updated')).data.length, 1, 'a refused change leaves no entry');
});

t.test('the operator\'s CLI: keys, admins and settings it changes are recorded as the operator', async (t) => {
  const ctx = nodeContext(app);
  const key = (await executeOp(ctx, 'keys.create', { orgId: tenant.orgId, name: 'cli key', scopes: ['users:read'] })) as { id: string; key: string };
  await executeOp(ctx, 'keys.revoke', { id: key.id });
  await executeOp(ctx, 'keys.revoke', { id: key.id });
  const added = (await executeOp(ctx, 'admins.add', { orgId: tenant.orgId, email: 'second@school.example', role: 'admin', password: PASSWORD })) as { id: string };
  await executeOp(ctx, 'admins.disable', { id: added.id });
  await executeOp(ctx, 'org.update', { id: tenant.orgId, name: 'By the operator' });
  const entries = (await log('?actor=operator')).data;
  t.same(entries.map((e) => e.action), ['organization.updated', 'admin.disabled', 'admin.added', 'api_key.revoked', 'api_key.created']);
  for (const e of entries) t.match(e, { actor: { type: 'operator', id: null, email: null } });
  t.match(entries[1], { target: { type: 'admin', id: added.id }, details: { email: 'second@school.example' } });
  t.notOk(JSON.stringify(entries).includes(key.key), 'no key in the log');
  t.notOk(JSON.stringify(entries).includes(PASSWORD), 'no password in the log');
});

t.test('GET /orgs/:orgId/audit-log pages with cursors and filters by action, family and actor', async (t) => {
  for (let i = 0; i < 5; i++) t.equal((await api(node, 'POST', `${org}/api-keys`, { bearer, body: { name: `page ${i}`, scopes: ['users:read'] } })).status, 201);
  const everything = (await log('?limit=100')).data;
  const seen: any[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: any[]; nextCursor: string | null } = await log(`?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
    t.ok(page.data.length <= 4);
    seen.push(...page.data);
    cursor = page.nextCursor;
  } while (cursor);
  t.same(seen.map((e) => e.id), everything.map((e) => e.id), 'the pages together are the whole log, in order');
  t.same(seen.map((e) => e.id), [...seen.map((e) => e.id)].sort().reverse(), 'newest first');

  const created = (await log('?action=api_key.created&limit=100')).data;
  t.ok(created.length >= 6 && created.every((e) => e.action === 'api_key.created'));
  const mine = (await log(`?action=api_key.created&actor=${ownerRow.id}&limit=100`)).data;
  t.equal(mine.length, 5, 'action and actor together');
  t.same(mine.map((e) => e.details.name), ['page 4', 'page 3', 'page 2', 'page 1', 'page 0']);
  const page1 = await log(`?action=api_key.*&actor=${ownerRow.id}&limit=2`);
  const page2 = await log(`?action=api_key.*&actor=${ownerRow.id}&limit=2&cursor=${page1.nextCursor}`);
  t.same([...page1.data, ...page2.data].map((e) => e.details.name), ['page 4', 'page 3', 'page 2', 'page 1'], 'a filter holds across pages');
  t.same((await log('?actor=adm_nobody')).data, []);
  for (const q of ['?action=api_key.deleted', '?action=*', '?action=api_key', '?limit=0', '?limit=101', '?cursor=x', '?since=1']) {
    assertError(t, await api(node, 'GET', `${org}/audit-log${q}`, { bearer }), 400, 'validation_failed');
  }
});

t.test('retention: the hourly maintenance deletes entries older than 400 days, and only those', async (t) => {
  const DAY = 24 * 60 * 60_000;
  // a session lasts hours, not a year: sign in again after the clock moves
  const session = async () => (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: 'owner@school.example', password: PASSWORD } })).body.data.sessionToken as string;
  const names = async () => (await app.sql<{ name: string | null }[]>`select details->>'name' as name from audit_log where org_id = ${tenant.orgId} order by id`).map((r) => r.name);
  t.equal((await api(node, 'POST', `${org}/api-keys`, { bearer, body: { name: 'kept a year', scopes: ['users:read'] } })).status, 201);
  const before = await names();
  const made = clock.now();
  await app.cluster.ask('maintenance:retention', { type: 'ENSURE' });
  clock.set(made + 399 * DAY);
  t.equal((await api(node, 'POST', `${org}/api-keys`, { bearer: await session(), body: { name: 'a year later', scopes: ['users:read'] } })).status, 201);
  await app.timers.tick();
  t.same(await names(), [...before, 'a year later'], 'nothing goes before 400 days');
  clock.set(made + 400 * DAY + 2 * 60 * 60_000);
  await app.timers.tick();
  t.same(await names(), ['a year later'], 'the entries older than 400 days are gone; the newer one stays');
  const read = await api(node, 'GET', `${org}/audit-log`, { bearer: await session() });
  t.same(read.body.data.map((e: any) => e.details.name), ['a year later'], 'and the console reads what is left');
});
