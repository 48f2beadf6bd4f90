import t from 'tap';
import type { Test } from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { connect } from '../helpers/ws.ts';

// DELETE /users/me: a student deletes their own account with the accessToken of a meeting session. They
// leave the room, their links stop working, their personal data is erased everywhere it is shown, the
// organization hears user.deactivated with the erased payload, and its backend cannot write it back.
const T0 = Date.parse('2026-11-06T09:00:00Z');
const clock = new ManualClock(T0);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;

async function school() {
  const base = await newSchool(node);
  const { tenant, call, events } = base;
  const user = (externalId: string, fullName: string, role = 'STUDENT', email: string | null = null) =>
    base.user(externalId, fullName, role, email ? { email, avatarUrl: 'https://img.example/a.png' } : {});
  const teacher = await user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await call('POST', '/public/meetings', { title: 'Chemistry', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role })).body.data;
  const exchange = async (token: string) => api(node, 'POST', '/join-tokens/exchange', { body: { token, deviceId: `dev-${Math.random()}` } });
  return { tenant, call, user, teacher, meeting, link, exchange, events };
}

t.test('a student deletes their account from a meeting session: out of the room, erased, the organization told once', async (t) => {
  const s = await school();
  const hostSession = (await s.exchange((await s.link(s.teacher.id, 'HOST')).token)).body.data;
  const host = await connect(t, hostSession.mediaUrl, hostSession.mediaToken);
  await host.type('joined');
  const amy = await s.user('s-amy', 'Amy Adams', 'STUDENT', 'amy@school.example');
  const spare = await s.link(amy.id); // minted before the deletion
  const session = (await s.exchange((await s.link(amy.id)).token)).body.data;
  const ws = await connect(t, session.mediaUrl, session.mediaToken);
  await ws.type('joined');
  t.match(await ws.command({ type: 'ask-question', text: 'What is a mole?' }), { ok: true });

  assertError(t, await api(node, 'DELETE', '/users/me'), 401, 'auth_missing');
  assertError(t, await api(node, 'DELETE', '/users/me', { bearer: s.tenant.key }), 401, 'session_invalid');

  const deleted = await api(node, 'DELETE', '/users/me', { bearer: session.accessToken });
  t.equal(deleted.status, 200);
  t.match(deleted.body.data, { userId: amy.id, externalId: 's-amy', status: 'DEACTIVATED', erasedAt: new Date(T0).toISOString() });
  t.equal((await ws.waitClosed()).code, 4003, 'out of the room (user_deactivated)');

  const [event] = await s.events('user.deactivated');
  t.match(event, { userId: amy.id, externalId: 's-amy', role: 'STUDENT', name: 'Deleted user', email: null, avatarUrl: null, status: 'DEACTIVATED' });
  t.match((await s.call('GET', `/public/users/${amy.id}`)).body.data, { fullName: 'Deleted user', email: null, avatarUrl: null, status: 'DEACTIVATED' });
  const [named] = await sql`select count(*)::int as n from meeting_sessions where user_id = ${amy.id} and display_name <> 'Deleted user'`;
  t.equal(named!.n, 0, 'their name is gone from their meeting sessions');
  assertError(t, await s.exchange(spare.token), 410, 'join_token_revoked');

  // the organization's backend syncs the old data again: the account stays erased, no event
  const upsert = await s.call('POST', '/public/users', { externalId: 's-amy', fullName: 'Amy Adams', role: 'STUDENT', email: 'amy@school.example' });
  t.equal(upsert.status, 200);
  t.match(upsert.body.data, { fullName: 'Deleted user', email: null });
  t.same(await s.events('user.updated'), []);

  // reports keep the numbers without the name
  t.match(await host.command({ type: 'end' }), { ok: true });
  const attendance = await s.call('GET', `/public/meetings/${s.meeting.id}/attendance`);
  t.ok(attendance.body.data.records.some((r: any) => r.user.id === amy.id && r.user.name === 'Deleted user' && r.durationSeconds >= 0));
  t.notOk(JSON.stringify(attendance.body).includes('Amy'), 'no trace of the name in attendance');
  const questions = await s.call('GET', `/public/meetings/${s.meeting.id}/questions`);
  t.match(questions.body.data.questions, [{ text: 'What is a mole?', askedBy: { id: amy.id, name: 'Deleted user' } }]);

  const again = await api(node, 'DELETE', '/users/me', { bearer: session.accessToken });
  t.equal(again.status, 200, 'deleting again answers the same');
  t.same(again.body, deleted.body, 'word for word, though the deletion revoked the session');
  t.equal((await s.events('user.deactivated')).length, 1, 'user.deactivated once');
});

