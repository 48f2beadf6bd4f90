import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode, type Tenant } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { connect, eventually } from '../helpers/ws.ts';

const clock = new ManualClock(Date.parse('2026-09-07T08:00:00Z'));
const node = await startTestNode(t, { clock, redis: process.env.ROOM_REDIS !== "0" });
const sql = node.app.sql;

async function setup(plan: 'free' | 'pro' = 'pro', settings: Record<string, unknown> = {}) {
  const tenant = await createTenant(node, plan);
  const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
  const teacher = (await call('POST', '/public/users', { externalId: 'teacher', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
  const student = (await call('POST', '/public/users', { externalId: 'student', fullName: 'Sam Student', role: 'STUDENT', email: 'sam@school.test' })).body.data;
  const meeting = (await call('POST', '/public/meetings', { title: 'Physics', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: plan === 'free' ? 40 : 90, settings })).body.data;
  const session = async (userId: string, role = 'PARTICIPANT', deviceId = `dev-${userId}-${Math.random()}`, displayName?: string) => {
    const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role, ...(displayName ? { displayName } : {}) })).body.data;
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId } });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    return { ...r.body.data, deviceId };
  };
  return { tenant, call, teacher, student, meeting, session };
}
const events = (tenant: Tenant, type: string) => sql<{ data: any }[]>`select data from outbox where org_id = ${tenant.orgId} and type = ${type} order by id`;

t.test('hosts and students meet: LIVE on first join, roster pushed, host ends it for everyone', async (t) => {
  const { tenant, call, teacher, student, meeting, session } = await setup();
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  const joined = await host.type('joined');
  t.match(joined, { ok: true, participantId: /^par_/, settings: { lectureMode: false } });
  t.equal((await call('GET', `/public/meetings/${meeting.id}`)).body.data.status, 'LIVE');
  const [started] = await events(tenant, 'meeting.started');
  t.match(started!.data, { meetingId: meeting.id, status: 'LIVE', startedAt: '2026-09-07T08:00:00.000Z' });

  t.ok(node.app.actors.passivateIdle(0) >= 1, 'idle actors can be passivated');
  t.notOk(node.app.actors.loaded('meeting').includes(`meeting:${meeting.id}`));
  const ss = await session(student.id);
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken, 'android');
  t.same((await stu.type('joined')).roster.map((p: any) => p.name).sort(), ['Sam Student', 'Tina Teacher'], 'rehydrated from its snapshot, the host still in');
  const roster = await host.next((m) => m.type === 'roster' && m.participants.length === 2);
  t.same(roster.participants.map((p: any) => p.name).sort(), ['Sam Student', 'Tina Teacher']);
  const [pj] = (await events(tenant, 'participant.joined')).filter((e) => e.data.user.id === student.id);
  t.match(pj!.data, { meetingId: meeting.id, kind: 'MEETING', device: 'android', user: { id: student.id, externalId: 'student', name: 'Sam Student', email: 'sam@school.test', role: 'STUDENT' }, leftAt: null, durationSeconds: null });

  t.match(await stu.command({ type: 'end' }), { ok: false, error: { code: 'forbidden' } }, 'students cannot end the meeting');
  clock.advance(30 * 60_000);
  host.ws.send(JSON.stringify({ type: 'end', id: 'end-1' }));
  t.equal((await stu.waitClosed()).code, 4002, 'everyone is disconnected with meeting_ended');
  t.equal((await host.waitClosed()).code, 4002);
  const m = (await call('GET', `/public/meetings/${meeting.id}`)).body.data;
  t.match(m, { status: 'ENDED', endedReason: 'HOST_ENDED', durationSeconds: 1800 });
  const [ended] = await events(tenant, 'meeting.ended');
  t.match(ended!.data, { endedReason: 'HOST_ENDED', durationSeconds: 1800 });
  t.equal((await events(tenant, 'participant.left')).length, 2, 'everyone still in left with the end');
  assertError(t, await api(node, 'POST', '/join-tokens/refresh', { bearer: ss.accessToken }), 410, 'meeting_ended');
});

