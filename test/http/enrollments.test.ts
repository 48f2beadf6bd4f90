import t from 'tap';
import { api, createTenant, startTestNode, type Tenant } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';

const node = await startTestNode(t);
const tenant = await createTenant(node);
const sql = node.app.sql;
const events = (type: string, orgId = tenant.orgId) =>
  sql<{ type: string; data: any }[]>`select type, data from outbox where org_id = ${orgId} and type = ${type} order by id`;

const ENROLLMENT_EVENT_KEYS = ['batchId', 'classId', 'courseId', 'enrolledAt', 'enrollmentId', 'externalClassId', 'removedAt', 'status', 'user'];

async function user(externalId: string, role: 'STUDENT' | 'TEACHER' = 'STUDENT', on: Tenant = tenant): Promise<{ id: string; externalId: string; fullName: string; role: string }> {
  const res = await api(node, 'POST', '/public/users', { key: on.key, body: { externalId, fullName: `Name ${externalId}`, role } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`user ${externalId}: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

async function klass(externalId: string, courseId: string | null = 'course-1'): Promise<{ id: string; externalId: string }> {
  const res = await api(node, 'POST', '/public/classes', { key: tenant.key, body: { externalId, name: `Class ${externalId}`, courseId } });
  if (res.status !== 201) throw new Error(`class ${externalId}: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

async function meeting(body: Record<string, unknown>): Promise<{ id: string; slug: string }> {
  const res = await api(node, 'POST', '/public/meetings', {
    key: tenant.key,
    body: { title: 'Session', scheduledStart: '2030-01-01T10:00:00Z', durationMinutes: 60, ...body },
  });
  if (res.status !== 201) throw new Error(`meeting: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Mints a join link for the user and exchanges it, as the join page would. */
async function join(meetingId: string, userId: string) {
  const link = await api(node, 'POST', `/public/meetings/${meetingId}/join-links`, { key: tenant.key, body: { userId } });
  if (link.status !== 201) throw new Error(`join link: ${JSON.stringify(link.body)}`);
  return api(node, 'POST', '/join-tokens/exchange', { body: { token: link.body.data.token, deviceId: `dev-${userId}` } });
}

t.test('POST /public/classes/:id/enrollments enrolls once and emits enrollment.created', async (t) => {
  const cls = await klass('bio-101', 'course-bio');
  const stu = await user('enr-stu-1');

  const res = await api(node, 'POST', '/public/classes/bio-101/enrollments', { key: tenant.key, body: { externalUserId: 'enr-stu-1', batchId: 'batch-a' } });
  t.equal(res.status, 201);
  const e = res.body.data;
  t.match(e.id, /^enr_[0-9a-z]{26}$/);
  t.same(e, {
    id: e.id,
    classId: cls.id,
    externalClassId: 'bio-101',
    user: { id: stu.id, externalId: 'enr-stu-1', name: 'Name enr-stu-1', role: 'STUDENT' },
    batchId: 'batch-a',
    status: 'ACTIVE',
    enrolledAt: e.enrolledAt,
    removedAt: null,
  });
  t.ok(!Number.isNaN(Date.parse(e.enrolledAt)));

  const again = await api(node, 'POST', `/public/classes/${cls.id}/enrollments`, { key: tenant.key, body: { userId: stu.id, batchId: 'batch-b' } });
  t.equal(again.status, 200, 're-enrolling answers 200');
  t.same(again.body.data, e, 'the existing enrollment, unchanged');

  const created = await events('enrollment.created');
  t.equal(created.length, 1, 'one event, not two');
  t.same(Object.keys(created[0]!.data).sort(), ENROLLMENT_EVENT_KEYS);
  t.same(created[0]!.data, {
    enrollmentId: e.id,
    user: { id: stu.id, externalId: 'enr-stu-1', name: 'Name enr-stu-1', role: 'STUDENT' },
    classId: cls.id,
    externalClassId: 'bio-101',
    batchId: 'batch-a',
    courseId: 'course-bio',
    status: 'ACTIVE',
    enrolledAt: e.enrolledAt,
    removedAt: null,
  });
});

t.test('concurrent enrollments of one user create one enrollment; Idempotency-Key replays', async (t) => {
  const cls = await klass('geo-111');
  const stu = await user('enr-race');
  const results = await Promise.all(
    Array.from({ length: 6 }, () => api(node, 'POST', '/public/classes/geo-111/enrollments', { key: tenant.key, body: { userId: stu.id } })),
  );
  t.same(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
  t.equal(new Set(results.map((r) => r.body.data.id)).size, 1, 'all see the same enrollment');
  t.equal((await events('enrollment.created')).filter((e) => e.data.classId === cls.id).length, 1);

  const stu2 = await user('enr-idem');
  const opts = { key: tenant.key, body: { userId: stu2.id }, headers: { 'idempotency-key': 'enroll-idem-1' } };
  const first = await api(node, 'POST', '/public/classes/geo-111/enrollments', opts);
  const replay = await api(node, 'POST', '/public/classes/geo-111/enrollments', opts);
  t.equal(first.status, 201);
  t.equal(replay.status, 201, 'the first status is replayed');
  t.equal(replay.headers.get('idempotent-replayed'), 'true');
  t.same(replay.body, first.body);
});

t.test('DELETE /public/classes/:id/enrollments/:userId removes and emits enrollment.removed', async (t) => {
  const cls = await klass('chem-201', null);
  const stu = await user('enr-stu-2');
  const enrolled = await api(node, 'POST', '/public/classes/chem-201/enrollments', { key: tenant.key, body: { userId: 'enr-stu-2' } });
  t.equal(enrolled.status, 201);
  t.equal(enrolled.body.data.batchId, null);

  const res = await api(node, 'DELETE', `/public/classes/chem-201/enrollments/${stu.id}`, { key: tenant.key });
  t.equal(res.status, 200);
  t.match(res.body.data, { id: enrolled.body.data.id, status: 'REMOVED', enrolledAt: enrolled.body.data.enrolledAt });
  t.type(res.body.data.removedAt, 'string');

  assertError(t, await api(node, 'DELETE', '/public/classes/chem-201/enrollments/enr-stu-2', { key: tenant.key }), 404, 'enrollment_not_found');
  assertError(t, await api(node, 'DELETE', '/public/classes/chem-201/enrollments/nobody', { key: tenant.key }), 404, 'user_not_found');
  assertError(t, await api(node, 'DELETE', '/public/classes/no-class/enrollments/enr-stu-2', { key: tenant.key }), 404, 'class_not_found');

  const removed = (await events('enrollment.removed')).filter((ev) => ev.data.classId === cls.id);
  t.equal(removed.length, 1);
  t.same(Object.keys(removed[0]!.data).sort(), ENROLLMENT_EVENT_KEYS);
  t.same(removed[0]!.data, {
    enrollmentId: enrolled.body.data.id,
    user: { id: stu.id, externalId: 'enr-stu-2', name: 'Name enr-stu-2', role: 'STUDENT' },
    classId: cls.id,
    externalClassId: 'chem-201',
    batchId: null,
    courseId: null,
    status: 'REMOVED',
    enrolledAt: enrolled.body.data.enrolledAt,
    removedAt: res.body.data.removedAt,
  });

  const back = await api(node, 'POST', '/public/classes/chem-201/enrollments', { key: tenant.key, body: { userId: stu.id } });
  t.equal(back.status, 201, 'a removed student can be enrolled again');
  t.not(back.body.data.id, enrolled.body.data.id, 'as a new enrollment');
});

t.test('DELETE /public/batches/:batchId/enrollments/:userId ends the user\'s enrollments of that batch in every class', async (t) => {
  const [math, bio, art] = [await klass('batch-math'), await klass('batch-bio'), await klass('batch-art')];
  const [pat, quinn] = [await user('batch-pat'), await user('batch-quinn')];
  const enroll = (c: { id: string }, u: { id: string }, batchId: string) => api(node, 'POST', `/public/classes/${c.id}/enrollments`, { key: tenant.key, body: { userId: u.id, batchId } });
  for (const c of [math, bio]) t.equal((await enroll(c, pat, 'B-2026')).status, 201);
  t.equal((await enroll(art, pat, 'B-other')).status, 201);
  t.equal((await enroll(math, quinn, 'B-2026')).status, 201);
  const before = (await events('enrollment.removed')).length;

  const res = await api(node, 'DELETE', `/public/batches/B-2026/enrollments/${pat.externalId}`, { key: tenant.key });
  t.equal(res.status, 200);
  t.same(res.body.data.map((e: any) => [e.classId, e.status, e.batchId]).sort(), [[math.id, 'REMOVED', 'B-2026'], [bio.id, 'REMOVED', 'B-2026']].sort());
  const removed = (await events('enrollment.removed')).slice(before);
  t.equal(removed.length, 2, 'one enrollment.removed per class');
  t.same(Object.keys(removed[0]!.data).sort(), ENROLLMENT_EVENT_KEYS);
  t.same(removed.map((e) => e.data.classId).sort(), [math.id, bio.id].sort());
  t.ok(removed.every((e) => e.data.user.id === pat.id && e.data.batchId === 'B-2026' && e.data.removedAt !== null));

  const art_ = (await api(node, 'GET', `/public/classes/${art.id}/enrollments?status=ACTIVE`, { key: tenant.key })).body.data;
  t.same(art_.map((e: any) => e.user.id), [pat.id], 'another batch keeps its enrollment');
  const mathActive = (await api(node, 'GET', `/public/classes/${math.id}/enrollments?status=ACTIVE`, { key: tenant.key })).body.data;
  t.same(mathActive.map((e: any) => e.user.id), [quinn.id], 'other students of the batch stay');

  assertError(t, await api(node, 'DELETE', `/public/batches/B-2026/enrollments/${pat.id}`, { key: tenant.key }), 404, 'enrollment_not_found');
  assertError(t, await api(node, 'DELETE', `/public/batches/B-2026/enrollments/nobody`, { key: tenant.key }), 404, 'user_not_found');
});

t.test('GET /public/classes/:id/enrollments pages with a cursor and filters by status', async (t) => {
  await klass('hist-301');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    await user(`page-stu-${i}`);
    const res = await api(node, 'POST', '/public/classes/hist-301/enrollments', { key: tenant.key, body: { externalUserId: `page-stu-${i}` } });
    ids.push(res.body.data.id);
  }
  await api(node, 'DELETE', '/public/classes/hist-301/enrollments/page-stu-0', { key: tenant.key });

  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await api(node, 'GET', `/public/classes/hist-301/enrollments?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: tenant.key });
    t.equal(page.status, 200);
    sizes.push(page.body.data.length);
    seen.push(...page.body.data.map((e: { id: string }) => e.id));
    cursor = page.body.nextCursor;
  } while (cursor);
  t.same(sizes, [2, 2, 1]);
  t.same(seen, [...ids].reverse(), 'every enrollment once, newest first');

  const active = await api(node, 'GET', '/public/classes/hist-301/enrollments?status=ACTIVE', { key: tenant.key });
  t.equal(active.body.data.length, 4);
  t.equal(active.body.nextCursor, null);
  const removed = await api(node, 'GET', '/public/classes/hist-301/enrollments?status=REMOVED', { key: tenant.key });
  t.same(removed.body.data.map((e: { user: { externalId: string } }) => e.user.externalId), ['page-stu-0']);

  assertError(t, await api(node, 'GET', '/public/classes/hist-301/enrollments?cursor=garbage', { key: tenant.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/classes/hist-301/enrollments?status=GONE', { key: tenant.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/classes/nope/enrollments', { key: tenant.key }), 404, 'class_not_found');
});

t.test('enrollment refusals: unknown class or user, deactivated user, bad bodies, scopes, other orgs', async (t) => {
  await klass('art-401');
  await user('enr-stu-3');
  assertError(t, await api(node, 'POST', '/public/classes/nope/enrollments', { key: tenant.key, body: { userId: 'enr-stu-3' } }), 404, 'class_not_found');
  const d = assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: tenant.key, body: { userId: 'ghost' } }), 404, 'user_not_found');
  t.equal(d.id, 'ghost');

  await user('enr-leaver');
  await api(node, 'POST', '/public/users/enr-leaver/deactivate', { key: tenant.key });
  assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: tenant.key, body: { userId: 'enr-leaver' } }), 403, 'user_deactivated');

  const both = await api(node, 'POST', '/public/classes/art-401/enrollments', { key: tenant.key, body: { userId: 'enr-stu-3', externalUserId: 'enr-stu-3' } });
  t.same(assertError(t, both, 400, 'validation_failed').fields.map((f: { field: string }) => f.field), ['userId']);
  assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: tenant.key, body: {} }), 400, 'validation_failed');
  assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: tenant.key, body: { userId: 'enr-stu-3', extra: 1 } }), 400, 'validation_failed');

  const reader = await createTenant(node, 'pro', ['classes:read']);
  assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: reader.key, body: { userId: 'enr-stu-3' } }), 403, 'insufficient_scope');
  assertError(t, await api(node, 'DELETE', '/public/classes/art-401/enrollments/enr-stu-3', { key: reader.key }), 403, 'insufficient_scope');
  // classes:read passes the scope check; the class belongs to another organization.
  assertError(t, await api(node, 'GET', '/public/classes/art-401/enrollments', { key: reader.key }), 404, 'class_not_found');

  const other = await createTenant(node);
  await user('enr-stu-3', 'STUDENT', other);
  assertError(t, await api(node, 'POST', '/public/classes/art-401/enrollments', { key: other.key, body: { userId: 'enr-stu-3' } }), 404, 'class_not_found');
  t.equal((await events('enrollment.created', other.orgId)).length, 0);
});

