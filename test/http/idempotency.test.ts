import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { goLive } from '../helpers/ws.ts';
import { PURGE_EVERY_MS } from '../../actors/maintenance/maintenance.machine.ts';
import { lastActorWrite } from '../helpers/actor-state.ts';

const clock = new ManualClock(Date.parse('2026-04-01T12:00:00Z'));
const node = await startTestNode(t, { clock });
const tenant = await createTenant(node);
const key = tenant.key;
const sql = node.app.sql;
await api(node, 'POST', '/public/users', { key, body: { externalId: 'host', fullName: 'Host', role: 'TEACHER' } });
const body = (title: string) => ({ title, type: 'MEETING', hostUserId: 'host', scheduledStart: '2026-06-02T09:00:00Z', durationMinutes: 30 });
const post = (path: string, b: unknown, idem: string, k = key) => api(node, 'POST', path, { key: k, body: b, headers: { 'idempotency-key': idem } });
const countMeetings = async (title: string) => (await sql`select id from meetings where title = ${title}`).length;

t.test('the same key and body replay the first response with no second meeting', async (t) => {
  const a = await post('/public/meetings', body('Replay'), 'k-1');
  t.equal(a.status, 201);
  t.equal(a.headers.get('idempotent-replayed'), null);
  const b = await post('/public/meetings', body('Replay'), 'k-1');
  t.equal(b.status, 201);
  t.same(b.body, a.body);
  t.equal(b.headers.get('idempotent-replayed'), 'true');
  t.equal(await countMeetings('Replay'), 1);
  assertError(t, await post('/public/meetings', body('Different'), 'k-1'), 422, 'idempotency_key_reused');
  t.equal(await countMeetings('Different'), 0);
});

t.test('50 concurrent identical requests create exactly one meeting', async (t) => {
  const results = await Promise.all(Array.from({ length: 50 }, () => post('/public/meetings', body('Storm'), 'storm-key')));
  const statuses = results.map((r) => r.status);
  t.ok(statuses.every((s) => s === 201 || s === 409), `only 201 and 409: ${[...new Set(statuses)]}`);
  const ids = new Set(results.filter((r) => r.status === 201).map((r) => r.body.data.id));
  t.equal(ids.size, 1, 'every success names the same meeting');
  for (const r of results.filter((r) => r.status === 409)) t.equal(r.body.error.code, 'idempotency_in_progress');
  t.equal(await countMeetings('Storm'), 1);
  const [ev] = await sql<{ n: number }[]>`select count(*)::int as n from outbox where type = 'meeting.created' and data->>'title' = 'Storm'`;
  t.equal(ev!.n, 1, 'one meeting.created');
  const after = await post('/public/meetings', body('Storm'), 'storm-key');
  t.equal(after.status, 201, 'once done, a retry replays');
  t.ok(ids.has(after.body.data.id));
});

t.test('validation failures are not stored; handler refusals are', async (t) => {
  assertError(t, await post('/public/meetings', { title: 'Bad' }, 'k-valid'), 400, 'validation_failed');
  t.equal((await post('/public/meetings', body('Fixed'), 'k-valid')).status, 201, 'the key is free after a validation failure');
  const nf = await post('/public/meetings', { ...body('Ghost'), hostUserId: 'ghost' }, 'k-404');
  assertError(t, nf, 404, 'user_not_found');
  const again = await post('/public/meetings', { ...body('Ghost'), hostUserId: 'ghost' }, 'k-404');
  assertError(t, again, 404, 'user_not_found');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  assertError(t, await post('/public/meetings', body('Long'), 'x'.repeat(256)), 400, 'idempotency_key_invalid');
  assertError(t, await post('/public/meetings', body('Empty'), ''), 400, 'idempotency_key_invalid');
});

t.test('keys are scoped per API key and kept 24 hours', async (t) => {
  const second = await node.app.services.apiKeys.create(sql, { orgId: tenant.orgId, name: 'second', scopes: ['meetings:write'] });
  t.equal((await post('/public/meetings', body('Scoped'), 'shared')).status, 201);
  t.equal((await post('/public/meetings', body('Scoped'), 'shared', second.key)).status, 201);
  t.equal(await countMeetings('Scoped'), 2, 'another key, another request');
  clock.advance(24 * 3600_000 - 1000);
  t.equal((await post('/public/meetings', body('Scoped'), 'shared')).headers.get('idempotent-replayed'), 'true', 'still replayed before 24 hours');
  clock.advance(2000);
  const late = await post('/public/meetings', body('Scoped'), 'shared');
  t.equal(late.status, 201);
  t.equal(late.headers.get('idempotent-replayed'), null, 'after 24 hours the key runs anew');
  t.equal(await countMeetings('Scoped'), 3);
  // purged by the cluster's hourly retention run (actors/maintenance), on its durable timer
  await node.app.cluster.ask('maintenance:retention', { type: 'ENSURE' });
  clock.advance(PURGE_EVERY_MS);
  await node.app.timers.tick();
  const [{ expired }] = (await sql<{ expired: number }[]>`select count(*)::int as expired from idempotency_keys where expires_at <= ${new Date(clock.now())}`) as unknown as [{ expired: number }];
  t.equal(expired, 0, 'expired records are purged');
  t.equal((await sql`select 1 from idempotency_keys where key = 'shared'`).length, 1, 'the live one stays');
});

