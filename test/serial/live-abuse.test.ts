import t from 'tap';
import WebSocket from 'ws';
import { COMMAND_BUDGET } from '../../http/ws/gateway.ts';
import { MAILBOX_LIMIT } from '../../src/platform/runtime/actor-runtime.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { connect, eventually } from '../helpers/ws.ts';

// The room socket under abuse: a student flooding refused commands, a second socket of one session.
const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 's', fullName: 'Student', role: 'STUDENT' })).body.data;

async function session(meetingId: string, userId: string, role: string, deviceId = `d-${userId}-${Math.random()}`) {
  const link = (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role })).body.data;
  return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId } })).body.data;
}

t.test('a socket flooding 1,000 refused commands a second: refused at the edge, then closed; an API end stays fast', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Flood', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const hs = await session(m.id, teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(m.id, student.id, 'PARTICIPANT');
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken);
  await stu.type('joined');
  const events = node.app.actors.counts.events;

  // 1,000 commands a second, in 10 ms bursts of 10, for up to 3 seconds or until the server closes the socket.
  let sent = 0;
  const flood = setInterval(() => {
    for (let i = 0; i < 10 && stu.ws.readyState === stu.ws.OPEN; i++) stu.ws.send(JSON.stringify({ type: 'end', id: `f${++sent}` }));
  }, 10);
  t.teardown(() => clearInterval(flood));
  const started = performance.now();
  let slowest = 0;
  const pings: Promise<void>[] = [];
  // Meanwhile the host's commands and the API keep answering quickly.
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    pings.push(host.command({ type: 'ping' }).then(() => void (slowest = Math.max(slowest, performance.now() - t0))));
  }
  await Promise.all(pings);
  const closed = await stu.waitClosed(5000);
  clearInterval(flood);
  t.equal(closed.code, 1008, `the flooding socket is closed with the policy code (${sent} sent in ${Math.round(performance.now() - started)} ms)`);
  const acks = stu.messages.filter((x) => x.type === 'ack');
  const codes = new Set(acks.map((x) => x.error?.code));
  t.same([...codes].sort(), ['command_rate_limited', 'forbidden'], 'each was refused: forbidden by RoomAccess, then over the budget');
  t.ok(acks.filter((x) => x.error?.code === 'forbidden').length <= COMMAND_BUDGET.capacity / COMMAND_BUDGET.actorCost + 5, 'no more than the budget was looked at');
  await eventually(() => node.app.actors.counts.events > events);
  t.equal(node.app.actors.counts.events - events, 1, 'no refused command reached an actor (or the database): the one event is the closed socket\'s DISCONNECT');
  t.ok(slowest < 500, `the host's socket stayed responsive (slowest ping ${Math.round(slowest)} ms)`);

  const t0 = performance.now();
  const end = await call('POST', `/public/meetings/${m.id}/end`);
  const endMs = performance.now() - t0;
  t.equal(end.status, 200);
  t.equal(end.body.data.status, 'ENDED');
  t.ok(endMs < 1000, `the API end answered in ${Math.round(endMs)} ms`);
  t.equal((await host.waitClosed()).code, 4002);
});

/** An upgrade's refusal: its HTTP status, Retry-After and error code (or 101 when it opened). */
function upgradeAnswer(url: string): Promise<{ status: number; retryAfter: number | null; code: string | null }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('open', () => {
      ws.terminate();
      resolve({ status: 101, retryAfter: null, code: null });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: Number(res.headers['retry-after'] ?? NaN), code: JSON.parse(body).error?.code ?? null }));
    });
    ws.on('error', (err) => (err.message.includes('Unexpected server response') ? undefined : reject(err)));
  });
}

