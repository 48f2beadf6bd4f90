import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';

const node = await startTestNode(t);
const tenant = await createTenant(node);
const sql = node.app.sql;
const events = (type: string) =>
  sql<{ type: string; data: any }[]>`select type, data from outbox where org_id = ${tenant.orgId} and type = ${type} order by id`;

t.test('POST /public/users creates, then upserts by externalId', async (t) => {
  const created = await api(node, 'POST', '/public/users', {
    key: tenant.key,
    body: { externalId: 'stu-1', fullName: 'Zoë Ålvarez', email: 'zoe@example.edu', role: 'STUDENT' },
  });
  t.equal(created.status, 201);
  const u = created.body.data;
  t.match(u, { externalId: 'stu-1', fullName: 'Zoë Ålvarez', email: 'zoe@example.edu', role: 'STUDENT', status: 'ACTIVE', avatarUrl: null, deactivatedAt: null });
  t.match(u.id, /^usr_[0-9a-z]{26}$/);

  const same = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'stu-1', fullName: 'Zoë Ålvarez', role: 'STUDENT' } });
  t.equal(same.status, 200, 'same externalId updates');
  t.equal(same.body.data.id, u.id);
  t.equal(same.body.data.email, 'zoe@example.edu', 'omitted optional fields keep their value');
  t.equal((await events('user.updated')).length, 0, 'no user.updated when nothing changed');

  const changed = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'stu-1', fullName: 'Zoe Alvarez', email: null, role: 'TEACHER' } });
  t.equal(changed.status, 200);
  t.match(changed.body.data, { id: u.id, fullName: 'Zoe Alvarez', email: null, role: 'TEACHER' });

  const [c] = await events('user.created');
  t.same(Object.keys(c!.data).sort(), ['avatarUrl', 'createdAt', 'deactivatedAt', 'email', 'externalId', 'name', 'role', 'status', 'updatedAt', 'userId']);
  t.match(c!.data, { userId: u.id, externalId: 'stu-1', name: 'Zoë Ålvarez', email: 'zoe@example.edu', role: 'STUDENT', status: 'ACTIVE' });
  const [up] = await events('user.updated');
  t.match(up!.data, { userId: u.id, name: 'Zoe Alvarez', email: null, role: 'TEACHER' });
});

