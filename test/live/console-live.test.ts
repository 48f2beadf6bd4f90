import t from 'tap';
import { assertError } from '../helpers/assert.ts';
import { api, school, startTestNode } from '../helpers/node.ts';
import { connect, eventually, goLive } from '../helpers/ws.ts';

// GET /orgs/:orgId/live (docs/console-api.md): the organization's live rooms and who is in them, as the
// console's overview shows them; and ending a room from the console, which the audit log records.
const node = await startTestNode(t);
const { app } = node;
const s = await school(node, 'pro');
const PASSWORD = 'correct horse battery staple';
const adminRow = await app.services.admins.create(app.sql, { orgId: s.tenant.orgId, email: 'admin@school.example', role: 'admin', password: PASSWORD });
const bearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: s.tenant.orgId, email: 'admin@school.example', password: PASSWORD } })).body.data.sessionToken as string;
const org = `/orgs/${s.tenant.orgId}`;
const live = async (q = '') => {
  const res = await api(node, 'GET', `${org}/live${q}`, { bearer });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body as { data: { totals: { rooms: number; people: number; hosts: number }; maxLiveMeetings: number; rooms: any[] }; nextCursor: string | null };
};

const teacher = await s.user('teacher', 'Teacher', 'TEACHER');
const students = [await s.user('s1', 'Student One'), await s.user('s2', 'Student Two')];
const meeting = async (title: string, type = 'MEETING', extra: Record<string, unknown> = {}) =>
  (await s.call('POST', '/public/meetings', { title, type, hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60, ...extra })).body.data;
const joinAs = async (t: Parameters<typeof connect>[0], meetingId: string, userId: string, role = 'PARTICIPANT') => {
  const link = (await s.call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}-${meetingId}` } })).body.data;
  const c = await connect(t, session.mediaUrl, session.mediaToken);
  await c.type('joined');
  return c;
};

t.test('GET /orgs/:orgId/live: nothing live, then rooms with their people and hosts, then fewer as people leave', async (t) => {
  t.same((await live()).data, { totals: { rooms: 0, people: 0, hosts: 0 }, maxLiveMeetings: 200, rooms: [] });
  const scheduled = await meeting('Not started yet');

  const maths = await meeting('Maths');
  const host = await goLive(t, node, s.tenant.key, maths.id, teacher.id);
  const one = await joinAs(t, maths.id, students[0]!.id);
  const two = await joinAs(t, maths.id, students[1]!.id);
  const other = await meeting('Office hours');
  const alone = await joinAs(t, other.id, students[0]!.id, 'COHOST');

  const res = await live();
  t.same(res.data.totals, { rooms: 2, people: 4, hosts: 2 });
  t.match(res.data.rooms, [
    { meetingId: other.id, title: 'Office hours', kind: 'MEETING', slug: other.slug, startedAt: String, people: 1, hosts: 1 },
    { meetingId: maths.id, title: 'Maths', kind: 'MEETING', people: 3, hosts: 1 },
  ]);
  t.notOk(res.data.rooms.some((r) => r.meetingId === scheduled.id), 'a scheduled meeting is not live');
  t.equal(res.nextCursor, null);

  const first = await live('?limit=1');
  t.equal(first.data.rooms.length, 1);
  t.same(first.data.totals, { rooms: 2, people: 4, hosts: 2 }, 'totals count every room, not the page');
  const second = await live(`?limit=1&cursor=${first.nextCursor}`);
  t.same([...first.data.rooms, ...second.data.rooms].map((r) => r.meetingId), [other.id, maths.id]);
  t.equal(second.nextCursor, null);

  two.ws.send(JSON.stringify({ type: 'leave' }));
  await two.waitClosed();
  await eventually(async () => (await live()).data.rooms.find((r) => r.meetingId === maths.id)?.people === 2);
  t.match((await live()).data.totals, { people: 3 });
  for (const c of [host, one, alone]) c.ws.close();
});

t.test('POST /orgs/:orgId/meetings/:id/end ends a live room; the audit log records who; the room leaves the list', async (t) => {
  const m = await meeting('To end', 'MEETING');
  const host = await goLive(t, node, s.tenant.key, m.id, teacher.id);
  await eventually(async () => (await live()).data.rooms.some((r) => r.meetingId === m.id));
  const res = await api(node, 'POST', `${org}/meetings/${m.id}/end`, { bearer });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.data, { id: m.id, status: 'ENDED' });
  t.equal((await host.waitClosed()).code, 4002, 'the room closed');
  t.notOk((await live()).data.rooms.some((r) => r.meetingId === m.id));
  t.equal((await api(node, 'POST', `${org}/meetings/${m.id}/end`, { bearer })).body.data.status, 'ENDED', 'ending again answers it unchanged');
  const entries = (await api(node, 'GET', `${org}/audit-log?action=meeting.ended`, { bearer })).body.data as any[];
  t.equal(entries.length, 1, 'one entry: the second end changed nothing');
  t.match(entries[0], { actor: { type: 'admin', id: adminRow.id, email: 'admin@school.example' }, target: { type: 'meeting', id: m.id }, details: { title: 'To end', kind: 'MEETING' } });

  // the public route: recorded when a signed-in admin's session ends the room, not an API key
  const byKey = await meeting('Ended by the backend');
  const h1 = await goLive(t, node, s.tenant.key, byKey.id, teacher.id);
  t.equal((await s.call('POST', `/public/meetings/${byKey.id}/end`)).body.data.status, 'ENDED');
  await h1.waitClosed();
  const bySession = await meeting('Ended by the admin on the public API');
  const h2 = await goLive(t, node, s.tenant.key, bySession.id, teacher.id);
  t.equal((await api(node, 'POST', `/public/meetings/${bySession.id}/end`, { bearer })).body.data.status, 'ENDED');
  await h2.waitClosed();
  const ended = ((await api(node, 'GET', `${org}/audit-log?action=meeting.ended`, { bearer })).body.data as any[]).map((e) => e.target.id);
  t.same(ended, [bySession.id, m.id], 'the admin\'s two ends, not the API key\'s');

  const scheduled = await meeting('Later');
  assertError(t, await api(node, 'POST', `${org}/meetings/${scheduled.id}/end`, { bearer }), 409, 'invalid_state');
  assertError(t, await api(node, 'POST', `${org}/meetings/mtg_nope/end`, { bearer }), 404, 'meeting_not_found');
});

t.test('another organization\'s admin sees none of these rooms and ends none of them', async (t) => {
  const other = await school(node, 'pro');
  await app.services.admins.create(app.sql, { orgId: other.tenant.orgId, email: 'admin@other.example', role: 'owner', password: PASSWORD });
  const theirs = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: other.tenant.orgId, email: 'admin@other.example', password: PASSWORD } })).body.data.sessionToken;
  const m = await meeting('Ours');
  const host = await goLive(t, node, s.tenant.key, m.id, teacher.id);
  assertError(t, await api(node, 'GET', `${org}/live`, { bearer: theirs }), 403, 'org_mismatch');
  assertError(t, await api(node, 'POST', `${org}/meetings/${m.id}/end`, { bearer: theirs }), 403, 'org_mismatch');
  assertError(t, await api(node, 'POST', `/orgs/${other.tenant.orgId}/meetings/${m.id}/end`, { bearer: theirs }), 404, 'meeting_not_found');
  t.same((await api(node, 'GET', `/orgs/${other.tenant.orgId}/live`, { bearer: theirs })).body.data.rooms, []);
  t.ok((await live()).data.rooms.some((r) => r.meetingId === m.id), 'still live');
  host.ws.close();
});