t.test('the budget is the session\'s: a flooder barred after its 1008, a reconnect that does not refill it', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Reconnect', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const hs = await session(m.id, teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');

  // Spend the burst on hands (actor commands), close, and come straight back: refused until it refills.
  const ss = await session(m.id, student.id, 'PARTICIPANT');
  const url = `${ss.mediaUrl}?token=${encodeURIComponent(ss.mediaToken)}&device=web`;
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken);
  await stu.type('joined');
  const acks = await Promise.all(Array.from({ length: 25 }, (_, i) => stu.command({ type: i % 2 ? 'lower-hand' : 'raise-hand' })));
  t.ok(acks.some((a) => a.error?.code === 'command_rate_limited'), 'the burst is spent');
  stu.close();
  await stu.waitClosed();
  const again = await upgradeAnswer(url);
  t.match(again, { status: 429, code: 'command_rate_limited' }, 'a reconnect right away is refused: the budget did not refill');
  t.equal(again.retryAfter, 1, 'Retry-After: a second (a join costs 10 tokens at 50 a second)');
  await new Promise((r) => setTimeout(r, again.retryAfter! * 1000));
  const back = await connect(t, ss.mediaUrl, ss.mediaToken);
  await back.type('joined');
  t.pass('after Retry-After it connects');

  // A flooder's socket closed with 1008: its session is barred for COMMAND_BUDGET.barredMs.
  const flood = setInterval(() => {
    for (let i = 0; i < 10 && back.ws.readyState === back.ws.OPEN; i++) back.ws.send(JSON.stringify({ type: 'raise-hand', id: `f${i}` }));
  }, 10);
  t.teardown(() => clearInterval(flood));
  t.equal((await back.waitClosed(5000)).code, 1008);
  clearInterval(flood);
  const barred = await upgradeAnswer(url);
  t.match(barred, { status: 429, code: 'command_rate_limited' }, 'the flooder may not come straight back');
  t.ok(barred.retryAfter! > 1 && barred.retryAfter! <= COMMAND_BUDGET.barredMs / 1000, `Retry-After ${barred.retryAfter} s`);
  const other = await session(m.id, teacher.id, 'HOST', 'another-device');
  t.equal((await upgradeAnswer(`${other.mediaUrl}?token=${encodeURIComponent(other.mediaToken)}&device=web`)).status, 101, 'other sessions are not affected');
});

t.test('one live socket per session: a second socket of the same session replaces the first', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Tabs', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const hs = await session(m.id, teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(m.id, student.id, 'PARTICIPANT');
  const first = await connect(t, ss.mediaUrl, ss.mediaToken);
  const { participantId } = await first.type('joined');
  const second = await connect(t, ss.mediaUrl, ss.mediaToken);
  t.equal((await second.type('joined')).participantId, participantId, 'the same participant');
  t.same(await first.waitClosed(), { code: 4005, reason: 'replaced' }, 'the older socket is closed as replaced');
  t.match(await second.command({ type: 'ping' }), { ok: true }, 'the new one works');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(second.closed, null, 'and stays open: the replaced socket closing is not a leave');
  const roster = await host.next((x) => x.type === 'roster' && x.participants.length === 2);
  t.ok(roster.participants.every((p: any) => p.connected), 'both participants are connected');
});

t.test('a bad frame is answered, not fatal', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Frames', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const hs = await session(m.id, teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  host.ws.send('{not json');
  t.match(await host.type('ack'), { ok: false, error: { code: 'invalid_json' } });
  t.match(await host.command({ type: 'produce', kind: 'audio' }), { ok: false, error: { code: 'validation_failed', details: { fields: [{ field: 'transportId' }] } } });
  t.match(await host.command({ type: 'no-such-command' }), { ok: false, error: { code: 'validation_failed' } });
  t.match(await host.command({ type: 'transport-create', direction: 'send' }), { ok: false, error: { code: 'media_not_ready' } }, 'signaling before media-join');
  t.match(await host.command({ type: 'ping' }), { ok: true });
});

t.test('the meeting actor\'s mailbox is bounded: past the limit, events are refused with room_busy at once', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Mailbox', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const hs = await session(m.id, teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const busy = node.app.actors.counts.busy;
  // Far more events at once than the mailbox holds (as many sockets at once would send).
  const outcomes = await Promise.all(
    Array.from({ length: MAILBOX_LIMIT * 3 }, () =>
      node.app.rooms.meeting.roomState(m.id).then(
        () => 'ok',
        (err: { code?: string }) => err.code,
      ),
    ),
  );
  const refused = outcomes.filter((o) => o === 'room_busy').length;
  t.ok(refused >= MAILBOX_LIMIT, `${refused} of ${outcomes.length} refused with room_busy`);
  t.ok(outcomes.filter((o) => o === 'ok').length >= MAILBOX_LIMIT - 1, 'the rest were answered');
  t.same([...new Set(outcomes)].sort(), ['ok', 'room_busy']);
  t.equal(node.app.actors.counts.busy - busy, refused);
  t.match(await host.command({ type: 'ask-unmute' }), { ok: true }, 'and the room answers again right after');
});