t.test('POST /public/meetings/:id/invitations invites idempotently, all or nothing', async (t) => {
  const host = await user('inv-host', 'TEACHER');
  const a = await user('inv-a');
  const b = await user('inv-b', 'TEACHER');
  const c = await user('inv-c');
  const m = await meeting({ type: 'MEETING', hostUserId: host.id, externalId: 'inv-meeting', access: { mode: 'INVITED' } });

  const res = await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: [a.id, 'inv-b', a.externalId] } });
  t.equal(res.status, 200);
  t.equal(res.body.data.length, 2, 'the same user given twice is invited once');
  t.same(res.body.data[0], { meetingId: m.id, user: { id: a.id, externalId: 'inv-a', name: 'Name inv-a', role: 'STUDENT' }, invitedAt: res.body.data[0].invitedAt });
  t.same(res.body.data[1].user, { id: b.id, externalId: 'inv-b', name: 'Name inv-b', role: 'TEACHER' });

  const again = await api(node, 'POST', '/public/meetings/inv-meeting/invitations', { key: tenant.key, body: { userIds: ['inv-a'] } });
  t.equal(again.status, 200);
  t.same(again.body.data, [res.body.data[0]], 'inviting again keeps the first invitation');

  const partial = await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: [c.id, 'ghost-1', 'inv-a', 'ghost-2'] } });
  const d = assertError(t, partial, 404, 'user_not_found');
  t.same(d.ids, ['ghost-1', 'ghost-2']);

  const list = await api(node, 'GET', `/public/meetings/${m.id}/invitations`, { key: tenant.key });
  t.equal(list.status, 200);
  t.same(list.body.data.map((i: { user: { id: string } }) => i.user.id).sort(), [a.id, b.id].sort(), 'nobody invited by the refused request');
  t.equal(list.body.nextCursor, null);

  assertError(t, await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: [] } }), 400, 'validation_failed');
  assertError(t, await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: Array.from({ length: 1001 }, (_, i) => `u${i}`) } }), 400, 'validation_failed');
  assertError(t, await api(node, 'POST', '/public/meetings/nope/invitations', { key: tenant.key, body: { userIds: [a.id] } }), 404, 'meeting_not_found');
  const reader = await createTenant(node, 'pro', ['meetings:read']);
  assertError(t, await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: reader.key, body: { userIds: [a.id] } }), 403, 'insufficient_scope');

  const cancelled = await meeting({ type: 'MEETING', hostUserId: host.id, access: { mode: 'INVITED' } });
  await api(node, 'POST', `/public/meetings/${cancelled.id}/cancel`, { key: tenant.key });
  const st = assertError(t, await api(node, 'POST', `/public/meetings/${cancelled.id}/invitations`, { key: tenant.key, body: { userIds: [a.id] } }), 409, 'invalid_state');
  t.equal(st.status, 'CANCELLED');
});

