import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { connect, eventually, goLive } from '../helpers/ws.ts';

const node = await startTestNode(t);
const tenant = await createTenant(node);
const key = tenant.key;
const sql = node.app.sql;

const host = (await api(node, 'POST', '/public/users', { key, body: { externalId: 'teach-1', fullName: 'Tess', role: 'TEACHER' } })).body.data;
const cls = await api(node, 'POST', '/public/classes', { key, body: { externalId: 'math-7a', name: 'Math 7A', section: 'A', academicYear: '2026/27', courseId: 'course-9' } });
const base = { title: 'Fractions', type: 'MEETING', hostUserId: 'teach-1', scheduledStart: '2030-05-04T09:00:00Z', durationMinutes: 45 };
const create = (body: Record<string, unknown>) => api(node, 'POST', '/public/meetings', { key, body });

t.test('POST /public/classes upserts a class and emits class.created / class.updated', async (t) => {
  t.equal(cls.status, 201);
  t.match(cls.body.data, { externalId: 'math-7a', name: 'Math 7A', section: 'A', academicYear: '2026/27', courseId: 'course-9', description: null });
  const again = await api(node, 'POST', '/public/classes', { key, body: { externalId: 'math-7a', name: 'Math 7A (advanced)' } });
  t.equal(again.status, 200);
  t.match(again.body.data, { id: cls.body.data.id, name: 'Math 7A (advanced)', section: 'A' });
  const evs = await sql<{ type: string; data: any }[]>`select type, data from outbox where org_id = ${tenant.orgId} and type like 'class.%' order by id`;
  t.same(evs.map((e) => e.type), ['class.created', 'class.updated']);
  t.same(Object.keys(evs[0]!.data).sort(), ['academicYear', 'classId', 'createdAt', 'description', 'externalClassId', 'name', 'section', 'updatedAt']);
  t.equal((await api(node, 'GET', '/public/classes/math-7a', { key })).body.data.id, cls.body.data.id);
  t.equal((await api(node, 'GET', '/public/classes', { key })).body.data.length, 1);
  assertError(t, await api(node, 'GET', '/public/classes/none', { key }), 404, 'class_not_found');
});

t.test('POST /public/meetings creates a MEETING with defaults and emits meeting.created', async (t) => {
  const r = await create({ ...base, externalId: 'ext-m1' });
  t.equal(r.status, 201);
  const m = r.body.data;
  t.match(m, {
    externalId: 'ext-m1', kind: 'MEETING', type: 'MEETING', title: 'Fractions', status: 'SCHEDULED', hostUserId: host.id,
    classId: null, scheduledStart: '2030-05-04T09:00:00.000Z', scheduledEnd: '2030-05-04T09:45:00.000Z', durationMinutes: 45,
    settings: { waitingRoom: false, muteOnEntry: false, recordAutomatically: false, lectureMode: false, allowStudentScreenShare: true },
    access: { mode: 'ORG_MEMBERS' }, startedAt: null, endedAt: null, durationSeconds: null, endedReason: null,
  });
  t.match(m.id, /^mtg_/);
  t.match(m.slug, /^[a-z]{3}-[a-z]{4}-[a-z]{3}$/);
  const [ev] = await sql<{ data: any }[]>`select data from outbox where type = 'meeting.created' and data->>'meetingId' = ${m.id}`;
  t.same(Object.keys(ev!.data).sort(), ['batchId', 'classId', 'courseId', 'durationSeconds', 'endedAt', 'externalClassId', 'externalMeetingId', 'hostUserId', 'kind', 'meetingId', 'scheduledEnd', 'scheduledStart', 'slug', 'startedAt', 'status', 'title', 'type']);
  t.match(ev!.data, { meetingId: m.id, externalMeetingId: 'ext-m1', kind: 'MEETING', status: 'SCHEDULED' });
  assertError(t, await create({ ...base, externalId: 'ext-m1' }), 409, 'meeting_exists');
  t.equal((await api(node, 'GET', '/public/meetings/ext-m1', { key })).body.data.id, m.id, 'addressable by externalId');
  t.equal((await api(node, 'GET', `/public/meetings/${m.id}`, { key })).body.data.externalId, 'ext-m1');
});