t.test('a reconnect within the grace period makes no leave/join pair; after it the participant leaves', async (t) => {
  const { tenant, teacher, student, session } = await setup();
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(student.id);
  const first = await connect(t, ss.mediaUrl, ss.mediaToken);
  const { participantId } = await first.type('joined');
  first.close();
  await eventually(async () => (await sql`select 1 from actor_timers where name = ${`reconnect:${participantId}`}`).length);
  clock.advance(10_000);
  const again = await connect(t, ss.mediaUrl, ss.mediaToken);
  t.equal((await again.type('joined')).participantId, participantId, 'the same participant');
  const joins = (await events(tenant, 'participant.joined')).filter((e) => e.data.participantId === participantId);
  t.equal(joins.length, 1, 'one participant.joined');
  t.equal((await events(tenant, 'participant.left')).length, 0, 'no participant.left');

  again.close();
  await eventually(async () => (await sql`select 1 from actor_timers where name = ${`reconnect:${participantId}`}`).length);
  clock.advance(15_001);
  await node.app.timers.tick();
  const left = await eventually(() => events(tenant, 'participant.left').then((r) => r[0]));
  t.match(left!.data, { participantId, durationSeconds: 10 });
  await host.next((m) => m.type === 'roster' && m.participants.length === 1);
});