t.test('a replayed join link is the same token, stored only encrypted', async (t) => {
  const m = (await post('/public/meetings', body('Links'), 'links-m')).body.data;
  const a = await post(`/public/meetings/${m.id}/join-links`, { externalUserId: 'host' }, 'link-1');
  const b = await post(`/public/meetings/${m.id}/join-links`, { externalUserId: 'host' }, 'link-1');
  t.equal(a.status, 201);
  t.equal(b.status, 201, 'the first status');
  t.equal(b.body.data.token, a.body.data.token);
  t.equal(b.text, a.text, 'the first body, byte for byte (the mint route sends a hand-built envelope)');
  const rows = await sql<{ responseBody: Buffer }[]>`select response_body from idempotency_keys where key = 'link-1'`;
  t.equal(rows.length, 1);
  t.notOk(rows[0]!.responseBody.includes(Buffer.from(a.body.data.token)), 'the token is not stored in the clear');
  t.notOk(rows[0]!.responseBody.includes(Buffer.from('join')), 'nothing of the response is readable');
});

t.test('cancel, end, admit and deny: the actor commits its change and the stored answer in one transaction; a retry answers it with no second change', async (t) => {
  const events = async (type: string, field: string, value: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from outbox where type = ${type} and data->>${field} = ${value}`)[0]!.n;
  const student = (await post('/public/users', { externalId: 'waiting-student', fullName: 'Wren', role: 'STUDENT' }, 'student')).body.data;
  const waiting = (await post('/public/meetings', { ...body('Crash admissions'), settings: { waitingRoom: true } }, 'm-crash-room')).body.data;
  const queued = async () => {
    const link = (await post(`/public/meetings/${waiting.id}/join-links`, { userId: student.id }, `link-${Math.random()}`)).body.data;
    return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${Math.random()}` } })).body.data.waitingRoom.queueId as string;
  };
  const live = (await post('/public/meetings', body('Crash end'), 'm-crash-live')).body.data;
  await goLive(t, node, key, live.id, 'host');
  const cancelled = (await post('/public/meetings', body('Crash cancel'), 'm-crash-cancel')).body.data;
  const admitQueue = await queued();
  const denyQueue = await queued();

  const cases = [
    { name: 'cancel', actor: `meeting:${cancelled.id}`, path: `/public/meetings/${cancelled.id}/cancel`, event: () => events('meeting.cancelled', 'meetingId', cancelled.id) },
    { name: 'end', actor: `meeting:${live.id}`, path: `/public/meetings/${live.id}/end`, event: () => events('meeting.ended', 'meetingId', live.id) },
    { name: 'admit', actor: `waiting-room:${waiting.id}`, path: `/public/meetings/${waiting.id}/waiting-room/${admitQueue}/admit`, event: () => events('participant.admitted', 'meetingId', waiting.id) },
    { name: 'deny', actor: `waiting-room:${waiting.id}`, path: `/public/meetings/${waiting.id}/waiting-room/${denyQueue}/deny`, event: async () => 0 },
  ];
  for (const c of cases) {
    const first = await post(c.path, undefined, `crash-${c.name}`);
    t.equal(first.status, 200, `${c.name}: ${JSON.stringify(first.body)}`);
    // xmin names the transaction that wrote a row: the answer was stored by the one that committed the change
    const [answer] = await sql<{ state: string; tx: string }[]>`select state, xmin::text as tx from idempotency_keys where key = ${`crash-${c.name}`}`;
    const written = await lastActorWrite(sql, c.actor);
    t.equal(answer!.state, 'DONE', `${c.name}: answered`);
    // (not for end: it closes the host's socket, whose DISCONNECT writes the actor's state again)
    if (c.name !== 'end') t.equal(answer!.tx, written, `${c.name}: the answer committed in the actor's transaction`);
    const before = await c.event();
    const retry = await post(c.path, undefined, `crash-${c.name}`);
    t.equal(retry.status, 200);
    t.equal(retry.headers.get('idempotent-replayed'), 'true', `${c.name}: replayed`);
    t.same(retry.body, first.body, `${c.name}: the retry answers what the first did`);
    t.equal(await c.event(), before, `${c.name}: no second event`);
  }
  // a refusal is stored as any 4xx: cancelling the live meeting
  const refused = await post(`/public/meetings/${live.id}/cancel`, undefined, 'refused-cancel');
  t.equal(refused.status, 409);
  const again = await post(`/public/meetings/${live.id}/cancel`, undefined, 'refused-cancel');
  t.equal(refused.body.error.code, 'invalid_state');
  t.same(again.body.error, refused.body.error, 'the refusal replays');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
});
