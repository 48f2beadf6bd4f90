import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { connect, goLive } from '../helpers/ws.ts';

// A waiting page whose socket opens after the host decided (admitted while the page was loading) hears
// the outcome at once instead of "waiting" forever.
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 'w-t', fullName: 'Wes Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 'w-s', fullName: 'Wyn Student', role: 'STUDENT' })).body.data;
const m = (await call('POST', '/public/meetings', { title: 'Late sockets', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T09:00:00Z', durationMinutes: 60, settings: { waitingRoom: true } })).body.data;
await goLive(t, node, tenant.key, m.id, teacher.id);

async function waitingSession() {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: student.id })).body.data;
  return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `w-${Math.random()}` } })).body.data;
}

for (const [action, outcome] of [['admit', 'admitted'], ['deny', 'denied']] as const) {
  t.test(`${action} first, socket after: it hears ${outcome} at once`, async (t) => {
    const s = await waitingSession();
    t.equal(s.waitingRoom.status, 'WAITING');
    t.equal((await call('POST', `/public/meetings/${m.id}/waiting-room/${s.waitingRoom.queueId}/${action}`)).status, 200);
    const ws = await connect(t, s.mediaUrl, s.accessToken);
    t.match(await ws.type('waiting'), { queueId: s.waitingRoom.queueId });
    t.match(await ws.type(outcome, 2000), { queueId: s.waitingRoom.queueId });
  });
}

t.test('a waiting page that leaves gives up its place', async (t) => {
  const s = await waitingSession();
  const ws = await connect(t, s.mediaUrl, s.accessToken);
  await ws.type('waiting');
  t.match(await ws.command({ type: 'leave' }), { ok: true, status: 'LEFT' });
  const status = await api(node, 'GET', `/meetings/${s.meeting.slug}/waiting-room/status/${s.waitingRoom.queueId}`, { bearer: s.accessToken });
  t.equal(status.body.data.status, 'LEFT');
  t.same(await ws.waitClosed(), { code: 4000, reason: 'left' }, 'and its socket closes as left');
});

t.test('a waiting socket may not give room commands', async (t) => {
  const s = await waitingSession();
  const ws = await connect(t, s.mediaUrl, s.accessToken);
  await ws.type('waiting');
  t.match(await ws.command({ type: 'raise-hand' }), { ok: false, error: { code: 'forbidden' } });
});

t.test('still waiting: the socket hears the outcome when it comes', async (t) => {
  const s = await waitingSession();
  const ws = await connect(t, s.mediaUrl, s.accessToken);
  await ws.type('waiting');
  await call('POST', `/public/meetings/${m.id}/waiting-room/${s.waitingRoom.queueId}/admit`);
  t.match(await ws.type('admitted', 2000), { queueId: s.waitingRoom.queueId });
});

t.test('a user deactivated while waiting is never let in: the status poll is refused and the entry leaves the host\'s list', async (t) => {
  const gone = (await call('POST', '/public/users', { externalId: `w-gone-${Math.random()}`, fullName: 'Gil Gone', role: 'STUDENT' })).body.data;
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: gone.id })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'gone-tab' } })).body.data;
  t.equal(s.waitingRoom.status, 'WAITING');
  const ws = await connect(t, s.mediaUrl, s.accessToken);
  await ws.type('waiting');

  t.equal((await call('POST', `/public/users/${gone.id}/deactivate`)).status, 200);
  t.match((await ws.waitClosed()).code, 4003, 'the waiting socket closes as user_deactivated');
  const status = await api(node, 'GET', `/meetings/${s.meeting.slug}/waiting-room/status/${s.waitingRoom.queueId}`, { bearer: s.accessToken });
  t.equal(status.status, 403);
  t.equal(status.body.error.code, 'user_deactivated', 'the status poll is refused');
  const admit = await call('POST', `/public/meetings/${m.id}/waiting-room/${s.waitingRoom.queueId}/admit`);
  t.match(admit.body, { error: { code: 'invalid_state' } }, 'the entry left the waiting room: an admit is refused');
  const token = await api(node, 'POST', `/meetings/${s.meeting.slug}/token`, { bearer: s.accessToken, body: { queueId: s.waitingRoom.queueId, deviceId: 'gone-tab' } });
  t.equal(token.body.error?.code, 'user_deactivated', 'nor get a room token');
});