t.test('GET /public/users/:id by service id or externalId, and the listing', async (t) => {
  for (let i = 0; i < 5; i++) {
    await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: `list-${i}`, fullName: `L ${i}`, role: i % 2 ? 'TEACHER' : 'STUDENT' } });
  }
  const byExt = await api(node, 'GET', '/public/users/list-3', { key: tenant.key });
  t.equal(byExt.status, 200);
  const byId = await api(node, 'GET', `/public/users/${byExt.body.data.id}`, { key: tenant.key });
  t.same(byId.body.data, byExt.body.data);
  const ext = encodeURIComponent('ext/with spaces&ü');
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'ext/with spaces&ü', fullName: 'Odd', role: 'STUDENT' } });
  t.equal((await api(node, 'GET', `/public/users/${ext}`, { key: tenant.key })).body.data.fullName, 'Odd', 'percent-encoded externalIds');
  assertError(t, await api(node, 'GET', '/public/users/nobody', { key: tenant.key }), 404, 'user_not_found');

  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await api(node, 'GET', `/public/users?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: tenant.key });
    t.equal(page.status, 200);
    t.ok(page.body.data.length <= 2);
    seen.push(...page.body.data.map((u: { id: string }) => u.id));
    cursor = page.body.nextCursor;
  } while (cursor);
  t.equal(seen.length, 7, 'every user once across pages');
  t.equal(new Set(seen).size, 7);
  t.same([...seen].sort().reverse(), seen, 'newest first');

  const teachers = await api(node, 'GET', '/public/users?role=TEACHER', { key: tenant.key });
  t.ok(teachers.body.data.every((u: { role: string }) => u.role === 'TEACHER'));
  const one = await api(node, 'GET', '/public/users?externalId=list-0', { key: tenant.key });
  t.equal(one.body.data.length, 1);
  assertError(t, await api(node, 'GET', '/public/users?limit=101', { key: tenant.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/users?cursor=garbage', { key: tenant.key }), 400, 'validation_failed');
});

t.test('GET /public/users?q= finds by part of the name, email or externalId, ignoring case; % and _ are plain text', async (t) => {
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'q-1', fullName: 'Marie Curie', email: 'marie@lab.example', role: 'TEACHER' } });
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'q_2', fullName: 'Pierre 100% Curie', role: 'TEACHER' } });
  const find = async (q: string) => (await api(node, 'GET', `/public/users?q=${encodeURIComponent(q)}`, { key: tenant.key })).body.data.map((u: { externalId: string }) => u.externalId).sort();
  t.same(await find('curie'), ['q-1', 'q_2']);
  t.same(await find('MARIE@LAB'), ['q-1'], 'by email');
  t.same(await find('q_'), ['q_2'], '_ matches itself only');
  t.same(await find('100%'), ['q_2'], '% matches itself only');
  t.same(await find('%'), ['q_2']);
  assertError(t, await api(node, 'GET', `/public/users?q=${'x'.repeat(101)}`, { key: tenant.key }), 400, 'validation_failed');
});

t.test('POST /public/users/:id/deactivate deactivates once and emits user.deactivated', async (t) => {
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'leaver', fullName: 'Lee', role: 'STUDENT' } });
  const res = await api(node, 'POST', '/public/users/leaver/deactivate', { key: tenant.key });
  t.equal(res.status, 200);
  t.equal(res.body.data.status, 'DEACTIVATED');
  t.type(res.body.data.deactivatedAt, 'string');
  const again = await api(node, 'POST', '/public/users/leaver/deactivate', { key: tenant.key });
  t.same(again.body.data, res.body.data, 'deactivating twice is a no-op');
  const evs = (await events('user.deactivated')).filter((e) => e.data.externalId === 'leaver');
  t.equal(evs.length, 1);
  t.match(evs[0]!.data, { status: 'DEACTIVATED', name: 'Lee', deactivatedAt: res.body.data.deactivatedAt });
  const list = await api(node, 'GET', '/public/users?status=DEACTIVATED', { key: tenant.key });
  t.ok(list.body.data.some((u: { externalId: string }) => u.externalId === 'leaver'));
  assertError(t, await api(node, 'POST', '/public/users/ghost/deactivate', { key: tenant.key }), 404, 'user_not_found');
});

t.test('users are scoped to their organization', async (t) => {
  const other = await createTenant(node);
  assertError(t, await api(node, 'GET', '/public/users/stu-1', { key: other.key }), 404, 'user_not_found');
  const mine = await api(node, 'POST', '/public/users', { key: other.key, body: { externalId: 'stu-1', fullName: 'Other', role: 'STUDENT' } });
  t.equal(mine.status, 201, 'the same externalId in another organization is another user');
});

t.test('POST /public/users/bulk runs as a job to completion with per-user failures', async (t) => {
  const users: unknown[] = [];
  for (let i = 0; i < 250; i++) users.push({ externalId: `bulk-${i}`, fullName: `Bulk ${i}`, role: 'STUDENT' });
  users[7] = { externalId: 'bulk-7', fullName: '', role: 'STUDENT' };
  users[120] = { externalId: 'bulk-120', fullName: 'X', role: 'PRINCIPAL' };
  users[249] = 'not an object';
  users[3] = { externalId: 'bulk-3', full_name: 'Snake Case', role: 'STUDENT' };
  users.push({ externalId: 'stu-1', fullName: 'Renamed by bulk', role: 'TEACHER' });
  const res = await api(node, 'POST', '/public/users/bulk', { key: tenant.key, body: { users } });
  t.equal(res.status, 202);
  t.match(res.body.data, { kind: 'users.bulk_upsert', status: 'QUEUED', total: 251, processed: 0 });
  let job = res.body.data;
  for (let i = 0; i < 200 && job.status !== 'SUCCEEDED'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    job = (await api(node, 'GET', `/public/jobs/${job.id}`, { key: tenant.key })).body.data;
  }
  t.match(job, { status: 'SUCCEEDED', total: 251, processed: 251, succeeded: 247, failed: 4 });
  t.same(job.failures.map((f: { index: number }) => f.index), [3, 7, 120, 249], 'stored input is read back as sent (snake_case keys stay unknown)');
  t.match(job.failures[1], { index: 7, externalId: 'bulk-7', error: { code: 'validation_failed', details: { fields: [{ field: 'fullName' }] } } });
  t.match(job.failures[3], { index: 249, externalId: null });
  t.equal((await api(node, 'GET', '/public/users/bulk-200', { key: tenant.key })).status, 200);
  t.equal((await api(node, 'GET', '/public/users/stu-1', { key: tenant.key })).body.data.fullName, 'Renamed by bulk');
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from outbox where org_id = ${tenant.orgId} and type = 'user.created' and data->>'externalId' like 'bulk-%'`;
  t.equal(count!.n, 246, 'one user.created per created user');

  assertError(t, await api(node, 'POST', '/public/users/bulk', { key: tenant.key, body: { users: [] } }), 400, 'validation_failed');
  const tooMany = Array.from({ length: 1001 }, (_, i) => ({ externalId: `m${i}`, fullName: 'M', role: 'STUDENT' }));
  const d = assertError(t, await api(node, 'POST', '/public/users/bulk', { key: tenant.key, body: { users: tooMany } }), 400, 'validation_failed');
  t.equal(d.fields[0].field, 'users');
  assertError(t, await api(node, 'GET', '/public/jobs/job_nope', { key: tenant.key }), 404, 'job_not_found');
  const other = await createTenant(node);
  assertError(t, await api(node, 'GET', `/public/jobs/${job.id}`, { key: other.key }), 404, 'job_not_found');
});