t.test('an expired accessToken cannot delete an account', async (t) => {
  const s = await school();
  const ben = await s.user('s-ben', 'Ben Bell', 'STUDENT', 'ben@school.example');
  const session = (await s.exchange((await s.link(ben.id)).token)).body.data;
  clock.advance(2 * 60 * 60_000);
  assertError(t, await api(node, 'DELETE', '/users/me', { bearer: session.accessToken }), 401, 'session_expired');
  t.match((await s.call('GET', `/public/users/${ben.id}`)).body.data, { fullName: 'Ben Bell', status: 'ACTIVE' });
});

/**
 * Every accessToken route the session could call, answered as `refresh` answers it: the same status and
 * code, for the by-slug and the by-organization forms of the meeting routes.
 */
async function assertRefusedLikeRefresh(t: Test, s: Awaited<ReturnType<typeof school>>, accessToken: string, code: string) {
  const refresh = await api(node, 'POST', '/join-tokens/refresh', { bearer: accessToken });
  const status = refresh.status;
  assertError(t, refresh, status, code);
  const calls: [string, string, unknown?][] = [['DELETE', '/users/me']];
  for (const prefix of [`/meetings/${s.meeting.slug}`, `/orgs/${s.tenant.orgId}/meetings/${s.meeting.id}`]) {
    calls.push(['GET', `${prefix}/waiting-room/status/wr_none`], ['POST', `${prefix}/token`, { queueId: 'wr_none', deviceId: 'dev' }]);
  }
  for (const [method, path, body] of calls) {
    const res = await api(node, method, path, { bearer: accessToken, ...(body ? { body } : {}) });
    t.equal(res.status, status, `${method} ${path}: ${status}, as refresh`);
    t.equal(res.body.error?.code, code, `${method} ${path}: ${code}, as refresh`);
  }
}

t.test('after the organization deactivates the user, their old accessToken is refused as refresh refuses it, and erases nothing', async (t) => {
  const s = await school();
  const ben = await s.user('s-ben', 'Ben Bell', 'STUDENT', 'ben@school.example');
  const session = (await s.exchange((await s.link(ben.id)).token)).body.data;
  t.equal((await s.call('POST', `/public/users/${ben.id}/deactivate`)).status, 200);

  await assertRefusedLikeRefresh(t, s, session.accessToken, 'user_deactivated');
  t.match((await s.call('GET', `/public/users/${ben.id}`)).body.data, { fullName: 'Ben Bell', email: 'ben@school.example', status: 'DEACTIVATED' }, 'not erased');
  const [row] = await sql`select erased_at from users where id = ${ben.id}`;
  t.equal(row!.erasedAt, null);
  t.equal((await s.events('user.deactivated')).length, 1, 'the event of the deactivation only');
});

t.test('after a host removes them from the room, their old accessToken is refused as refresh refuses it, and erases nothing', async (t) => {
  const s = await school();
  const hostSession = (await s.exchange((await s.link(s.teacher.id, 'HOST')).token)).body.data;
  const host = await connect(t, hostSession.mediaUrl, hostSession.mediaToken);
  await host.type('joined');
  const cleo = await s.user('s-cleo', 'Cleo Cole', 'STUDENT', 'cleo@school.example');
  const session = (await s.exchange((await s.link(cleo.id)).token)).body.data;
  const ws = await connect(t, session.mediaUrl, session.mediaToken);
  const { participantId } = await ws.type('joined');
  t.match(await host.command({ type: 'remove', participantId }), { ok: true });
  t.equal((await ws.waitClosed()).code, 4001, 'removed from the room');

  await assertRefusedLikeRefresh(t, s, session.accessToken, 'session_revoked');
  t.match((await s.call('GET', `/public/users/${cleo.id}`)).body.data, { fullName: 'Cleo Cole', email: 'cleo@school.example', status: 'ACTIVE' }, 'not erased, not deactivated');
  t.same(await s.events('user.deactivated'), []);
});