t.test('an empty room ends after its grace (ROOM_FINISHED); the plan cap ends a long one (PLAN_LIMIT)', async (t) => {
  const a = await setup();
  const hs = await a.session(a.teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  host.ws.send(JSON.stringify({ type: 'leave' }));
  t.equal((await host.waitClosed()).code, 4000, 'leaving closes the socket');
  clock.advance(59_000);
  await node.app.timers.tick();
  t.equal((await a.call('GET', `/public/meetings/${a.meeting.id}`)).body.data.status, 'LIVE', 'still live during the grace');
  clock.advance(2_000);
  await node.app.timers.tick();
  t.match((await a.call('GET', `/public/meetings/${a.meeting.id}`)).body.data, { status: 'ENDED', endedReason: 'ROOM_FINISHED' });

  const b = await setup('free');
  const bs = await b.session(b.teacher.id, 'HOST');
  const h2 = await connect(t, bs.mediaUrl, bs.mediaToken);
  await h2.type('joined');
  clock.advance(39 * 60_000);
  await node.app.timers.tick();
  t.equal((await b.call('GET', `/public/meetings/${b.meeting.id}`)).body.data.status, 'LIVE');
  clock.advance(60_000);
  await node.app.timers.tick();
  t.equal((await h2.waitClosed()).code, 4002);
  const m = (await b.call('GET', `/public/meetings/${b.meeting.id}`)).body.data;
  t.match(m, { status: 'ENDED', endedReason: 'PLAN_LIMIT', durationSeconds: 40 * 60 });
  t.equal((await events(b.tenant, 'meeting.ended'))[0]!.data.endedReason, 'PLAN_LIMIT', 'emitted on a plan without webhooks too');
});

t.test('the waiting room: queued, admitted by a host over the socket, then a room token', async (t) => {
  const { tenant, teacher, student, meeting, session, call } = await setup('pro', { waitingRoom: true });
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(student.id);
  t.equal(ss.mediaToken, null);
  t.match(ss.waitingRoom, { queueId: /^wr_/, status: 'WAITING' });
  const waiting = await connect(t, ss.mediaUrl, ss.accessToken);
  await waiting.type('waiting');
  const list = await host.next((m) => m.type === 'waiting-room' && m.entries.length === 1);
  t.match(list.entries[0], { queueId: ss.waitingRoom.queueId });
  // a backend sees the same list without listening to participant.waiting
  const listed = await call('GET', `/public/meetings/${meeting.id}/waiting-room`);
  t.equal(listed.status, 200);
  t.same(listed.body.data.entries, [{ queueId: ss.waitingRoom.queueId, userId: student.id, name: 'Sam Student', role: 'STUDENT', requestedAt: list.entries[0].requestedAt }]);
  const stranger = await createTenant(node);
  assertError(t, await api(node, 'GET', `/public/meetings/${meeting.id}/waiting-room`, { key: stranger.key }), 404, 'meeting_not_found');
  const usersOnly = await createTenant(node, 'pro', ['users:read']);
  assertError(t, await api(node, 'GET', `/public/meetings/${meeting.id}/waiting-room`, { key: usersOnly.key }), 403, 'insufficient_scope');
  const status = await api(node, 'GET', `/meetings/${meeting.slug}/waiting-room/status/${ss.waitingRoom.queueId}`, { bearer: ss.accessToken });
  t.match(status.body.data, { status: 'WAITING', admittedAt: null });
  assertError(t, await api(node, 'POST', `/meetings/${meeting.slug}/token`, { bearer: ss.accessToken, body: { queueId: ss.waitingRoom.queueId, deviceId: ss.deviceId } }), 409, 'waiting_not_admitted');

  clock.advance(5_000);
  const admitAt = new Date(clock.now()).toISOString();
  t.match(await host.command({ type: 'admit', queueId: ss.waitingRoom.queueId }), { ok: true, status: 'ADMITTED' });
  t.match(await waiting.type('admitted'), { queueId: ss.waitingRoom.queueId });
  const tok = await api(node, 'POST', `/meetings/${meeting.slug}/token`, { bearer: ss.accessToken, body: { queueId: ss.waitingRoom.queueId, deviceId: ss.deviceId } });
  t.equal(tok.status, 200);
  // the same routes under the organization and the meeting's id (the spec's form for class sessions)
  const byOrg = `/orgs/${tenant.orgId}/meetings/${meeting.id}`;
  t.match((await api(node, 'GET', `${byOrg}/waiting-room/status/${ss.waitingRoom.queueId}`, { bearer: ss.accessToken })).body.data, { status: 'ADMITTED', admittedAt: admitAt });
  t.match((await api(node, 'POST', `${byOrg}/token`, { bearer: ss.accessToken, body: { queueId: ss.waitingRoom.queueId, deviceId: ss.deviceId } })).body.data, { mediaToken: /^mrt_/ });
  assertError(t, await api(node, 'GET', `/orgs/org_other/meetings/${meeting.id}/waiting-room/status/${ss.waitingRoom.queueId}`, { bearer: ss.accessToken }), 403, 'session_wrong_meeting');
  assertError(t, await api(node, 'POST', `/orgs/${tenant.orgId}/meetings/mtg_other/token`, { bearer: ss.accessToken, body: { queueId: ss.waitingRoom.queueId, deviceId: ss.deviceId } }), 403, 'session_wrong_meeting');
  t.match(tok.body.data, { mediaToken: /^mrt_/, role: 'PARTICIPANT' });
  const stu = await connect(t, tok.body.data.mediaUrl, tok.body.data.mediaToken);
  await stu.type('joined');
  const [adm] = await events(tenant, 'participant.admitted');
  t.match(adm!.data, { meetingId: meeting.id, admittedBy: teacher.id, admittedAt: admitAt, user: { id: student.id } });
  t.equal((await events(tenant, 'participant.waiting')).length, 1, 'one participant.waiting');

  const other = (await call('POST', '/public/users', { externalId: 'other', fullName: 'Otto', role: 'STUDENT' })).body.data;
  const os = await session(other.id);
  const viaApi = await call('POST', `/public/meetings/${meeting.externalId ?? meeting.id}/waiting-room/${os.waitingRoom.queueId}/admit`);
  t.match(viaApi.body.data, { status: 'ADMITTED' });
  const byApi = (await events(tenant, 'participant.admitted')).find((e) => e.data.user.id === other.id);
  t.match(byApi!.data, { admittedBy: null }, 'admitted by your backend, not by a user');
  const wrong = await api(node, 'GET', `/meetings/not-this-one/waiting-room/status/${os.waitingRoom.queueId}`, { bearer: os.accessToken });
  assertError(t, wrong, 403, 'session_wrong_meeting');
  const denied = await session((await call('POST', '/public/users', { externalId: 'd', fullName: 'D', role: 'STUDENT' })).body.data.id);
  t.match(await host.command({ type: 'deny', queueId: denied.waitingRoom.queueId }), { ok: true, status: 'DENIED' });
  assertError(t, await api(node, 'POST', `/meetings/${meeting.slug}/token`, { bearer: denied.accessToken, body: { queueId: denied.waitingRoom.queueId, deviceId: denied.deviceId } }), 403, 'waiting_denied');
  t.match(await stu.command({ type: 'admit', queueId: 'wr_x' }), { ok: false, error: { code: 'forbidden' } });
  t.same((await call('GET', `/public/meetings/${meeting.id}/waiting-room`)).body.data.entries, [], 'nobody waits now: admitted and denied are off the list');
});

t.test("the join link's displayName is the name in the roster and in participant.* events", async (t) => {
  const { tenant, teacher, student, session } = await setup();
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(student.id, 'PARTICIPANT', undefined, 'Sam (tablet)');
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken);
  t.same((await stu.type('joined')).roster.map((p: any) => p.name).sort(), ['Sam (tablet)', 'Tina Teacher']);
  const roster = await host.next((m) => m.type === 'roster' && m.participants.length === 2);
  t.ok(roster.participants.some((p: any) => p.name === 'Sam (tablet)'), 'the host sees the display name');
  stu.ws.send(JSON.stringify({ type: 'leave' }));
  await stu.waitClosed();
  const joined = (await events(tenant, 'participant.joined')).find((e) => e.data.user.id === student.id);
  const left = await eventually(async () => (await events(tenant, 'participant.left')).find((e) => e.data.user.id === student.id));
  t.match(joined!.data.user, { id: student.id, externalId: 'student', name: 'Sam (tablet)', email: 'sam@school.test', role: 'STUDENT' });
  t.equal(left!.data.user.name, 'Sam (tablet)');
});