t.test('POST /public/meetings creates a CLASS with settings, access and a chosen slug', async (t) => {
  const r = await create({
    ...base, type: 'CLASS', classId: 'math-7a', batchId: 'b-2', slug: 'math-7a-monday',
    settings: { waitingRoom: true, muteOnEntry: true, recordAutomatically: true }, access: { mode: 'ENROLLED' },
  });
  t.equal(r.status, 201);
  t.match(r.body.data, {
    kind: 'CLASS', type: 'CLASS', slug: 'math-7a-monday', classId: cls.body.data.id, externalClassId: 'math-7a', courseId: 'course-9', batchId: 'b-2',
    settings: { waitingRoom: true, muteOnEntry: true, recordAutomatically: true, lectureMode: false, allowStudentScreenShare: false }, access: { mode: 'ENROLLED' },
  });
  assertError(t, await create({ ...base, slug: 'math-7a-monday' }), 409, 'slug_taken');
});

t.test('a schedule keeps its rules: not in the past beyond five minutes, within the plan, a host who is not a student', async (t) => {
  const field = async (res: Awaited<ReturnType<typeof create>>, name: string) => {
    const d = assertError(t, res, 400, 'validation_failed');
    t.same(d.fields.map((f: { field: string }) => f.field), [name]);
    return d.fields[0];
  };
  const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
  t.match(await field(await create({ ...base, scheduledStart: ago(6) }), 'scheduledStart'), { message: /5 minutes in the past/ });
  t.equal((await create({ ...base, scheduledStart: ago(4) })).status, 201, 'a start of "now" sent a little late still goes through');

  const free = await createTenant(node, 'free');
  await api(node, 'POST', '/public/users', { key: free.key, body: { externalId: 'teach-1', fullName: 'Tess', role: 'TEACHER' } });
  const onFree = (body: Record<string, unknown>) => api(node, 'POST', '/public/meetings', { key: free.key, body: { ...base, ...body } });
  t.match(await field(await onFree({ durationMinutes: 41 }), 'durationMinutes'), { limit: 40, plan: 'free', message: 'durationMinutes may be at most 40 on the free plan.' });
  const forty = await onFree({ durationMinutes: 40 });
  t.equal(forty.status, 201, 'the cap itself is allowed');
  await field(await api(node, 'PATCH', `/public/meetings/${forty.body.data.id}`, { key: free.key, body: { durationMinutes: 60 } }), 'durationMinutes');
  t.equal((await create({ ...base, durationMinutes: 600 })).status, 201, 'pro allows 720');

  const student = (await api(node, 'POST', '/public/users', { key, body: { externalId: 'stu-host', fullName: 'Stu', role: 'STUDENT' } })).body.data;
  t.match(await field(await create({ ...base, hostUserId: 'stu-host' }), 'hostUserId'), { userId: student.id, role: 'STUDENT' });
  const m = (await create(base)).body.data;
  await field(await api(node, 'PATCH', `/public/meetings/${m.id}`, { key, body: { hostUserId: 'stu-host' } }), 'hostUserId');
  await field(await api(node, 'PATCH', `/public/meetings/${m.id}`, { key, body: { scheduledStart: ago(60) } }), 'scheduledStart');
  t.match((await api(node, 'GET', `/public/meetings/${m.id}`, { key })).body.data, { hostUserId: host.id, scheduledStart: '2030-05-04T09:00:00.000Z' }, 'refused changes are not stored');
});

t.test('meeting creation refusals', async (t) => {
  const fields = async (body: Record<string, unknown>) =>
    assertError(t, await create(body), 400, 'validation_failed').fields.map((f: { field: string }) => f.field);
  t.same(await fields({ ...base, type: 'CLASS' }), ['classId']);
  t.same(await fields({ ...base, classId: 'math-7a' }), ['classId']);
  t.same(await fields({ ...base, access: { mode: 'ENROLLED' } }), ['access.mode']);
  t.same(await fields({ ...base, scheduledStart: 'next tuesday' }), ['scheduledStart']);
  t.same(await fields({ ...base, durationMinutes: 0 }), ['durationMinutes']);
  t.same(await fields({ ...base, durationMinutes: '45' }), ['durationMinutes']);
  t.same(await fields({ ...base, slug: 'Bad Slug' }), ['slug']);
  t.same(await fields({ ...base, settings: { waitingRoom: 'yes' } }), ['settings.waitingRoom']);
  t.same(await fields({ ...base, type: 'WEBINAR', title: '' }), ['title', 'type']);
  assertError(t, await create({ ...base, hostUserId: 'ghost' }), 404, 'user_not_found');
  assertError(t, await create({ ...base, type: 'CLASS', classId: 'ghost-class' }), 404, 'class_not_found');
});