t.test('GET and DELETE /public/meetings/:id/invitations page and withdraw', async (t) => {
  const host = await user('inv2-host', 'TEACHER');
  const m = await meeting({ type: 'MEETING', hostUserId: host.id, access: { mode: 'INVITED' } });
  const invited: string[] = [];
  for (let i = 0; i < 5; i++) invited.push((await user(`inv2-${i}`)).id);
  const res = await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: invited } });
  t.equal(res.body.data.length, 5);

  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await api(node, 'GET', `/public/meetings/${m.id}/invitations?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: tenant.key });
    t.equal(page.status, 200);
    sizes.push(page.body.data.length);
    seen.push(...page.body.data.map((i: { user: { id: string } }) => i.user.id));
    cursor = page.body.nextCursor;
  } while (cursor);
  t.same(sizes, [2, 2, 1]);
  t.same(seen, [...invited].sort(), 'every invitation once');

  const gone = await api(node, 'DELETE', `/public/meetings/${m.id}/invitations/inv2-3`, { key: tenant.key });
  t.equal(gone.status, 200);
  t.match(gone.body.data, { meetingId: m.id, user: { id: invited[3], externalId: 'inv2-3' } });
  assertError(t, await api(node, 'DELETE', `/public/meetings/${m.id}/invitations/inv2-3`, { key: tenant.key }), 404, 'invitation_not_found');
  assertError(t, await api(node, 'DELETE', `/public/meetings/${m.id}/invitations/nobody`, { key: tenant.key }), 404, 'user_not_found');
  assertError(t, await api(node, 'GET', '/public/meetings/nope/invitations', { key: tenant.key }), 404, 'meeting_not_found');
  t.equal((await api(node, 'GET', `/public/meetings/${m.id}/invitations`, { key: tenant.key })).body.data.length, 4);
});

t.test('ENROLLED class meetings admit enrolled students only, through the real join flow', async (t) => {
  await klass('math-501');
  const teacher = await user('acc-teacher', 'TEACHER');
  const other = await user('acc-teacher-2', 'TEACHER');
  const enrolled = await user('acc-enrolled');
  const outsider = await user('acc-outsider');
  await api(node, 'POST', '/public/classes/math-501/enrollments', { key: tenant.key, body: { userId: enrolled.id } });
  const m = await meeting({ type: 'CLASS', classId: 'math-501', hostUserId: teacher.id, access: { mode: 'ENROLLED' } });

  assertError(t, await join(m.id, outsider.id), 403, 'not_enrolled');
  const ok = await join(m.id, enrolled.id);
  t.equal(ok.status, 200, 'an enrolled student joins');
  t.equal(ok.body.data.user.id, enrolled.id);
  t.equal(ok.body.data.meeting.id, m.id);
  t.equal((await join(m.id, teacher.id)).status, 200, 'the host joins');
  t.equal((await join(m.id, other.id)).status, 200, 'enrollment applies to students only');

  await api(node, 'DELETE', '/public/classes/math-501/enrollments/acc-enrolled', { key: tenant.key });
  assertError(t, await join(m.id, enrolled.id), 403, 'not_enrolled');
});

t.test('INVITED meetings admit invited users and the host, through the real join flow', async (t) => {
  const host = await user('acc-host', 'TEACHER');
  const guest = await user('acc-guest');
  const stranger = await user('acc-stranger', 'TEACHER');
  const m = await meeting({ type: 'MEETING', hostUserId: host.id, access: { mode: 'INVITED' } });

  assertError(t, await join(m.id, guest.id), 403, 'not_invited');
  assertError(t, await join(m.id, stranger.id), 403, 'not_invited');
  t.equal((await join(m.id, host.id)).status, 200, 'the host needs no invitation');

  await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key: tenant.key, body: { userIds: ['acc-guest'] } });
  const ok = await join(m.id, guest.id);
  t.equal(ok.status, 200, 'an invited user joins');
  t.equal(ok.body.data.user.id, guest.id);

  await api(node, 'DELETE', `/public/meetings/${m.id}/invitations/${guest.id}`, { key: tenant.key });
  assertError(t, await join(m.id, guest.id), 403, 'not_invited');
});

t.test('the OpenAPI document covers the enrollment and invitation routes', async (t) => {
  const doc = await api(node, 'GET', '/openapi.json');
  t.equal(doc.status, 200);
  const paths = doc.body.paths;
  t.same(Object.keys(paths['/api/v1/public/classes/{id}/enrollments']).sort(), ['get', 'post']);
  t.ok(paths['/api/v1/public/classes/{id}/enrollments/{userId}'].delete);
  t.same(Object.keys(paths['/api/v1/public/meetings/{id}/invitations']).sort(), ['get', 'post']);
  t.ok(paths['/api/v1/public/meetings/{id}/invitations/{userId}'].delete);
  t.ok(paths['/api/v1/public/meetings/{id}/invitations'].post.responses['409'], 'invalid_state documented');
});