t.test('deactivation disconnects at once; a removed participant cannot refresh', async (t) => {
  const { tenant, call, teacher, student, session } = await setup();
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(student.id);
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken);
  const { participantId } = await stu.type('joined');
  await call('POST', `/public/users/${student.id}/deactivate`);
  t.equal((await stu.waitClosed()).code, 4003);
  await eventually(async () => (await events(tenant, 'participant.left')).some((e) => e.data.participantId === participantId));

  const other = (await call('POST', '/public/users', { externalId: 'o2', fullName: 'O', role: 'STUDENT' })).body.data;
  const os = await session(other.id);
  const o = await connect(t, os.mediaUrl, os.mediaToken);
  const joined = await o.type('joined');
  t.match(await host.command({ type: 'remove', participantId: joined.participantId }), { ok: true });
  t.equal((await o.waitClosed()).code, 4001);
  assertError(t, await api(node, 'POST', '/join-tokens/refresh', { bearer: os.accessToken }), 401, 'session_revoked');
  await t.rejects(connect(t, os.mediaUrl, os.mediaToken), /upgrade refused: 401/, 'nor reconnect');
});

t.test('the gateway refuses bad tokens and other meetings', async (t) => {
  const a = await setup();
  const b = await setup();
  const as = await a.session(a.teacher.id, 'HOST');
  const bs = await b.session(b.teacher.id, 'HOST');
  await t.rejects(connect(t, as.mediaUrl, 'mrt_forged'), /upgrade refused: 401/);
  await t.rejects(connect(t, bs.mediaUrl.replace(b.meeting.slug, a.meeting.slug), bs.mediaToken), /upgrade refused: 403/);
  await t.rejects(connect(t, as.mediaUrl, as.accessToken), /upgrade refused: 401/, 'an accessToken is for waiting only');
});