t.test('GET /public/meetings lists by scheduled start with filters and cursors', async (t) => {
  const other = await createTenant(node);
  const oh = await api(node, 'POST', '/public/users', { key: other.key, body: { externalId: 'h', fullName: 'H', role: 'TEACHER' } });
  for (let d = 1; d <= 6; d++) {
    const r = await api(node, 'POST', '/public/meetings', { key: other.key, body: { ...base, hostUserId: oh.body.data.id, externalId: `day-${d}`, scheduledStart: `2030-06-0${d}T10:00:00Z` } });
    t.equal(r.status, 201);
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await api(node, 'GET', `/public/meetings?limit=4${cursor ? `&cursor=${cursor}` : ''}`, { key: other.key });
    seen.push(...page.body.data.map((m: { externalId: string }) => m.externalId));
    cursor = page.body.nextCursor;
  } while (cursor);
  t.same(seen, ['day-1', 'day-2', 'day-3', 'day-4', 'day-5', 'day-6']);
  const range = await api(node, 'GET', '/public/meetings?from=2030-06-02T00:00:00Z&to=2030-06-04T00:00:00Z', { key: other.key });
  t.same(range.body.data.map((m: { externalId: string }) => m.externalId), ['day-2', 'day-3']);
  t.same((await api(node, 'GET', '/public/meetings?externalId=day-5', { key: other.key })).body.data.map((m: any) => m.externalId), ['day-5']);
  await api(node, 'POST', '/public/meetings/day-6/cancel', { key: other.key });
  t.same((await api(node, 'GET', '/public/meetings?status=CANCELLED', { key: other.key })).body.data.map((m: any) => m.externalId), ['day-6']);
  const byClass = await api(node, 'GET', '/public/meetings?classId=math-7a', { key });
  t.ok(byClass.body.data.length >= 1 && byClass.body.data.every((m: any) => m.classId === cls.body.data.id));
  assertError(t, await api(node, 'GET', '/public/meetings?status=SOMETIME', { key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/meetings?from=yesterday', { key }), 400, 'validation_failed');
});

t.test('GET /public/meetings?userId= lists the meetings a user hosts or was in (the console\'s "a user\'s meetings")', async (t) => {
  const org = await createTenant(node);
  const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: org.key, ...(body ? { body } : {}) });
  const teacher = (await call('POST', '/public/users', { externalId: 'u-t', fullName: 'T', role: 'TEACHER' })).body.data;
  const other = (await call('POST', '/public/users', { externalId: 'u-o', fullName: 'O', role: 'TEACHER' })).body.data;
  const student = (await call('POST', '/public/users', { externalId: 'u-s', fullName: 'S', role: 'STUDENT' })).body.data;
  const soon = new Date(Date.now() + 60_000).toISOString();
  const m = async (externalId: string, hostUserId: string) => (await call('POST', '/public/meetings', { ...base, externalId, hostUserId, scheduledStart: soon })).body.data;
  await m('taught', teacher.id);
  const visited = await m('visited', other.id);
  await m('elsewhere', other.id);
  // the student joins `visited`: the attendance records the stay
  await goLive(t, node, org.key, visited.id, other.id);
  const link = (await call('POST', `/public/meetings/${visited.id}/join-links`, { userId: student.id })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'laptop' } })).body.data;
  const room = await connect(t, session.mediaUrl, session.mediaToken);
  await room.type('joined');
  const of = async (userId: string) => (await call('GET', `/public/meetings?userId=${userId}`)).body.data.map((x: { externalId: string }) => x.externalId).sort();
  t.same(await of(teacher.id), ['taught'], 'hosted');
  t.same(await of('u-t'), ['taught'], 'by externalId too');
  await eventually(async () => (await of(student.id)).length === 1);
  t.same(await of(student.id), ['visited'], 'was in');
  t.same(await of(other.id), ['elsewhere', 'visited']);
  assertError(t, await call('GET', '/public/meetings?userId=nobody'), 404, 'user_not_found');
  assertError(t, await api(node, 'GET', `/public/meetings?userId=${student.id}`, { key }), 404, 'user_not_found');
});

