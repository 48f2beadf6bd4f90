import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, school as newSchool, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { connect, eventually, type RoomClient } from '../helpers/ws.ts';

// Attendance through the real room: stays recorded by the meeting actor as people join, drop, come back
// and leave; a PROVISIONAL report the moment the class ends; FINAL, and attendance.finalized once, when
// the settle window (a durable timer, driven here by the injected clock) has passed.
const T0 = Date.parse('2026-11-02T09:00:00Z');
const MIN = 60_000;
const clock = new ManualClock(T0 - 30 * MIN);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;
const PASSWORD = 'correct horse battery staple';

async function school() {
  const { tenant, call, user } = await newSchool(node);
  const teacher = await user('t-1', 'Tina Teacher', 'TEACHER');
  const cls = (await call('POST', '/public/classes', { externalId: 'alg-1', name: 'Algebra', section: 'A' })).body.data;
  const enroll = (u: { id: string }) => call('POST', `/public/classes/${cls.id}/enrollments`, { userId: u.id });
  const session = async (meetingId: string, userId: string, role = 'PARTICIPANT') => {
    const link = (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role })).body.data;
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${Math.random()}` } });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    return r.body.data as { mediaUrl: string; mediaToken: string };
  };
  const enter = async (s: { mediaUrl: string; mediaToken: string }): Promise<RoomClient> => {
    const c = await connect(t, s.mediaUrl, s.mediaToken);
    await c.type('joined');
    return c;
  };
  const leave = async (c: RoomClient) => {
    c.ws.send(JSON.stringify({ type: 'leave' }));
    await c.waitClosed();
  };
  const classMeeting = async (title: string, start = T0) =>
    (await call('POST', '/public/meetings', { title, type: 'CLASS', classId: cls.id, hostUserId: teacher.id, scheduledStart: new Date(start).toISOString(), durationMinutes: 60 })).body.data;
  return { tenant, call, user, teacher, cls, enroll, session, enter, leave, classMeeting };
}

const finalized = (orgId: string) => sql<{ data: any }[]>`select data from outbox where org_id = ${orgId} and type = 'attendance.finalized' order by id`;
const byExt = (report: any) => Object.fromEntries(report.records.map((r: any) => [r.user.externalId, r]));

t.test('a class: on time, late, a dropped connection, a short absence, a short visit and a no-show, reconciled', async (t) => {
  clock.set(T0 - 30 * MIN);
  const s = await school();
  const [alice, bob, carol, dave, eve] = [
    await s.user('s-alice', 'Alice Ahn'),
    await s.user('s-bob', 'Bob Brown'),
    await s.user('s-carol', 'Carol Cruz'),
    await s.user('s-dave', 'Dave Diaz'),
    await s.user('s-eve', 'Eve Evans'),
  ];
  for (const u of [alice, bob, carol, dave, eve]) t.equal((await s.enroll(u)).status, 201);
  const meeting = await s.classMeeting('Algebra, week 1');
  assertError(t, await s.call('GET', `/public/meetings/${meeting.id}/attendance`), 409, 'invalid_state');

  clock.set(T0);
  const host = await s.enter(await s.session(meeting.id, s.teacher.id, 'HOST'));
  const aliceSession = await s.session(meeting.id, alice.id);
  const aliceWs = await s.enter(aliceSession);
  const eveWs = await s.enter(await s.session(meeting.id, eve.id));
  clock.set(T0 + 2 * MIN);
  const carolWs = await s.enter(await s.session(meeting.id, carol.id));

  // Alice's connection drops and comes back within the reconnect grace: one stay, no leave.
  aliceWs.ws.terminate();
  await eventually(async () => (await sql`select 1 from actor_timers where name like 'reconnect:%'`).length > 0);
  clock.set(T0 + 3 * MIN);
  await s.enter(aliceSession);

  clock.set(T0 + 7 * MIN);
  await s.leave(carolWs); // five minutes, then gone
  clock.set(T0 + 15 * MIN);
  const bobWs = await s.enter(await s.session(meeting.id, bob.id)); // late
  clock.set(T0 + 20 * MIN);
  await s.leave(eveWs); // out for a minute and back: within the merge gap
  clock.set(T0 + 21 * MIN);
  await s.enter(await s.session(meeting.id, eve.id));

  // while live: provisional, counted up to now
  clock.set(T0 + 30 * MIN);
  const live = (await s.call('GET', `/public/meetings/${meeting.id}/attendance`)).body.data;
  t.match(live, { meetingId: meeting.id, status: 'PROVISIONAL', endedAt: null, finalizedAt: null, attendanceSessionId: /^att_/ });
  t.equal(byExt(live)['s-alice'].durationSeconds, 30 * 60);

  clock.set(T0 + 60 * MIN);
  host.ws.send(JSON.stringify({ type: 'end' }));
  await host.waitClosed();
  await bobWs.waitClosed();

  const provisional = await s.call('GET', `/public/meetings/${meeting.id}/attendance`);
  t.equal(provisional.status, 200);
  const report = provisional.body.data;
  t.match(report, {
    meetingId: meeting.id,
    kind: 'CLASS',
    classId: s.cls.id,
    externalClassId: 'alg-1',
    status: 'PROVISIONAL',
    startedAt: new Date(T0).toISOString(),
    endedAt: new Date(T0 + 60 * MIN).toISOString(),
    finalizedAt: null,
    summary: { total: 6, present: 3, late: 1, absent: 2 },
  });
  const r = byExt(report);
  t.match(r['s-alice'], { status: 'PRESENT', durationSeconds: 3600, joinedAt: new Date(T0).toISOString(), leftAt: new Date(T0 + 60 * MIN).toISOString() });
  t.equal(r['s-alice'].intervals.length, 1, 'a reconnect within the grace is one stay');
  t.match(r['s-bob'], { status: 'LATE', durationSeconds: 45 * 60, joinedAt: new Date(T0 + 15 * MIN).toISOString() });
  t.match(r['s-carol'], { status: 'ABSENT', durationSeconds: 5 * 60 }, 'five minutes of sixty is below the share');
  t.match(r['s-dave'], { status: 'ABSENT', durationSeconds: 0, joinedAt: null, leftAt: null, intervals: [] }, 'enrolled, never came');
  t.match(r['s-eve'], { status: 'PRESENT', durationSeconds: 3600, intervals: [{ joinedAt: new Date(T0).toISOString(), leftAt: new Date(T0 + 60 * MIN).toISOString() }] }, 'a one-minute gap is merged');
  t.match(r['t-1'], { status: 'PRESENT', user: { name: 'Tina Teacher', role: 'TEACHER' } });
  t.same(report.records.map((x: any) => x.user.name), ['Alice Ahn', 'Bob Brown', 'Carol Cruz', 'Dave Diaz', 'Eve Evans', 'Tina Teacher'], 'by name');

  // CSV: the same records
  const csv = await fetch(`${node.url}/api/v1/public/meetings/${meeting.id}/attendance`, { headers: { authorization: `Bearer ${s.tenant.key}`, accept: 'text/csv' } });
  t.equal(csv.status, 200);
  t.match(csv.headers.get('content-type'), /^text\/csv/);
  const lines = (await csv.text()).trimEnd().split('\r\n');
  t.equal(lines[0], 'meetingId,externalMeetingId,attendanceSessionId,reportStatus,userId,externalUserId,name,role,status,durationSeconds,joinedAt,leftAt,intervals');
  t.equal(lines.length, 7);
  t.match(lines[2], new RegExp(`^"${meeting.id}",,"att_\\w+","PROVISIONAL","${bob.id}","s-bob","Bob Brown","STUDENT","LATE",2700,`), 'every text field quoted');

  // the settle window: five minutes after the end, nothing before
  clock.set(T0 + 64 * MIN);
  await node.app.timers.tick();
  t.equal((await finalized(s.tenant.orgId)).length, 0, 'not final before the settle window');
  clock.set(T0 + 65 * MIN);
  await node.app.timers.tick();
  await eventually(async () => (await finalized(s.tenant.orgId)).length > 0);
  const sent = await finalized(s.tenant.orgId);
  t.equal(sent.length, 1, 'attendance.finalized once');
  t.match(sent[0]!.data, {
    meetingId: meeting.id,
    externalMeetingId: null,
    kind: 'CLASS',
    classId: s.cls.id,
    externalClassId: 'alg-1',
    attendanceSessionId: report.attendanceSessionId,
    finalizedAt: new Date(T0 + 65 * MIN).toISOString(),
    summary: { total: 6, present: 3, late: 1, absent: 2 },
  });
  t.match(byExt(sent[0]!.data)['s-bob'], { user: { id: bob.id, externalId: 's-bob', name: 'Bob Brown', role: 'STUDENT' }, status: 'LATE', durationSeconds: 2700, joinedAt: new Date(T0 + 15 * MIN).toISOString(), leftAt: new Date(T0 + 60 * MIN).toISOString() });

  const final = (await s.call('GET', `/public/meetings/${meeting.id}/attendance`)).body.data;
  t.match(final, { status: 'FINAL', finalizedAt: new Date(T0 + 65 * MIN).toISOString(), summary: report.summary, attendanceSessionId: report.attendanceSessionId });
  t.same(final.records, report.records, 'the final report is the provisional one, kept');

  // the timer is gone, and a repeated TIMER finds the report already written
  t.equal((await sql`select 1 from actor_timers where actor_id = ${`meeting:${meeting.id}`} and name = 'attendance-settle'`).length, 0);
  await node.app.cluster.send(`meeting:${meeting.id}`, { type: 'TIMER', name: 'attendance-settle', at: T0 + 70 * MIN });
  t.equal((await finalized(s.tenant.orgId)).length, 1, 'still once');

  // the class's attendance over a range, and each student's counts
  const byClass = (await s.call('GET', `/public/classes/alg-1/attendance?from=${encodeURIComponent(new Date(T0 - MIN).toISOString())}&to=${encodeURIComponent(new Date(T0 + MIN).toISOString())}`)).body.data;
  t.match(byClass, { classId: s.cls.id, externalClassId: 'alg-1', sessions: [{ meetingId: meeting.id, status: 'FINAL' }] });
  t.match(byClass.students.find((x: any) => x.user.externalId === 's-bob'), { total: 1, late: 1, present: 0, absent: 0, durationSeconds: 2700 });
  const none = (await s.call('GET', `/public/classes/alg-1/attendance?from=${encodeURIComponent(new Date(T0 + MIN).toISOString())}`)).body.data;
  t.same(none.sessions, [], 'no session began in the range');
});

t.test("an organization's own rules: lateness, share, merge gap and settle window", async (t) => {
  clock.set(T0 + 24 * 60 * MIN - 30 * MIN);
  const s = await school();
  await node.app.services.admins.create(sql, { orgId: s.tenant.orgId, email: 'admin@school.example', role: 'admin', password: PASSWORD });
  const bearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: s.tenant.orgId, email: 'admin@school.example', password: PASSWORD } })).body.data.sessionToken as string;
  const defaults = (await api(node, 'GET', `/orgs/${s.tenant.orgId}`, { bearer })).body.data.attendanceRules;
  t.same(defaults, { lateAfterMinutes: 10, presentShare: 0.5, mergeGapSeconds: 120, settleMinutes: 5 });
  const patched = await api(node, 'PATCH', `/orgs/${s.tenant.orgId}`, { bearer, body: { attendanceRules: { lateAfterMinutes: 2, settleMinutes: 30 } } });
  t.same(patched.body.data.attendanceRules, { lateAfterMinutes: 2, presentShare: 0.5, mergeGapSeconds: 120, settleMinutes: 30 }, 'the rules given change, the others stay');
  const again = await api(node, 'PATCH', `/orgs/${s.tenant.orgId}`, { bearer, body: { attendanceRules: { presentShare: 0.9 } } });
  t.same(again.body.data.attendanceRules, { lateAfterMinutes: 2, presentShare: 0.9, mergeGapSeconds: 120, settleMinutes: 30 });
  for (const bad of [{ presentShare: 1.5 }, { lateAfterMinutes: -1 }, { settleMinutes: 2.5 }, { unknown: 1 }]) {
    assertError(t, await api(node, 'PATCH', `/orgs/${s.tenant.orgId}`, { bearer, body: { attendanceRules: bad } }), 400, 'validation_failed');
  }

  const day2 = T0 + 24 * 60 * MIN;
  const ann = await s.user('s-ann', 'Ann Ames');
  await s.enroll(ann);
  const meeting = await s.classMeeting('Algebra, week 2', day2);
  clock.set(day2);
  const host = await s.enter(await s.session(meeting.id, s.teacher.id, 'HOST'));
  clock.set(day2 + 3 * MIN);
  const annWs = await s.enter(await s.session(meeting.id, ann.id));
  clock.set(day2 + 50 * MIN);
  await s.leave(annWs);
  clock.set(day2 + 60 * MIN);
  host.ws.send(JSON.stringify({ type: 'end' }));
  await host.waitClosed();
  const report = (await s.call('GET', `/public/meetings/${meeting.id}/attendance`)).body.data;
  t.match(byExt(report)['s-ann'], { status: 'ABSENT', durationSeconds: 47 * 60 }, '47 of 60 minutes is below a 0.9 share');

  clock.set(day2 + 89 * MIN);
  await node.app.timers.tick();
  t.equal((await finalized(s.tenant.orgId)).length, 0, 'a 30-minute settle window');
  clock.set(day2 + 90 * MIN);
  await node.app.timers.tick();
  await eventually(async () => (await finalized(s.tenant.orgId)).length === 1);
});

t.test('a class across three sessions: two FINAL reports read together, one still PROVISIONAL, and each student\'s counts', async (t) => {
  const week = 7 * 24 * 60 * MIN;
  const base = T0 + 10 * week;
  clock.set(base - 30 * MIN);
  const s = await school();
  const [eli, fay] = [await s.user('s-eli', 'Eli Ekman'), await s.user('s-fay', 'Fay Ford')];
  for (const u of [eli, fay]) await s.enroll(u);
  const lesson = async (n: number, fayComes: boolean, end: boolean) => {
    const start = base + n * week;
    const meeting = await s.classMeeting(`Algebra, lesson ${n + 1}`, start);
    clock.set(start);
    const host = await s.enter(await s.session(meeting.id, s.teacher.id, 'HOST'));
    const eliWs = await s.enter(await s.session(meeting.id, eli.id));
    const fayWs = fayComes ? await s.enter(await s.session(meeting.id, fay.id)) : null;
    clock.set(start + 60 * MIN);
    if (!end) return meeting;
    await s.leave(eliWs);
    if (fayWs) await s.leave(fayWs);
    host.ws.send(JSON.stringify({ type: 'end' }));
    await host.waitClosed();
    clock.set(start + 66 * MIN);
    await node.app.timers.tick();
    return meeting;
  };
  await lesson(0, true, true);
  await lesson(1, false, true);
  await lesson(2, true, false); // live: provisional
  await eventually(async () => (await finalized(s.tenant.orgId)).length === 2);
  const report = (await s.call('GET', `/public/classes/${s.cls.id}/attendance`)).body.data;
  t.same(report.sessions.map((x: any) => [x.title, x.status]), [
    ['Algebra, lesson 1', 'FINAL'],
    ['Algebra, lesson 2', 'FINAL'],
    ['Algebra, lesson 3', 'PROVISIONAL'],
  ]);
  // the two students, and the teacher who came to each
  t.same(report.sessions.map((x: any) => x.summary), [
    { total: 3, present: 3, late: 0, absent: 0 },
    { total: 3, present: 2, late: 0, absent: 1 },
    { total: 3, present: 3, late: 0, absent: 0 },
  ]);
  t.same(report.students.map((x: any) => [x.user.externalId, x.total, x.present, x.absent]), [
    ['s-eli', 3, 3, 0],
    ['s-fay', 3, 2, 1],
    ['t-1', 3, 3, 0],
  ]);
});

t.test('bad requests get the error envelope', async (t) => {
  const s = await school();
  assertError(t, await s.call('GET', '/public/meetings/mtg_nope/attendance'), 404, 'meeting_not_found');
  assertError(t, await s.call('GET', '/public/classes/nope/attendance'), 404, 'class_not_found');
  assertError(t, await s.call('GET', `/public/classes/${s.cls.id}/attendance?from=yesterday`), 400, 'validation_failed');
  assertError(t, await s.call('GET', `/public/classes/${s.cls.id}/attendance?from=2026-11-02T10:00:00Z&to=2026-11-02T09:00:00Z`), 400, 'validation_failed');
  assertError(t, await s.call('GET', `/public/classes/${s.cls.id}/attendance?week=1`), 400, 'validation_failed');
  const readOnlyUsers = await createTenant(node, 'pro', ['users:read']);
  assertError(t, await api(node, 'GET', `/public/classes/${s.cls.id}/attendance`, { key: readOnlyUsers.key }), 403, 'insufficient_scope');
});

t.test('usage per UTC day: meetings started, participant minutes cut at midnight, peak concurrent people, the plan beside them', async (t) => {
  const D = Date.parse('2026-11-10T00:00:00Z');
  clock.set(D + 9 * 60 * MIN);
  const s = await school();
  const [amy, ben] = [await s.user('u-amy', 'Amy'), await s.user('u-ben', 'Ben')];
  const meeting = async (title: string, start: number) =>
    (await s.call('POST', '/public/meetings', { title, type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(start).toISOString(), durationMinutes: 90 })).body.data;
  const morning = await meeting('Morning', D + 10 * 60 * MIN);
  const late = await meeting('Late', D + 23 * 60 * MIN + 30 * MIN);

  // 10:00-10:30: the teacher and Amy all along, Ben from 10:10: 80 minutes, three at once
  clock.set(D + 10 * 60 * MIN);
  const h1 = await s.enter(await s.session(morning.id, s.teacher.id, 'HOST'));
  await s.enter(await s.session(morning.id, amy.id));
  clock.set(D + 10 * 60 * MIN + 10 * MIN);
  await s.enter(await s.session(morning.id, ben.id));
  clock.set(D + 10 * 60 * MIN + 30 * MIN);
  h1.ws.send(JSON.stringify({ type: 'end' }));
  await h1.waitClosed();

  // 23:30-00:30: the teacher and Amy, across midnight: 60 minutes on each day, two at once
  clock.set(D + 23 * 60 * MIN + 30 * MIN);
  const h2 = await s.enter(await s.session(late.id, s.teacher.id, 'HOST'));
  await s.enter(await s.session(late.id, amy.id));
  clock.set(D + 24 * 60 * MIN + 30 * MIN);
  h2.ws.send(JSON.stringify({ type: 'end' }));
  await h2.waitClosed();

  const usage = await s.call('GET', '/public/usage?from=2026-11-09&to=2026-11-12');
  t.equal(usage.status, 200);
  t.match(usage.body.data, { from: '2026-11-09', to: '2026-11-12', plan: 'pro', limits: { maxLiveMeetings: 200, maxParticipants: 500, maxMeetingMinutes: 720 } });
  t.same(usage.body.data.days, [
    { date: '2026-11-09', meetings: 0, participantMinutes: 0, peakConcurrentParticipants: 0 },
    { date: '2026-11-10', meetings: 2, participantMinutes: 140, peakConcurrentParticipants: 3 },
    { date: '2026-11-11', meetings: 0, participantMinutes: 60, peakConcurrentParticipants: 2 },
  ]);
  t.same(usage.body.data.totals, { meetings: 2, participantMinutes: 200, peakConcurrentParticipants: 3 });
  const byDefault = (await s.call('GET', '/public/usage')).body.data;
  t.equal(byDefault.days.length, 30, 'the last 30 days by default');
  t.equal(byDefault.to, '2026-11-12', 'ending with today');

  assertError(t, await s.call('GET', '/public/usage?from=2026-11-12&to=2026-11-10'), 400, 'validation_failed');
  assertError(t, await s.call('GET', '/public/usage?from=2025-01-01&to=2026-11-10'), 400, 'validation_failed');
  assertError(t, await s.call('GET', '/public/usage?from=2026-13-01'), 400, 'validation_failed');
  assertError(t, await s.call('GET', '/public/usage?month=11'), 400, 'validation_failed');
});
