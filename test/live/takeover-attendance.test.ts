import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { api, createTenant, createTestDatabase, startTestNode } from '../helpers/node.ts';
import { connect, eventually, goLive } from '../helpers/ws.ts';

// attendance.finalized is sent once per meeting even when the meeting's actor moves to another node
// between the end and the settle window, and when it moves after the report was final.
const MIN = 60_000;
const T0 = Date.parse('2026-11-03T09:00:00Z');
const clock = new ManualClock(T0 - 10 * MIN);
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const b = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const tenant = await createTenant(a, 'pro');
const key = tenant.key;
const finalized = (meetingId: string) => b.app.sql<{ data: any }[]>`select data from outbox where type = 'attendance.finalized' and data->>'meetingId' = ${meetingId}`;

t.test('settled on the node that takes over, once; a meeting already final is not sent again', async (t) => {
  await eventually(() => a.app.cluster.owned().size > 0 && b.app.cluster.owned().size > 0 && a.app.cluster.owned().size + b.app.cluster.owned().size === 64);
  const user = async (externalId: string, role: string) => (await api(a, 'POST', '/public/users', { key, body: { externalId, fullName: externalId, role } })).body.data;
  const teacher = await user('teacher', 'TEACHER');
  const student = await user('student', 'STUDENT');
  // two meetings whose actors live on node a
  const onA: any[] = [];
  for (let i = 0; i < 80 && onA.length < 2; i++) {
    const m = (await api(a, 'POST', '/public/meetings', { key, body: { title: `M${i}`, type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(T0).toISOString(), durationMinutes: 60 } })).body.data;
    if (a.app.cluster.owned().has(shardOf(`meeting:${m.id}`))) onA.push(m);
  }
  t.equal(onA.length, 2, 'two meetings owned by node a');
  const [first, second] = onA;

  const run = async (meeting: any, endAt: number) => {
    clock.set(endAt - 30 * MIN);
    const host = await goLive(t, a, key, meeting.id, teacher.id);
    const link = (await api(a, 'POST', `/public/meetings/${meeting.id}/join-links`, { key, body: { userId: student.id } })).body.data;
    const s = (await api(a, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${Math.random()}` } })).body.data;
    const ws = await connect(t, s.mediaUrl, s.mediaToken);
    await ws.type('joined');
    clock.set(endAt);
    t.equal((await api(a, 'POST', `/public/meetings/${meeting.id}/end`, { key })).status, 200);
    await host.waitClosed();
  };
  // the clock never passes the first's settle time (T0+35) before the test ticks: the timers' own
  // poll reads the same clock and would settle it early
  await run(first, T0 + 30 * MIN);
  await run(second, T0 + 34 * MIN);

  // the first settles on node a
  clock.set(T0 + 35 * MIN);
  await a.app.timers.tick();
  await eventually(async () => (await finalized(first.id)).length === 1);
  t.equal((await finalized(second.id)).length, 0);

  // node a goes away; node b takes its shards, with the second meeting's settle timer
  await a.close();
  await eventually(() => b.app.cluster.owned().size === 64);
  clock.set(T0 + 45 * MIN);
  await b.app.timers.tick();
  await eventually(async () => (await finalized(second.id)).length === 1);
  // a repeated timer for the meeting finalized on node a, now on node b
  await b.app.cluster.send(`meeting:${first.id}`, { type: 'TIMER', name: 'attendance-settle', at: T0 + 46 * MIN });
  await b.app.cluster.send(`meeting:${second.id}`, { type: 'TIMER', name: 'attendance-settle', at: T0 + 46 * MIN });
  t.equal((await finalized(first.id)).length, 1, 'the first: once');
  t.equal((await finalized(second.id)).length, 1, 'the second: once');
  const [row] = await finalized(second.id);
  t.match(row!.data, { meetingId: second.id, summary: { total: 2, present: 2, late: 0, absent: 0 }, finalizedAt: new Date(T0 + 45 * MIN).toISOString() });
  const report = (await api(b, 'GET', `/public/meetings/${first.id}/attendance`, { key })).body.data;
  t.match(report, { status: 'FINAL', finalizedAt: new Date(T0 + 35 * MIN).toISOString(), summary: { total: 2, present: 2 } });
});