t.test('PATCH /public/meetings/:id updates and emits meeting.updated only on change', async (t) => {
  const m = (await create({ ...base, externalId: 'patch-me' })).body.data;
  const r = await api(node, 'PATCH', '/public/meetings/patch-me', { key, body: { title: 'Fractions II', settings: { lectureMode: true }, durationMinutes: 90 } });
  t.equal(r.status, 200);
  t.match(r.body.data, { title: 'Fractions II', durationMinutes: 90, scheduledEnd: '2030-05-04T10:30:00.000Z', settings: { lectureMode: true, waitingRoom: false, allowStudentScreenShare: true } });
  await api(node, 'PATCH', '/public/meetings/patch-me', { key, body: { title: 'Fractions II' } });
  const evs = await sql`select data from outbox where type = 'meeting.updated' and data->>'meetingId' = ${m.id}`;
  t.equal(evs.length, 1, 'a no-op patch emits nothing');
  assertError(t, await api(node, 'PATCH', '/public/meetings/patch-me', { key, body: {} }), 400, 'validation_failed');
  assertError(t, await api(node, 'PATCH', '/public/meetings/patch-me', { key, body: { slug: 'x' } }), 400, 'validation_failed');
  assertError(t, await api(node, 'PATCH', '/public/meetings/nope', { key, body: { title: 'x' } }), 404, 'meeting_not_found');
});

t.test('cancel and end follow the state table', async (t) => {
  const m = (await create({ ...base })).body.data;
  assertError(t, await api(node, 'POST', `/public/meetings/${m.id}/end`, { key }), 409, 'invalid_state');
  const c = await api(node, 'POST', `/public/meetings/${m.id}/cancel`, { key });
  t.match(c.body.data, { status: 'CANCELLED' }, { body: c.body });
  t.type(c.body.data.cancelledAt, 'string');
  t.same((await api(node, 'POST', `/public/meetings/${m.id}/cancel`, { key })).body.data, c.body.data, 'cancelling twice is a no-op');
  assertError(t, await api(node, 'PATCH', `/public/meetings/${m.id}`, { key, body: { title: 'x' } }), 409, 'invalid_state');
  const [ev] = await sql<{ data: any }[]>`select data from outbox where type = 'meeting.cancelled' and data->>'meetingId' = ${m.id}`;
  t.match(ev!.data, { status: 'CANCELLED' });

  const live = (await create({ ...base })).body.data;
  const host = await goLive(t, node, key, live.id, live.hostUserId);
  t.equal((await api(node, 'GET', `/public/meetings/${live.id}`, { key })).body.data.status, 'LIVE', 'the first join starts it');
  assertError(t, await api(node, 'POST', `/public/meetings/${live.id}/cancel`, { key }), 409, 'invalid_state');
  assertError(t, await api(node, 'PATCH', `/public/meetings/${live.id}`, { key, body: { scheduledStart: '2030-07-01T00:00:00Z' } }), 409, 'invalid_state');
  t.equal((await api(node, 'PATCH', `/public/meetings/${live.id}`, { key, body: { title: 'Live retitle' } })).status, 200);
  const e = await api(node, 'POST', `/public/meetings/${live.id}/end`, { key });
  t.match(e.body.data, { status: 'ENDED', endedReason: 'HOST_ENDED' });
  t.type(e.body.data.durationSeconds, 'number');
  t.equal((await host.waitClosed()).code, 4002, 'ending through the API disconnects the room');
  const [ended] = await sql<{ data: any }[]>`select data from outbox where type = 'meeting.ended' and data->>'meetingId' = ${live.id}`;
  t.match(ended!.data, { status: 'ENDED', endedReason: 'HOST_ENDED', startedAt: String, endedAt: String });
  t.type(ended!.data.durationSeconds, 'number');
});
