import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { joinLinkJson } from '../../http/join-link-json.ts';
import { Tokens } from '../../src/services/tokens.ts';
import { api, createTenant, startTestNode, TEST_SECRET } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { goLive } from '../helpers/ws.ts';

const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
const node = await startTestNode(t, { clock });
const tenant = await createTenant(node);
const linksOnlyKey = (await node.app.services.apiKeys.create(node.app.sql, { orgId: tenant.orgId, name: 'links', scopes: ['join-links:write'] })).key;
const key = tenant.key;

async function user(externalId: string, role = 'STUDENT', org = tenant) {
  const r = await api(node, 'POST', '/public/users', { key: org.key, body: { externalId, fullName: `Name ${externalId}`, role, email: `${externalId}@school.test` } });
  return r.body.data as { id: string; externalId: string };
}
async function meeting(extra: Record<string, unknown> = {}, org = tenant) {
  const host = await user(`host-${Math.random().toString(36).slice(2)}`, 'TEACHER', org);
  const r = await api(node, 'POST', '/public/meetings', {
    key: org.key,
    body: { title: 'Algebra', type: 'MEETING', hostUserId: host.id, scheduledStart: new Date(clock.now() + 3_600_000).toISOString(), durationMinutes: 60, ...extra },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.data as { id: string; slug: string; externalId: string | null };
}
const mint = (meetingId: string, body: Record<string, unknown>, k = key) => api(node, 'POST', `/public/meetings/${meetingId}/join-links`, { key: k, body });
const exchange = (token: string, deviceId = 'tab-1') => api(node, 'POST', '/join-tokens/exchange', { body: { token, deviceId } });
const refresh = (accessToken: string) => api(node, 'POST', '/join-tokens/refresh', { bearer: accessToken });

const student = await user('s-1');
const teacher = await user('t-1', 'TEACHER');

t.test('POST /public/meetings/:id/join-links mints a link with the defaults', async (t) => {
  const m = await meeting({ externalId: 'alg-101' });
  const r = await mint('alg-101', { externalUserId: 's-1' });
  t.equal(r.status, 201);
  const link = r.body.data;
  t.same(Object.keys(link).sort(), ['embedUrl', 'expiresAt', 'role', 'singleUse', 'token', 'url', 'userId']);
  t.match(link, { role: 'PARTICIPANT', singleUse: true, userId: student.id, expiresAt: '2026-03-02T08:05:00.000Z' });
  t.match(link.token, /^jt_[A-Za-z0-9_-]{60,}$/);
  t.equal(link.url, `${node.url}/join/${m.slug}#jt=${link.token}`);
  t.equal(new URL(link.embedUrl).searchParams.get('jt'), link.token);
  const other = await mint(m.id, { userId: student.id, expiresInSeconds: 86_400, singleUse: false, role: 'VIEWER', displayName: 'Z', redirectUrl: 'https://lms.example/done' });
  t.match(other.body.data, { role: 'VIEWER', singleUse: false, expiresAt: '2026-03-03T08:00:00.000Z' });
  t.not(other.body.data.token, link.token);
});

t.test('the mint response is exactly JSON.stringify of the envelope, escapes included', async (t) => {
  const base = { url: 'https://aula.example/join/abc#jt=jt_x', embedUrl: 'https://aula.example/embed/abc?jt=jt_x', token: 'jt_x', expiresAt: '2026-03-02T08:05:00.000Z', role: 'HOST' as const, singleUse: false, userId: 'usr_1' };
  const odd = ['plain', 'with "quotes"', 'back\\slash', 'tab\there', 'nul\u0000', 'é and 🎓', 'lone \ud800 surrogate', '\u2028 line separator', ''];
  for (const v of odd) {
    for (const field of ['url', 'embedUrl', 'token', 'expiresAt', 'userId'] as const) {
      const link = { ...base, [field]: v };
      if (joinLinkJson(link) !== JSON.stringify({ data: link })) t.fail(`${field} = ${JSON.stringify(v)}`);
    }
  }
  t.equal(joinLinkJson(base), JSON.stringify({ data: base }));
  for (const head of ['https://a"b/join/abc#jt=', 'https://a\\b/embed?jt=', 'https://\u0001/join#jt=']) {
    const link = { ...base, url: `${head}${base.token}`, embedUrl: `${head}${base.token}` };
    t.equal(joinLinkJson(link), JSON.stringify({ data: link }), `a URL ending with the token: ${JSON.stringify(head)}`);
  }
  const m = await meeting();
  const r = await mint(m.id, { userId: student.id, displayName: 'Zoë "Z" \\ O\'Brien', redirectUrl: 'https://school.example/after?x="1"' });
  t.equal(r.status, 201);
  t.equal(r.text, JSON.stringify({ data: r.body.data }), 'what the route sent');
});

t.test('join-link request rules', async (t) => {
  const m = await meeting();
  const bad = async (body: Record<string, unknown>, field: string, message?: string) => {
    const d = assertError(t, await mint(m.id, body), 400, 'validation_failed');
    t.ok(d.fields.some((f: { field: string }) => f.field === field), `names ${field}`);
    if (message) t.same(d.fields.filter((f: { field: string }) => f.field === field).map((f: { message: string }) => f.message), [message], `one clear message: ${message}`);
  };
  await bad({}, 'userId');
  await bad({ userId: student.id, externalUserId: 's-1' }, 'userId');
  await bad({ userId: student.id, expiresInSeconds: 86_401 }, 'expiresInSeconds');
  await bad({ userId: student.id, expiresInSeconds: 0 }, 'expiresInSeconds');
  await bad({ userId: student.id, expiresInSeconds: 1.5 }, 'expiresInSeconds');
  await bad({ userId: student.id, redirectUrl: 'http://lms.example/' }, 'redirectUrl', 'must be an https URL');
  await bad({ userId: student.id, redirectUrl: 'javascript:alert(1)' }, 'redirectUrl', 'must be an https URL');
  await bad({ userId: student.id, role: 'OWNER' }, 'role');
  await bad({ userId: student.id, displayName: '' }, 'displayName');
  assertError(t, await mint(m.id, { userId: 'nobody' }), 404, 'user_not_found');
  assertError(t, await mint('mtg_nope', { userId: student.id }), 404, 'meeting_not_found');
});

t.test('the room role is capped by the organization role and the key scope', async (t) => {
  const m = await meeting();
  t.equal((await mint(m.id, { userId: student.id, role: 'HOST' })).body.data.role, 'HOST', 'meetings:write may make a student host');
  t.equal((await mint(m.id, { userId: student.id })).body.data.role, 'PARTICIPANT', 'never host unless asked');
  const d = assertError(t, await mint(m.id, { userId: student.id, role: 'COHOST' }, linksOnlyKey), 403, 'role_not_allowed');
  t.same(d, { role: 'COHOST', userRole: 'STUDENT' });
  t.equal((await mint(m.id, { userId: student.id, role: 'VIEWER' }, linksOnlyKey)).status, 201);
  t.equal((await mint(m.id, { userId: teacher.id, role: 'HOST' }, linksOnlyKey)).body.data.role, 'HOST', 'teachers may host');
  const lm = m;
  assertError(t, await api(node, 'POST', `/public/meetings/${lm.id}/join-links`, { key: (await createTenant(node, 'pro', ['users:write'])).key, body: { userId: 'x' } }), 403, 'insufficient_scope');
});

t.test('POST /join-tokens/exchange returns the meeting session', async (t) => {
  const m = await meeting({ settings: { muteOnEntry: true, lectureMode: true } });
  const link = (await mint(m.id, { userId: student.id, displayName: 'Zed', redirectUrl: 'https://lms.example/after' })).body.data;
  const r = await exchange(link.token);
  t.equal(r.status, 200);
  const s = r.body.data;
  t.same(Object.keys(s).sort(), ['accessToken', 'expiresAt', 'mediaToken', 'mediaUrl', 'meeting', 'redirectUrl', 'role', 'tokenType', 'user', 'waitingRoom']);
  t.match(s, {
    tokenType: 'Bearer',
    expiresAt: '2026-03-02T09:00:00.000Z',
    mediaUrl: `${node.url.replace('http', 'ws')}/api/v1/meetings/${m.slug}/media`,
    role: 'PARTICIPANT',
    waitingRoom: null,
    meeting: { id: m.id, kind: 'MEETING', slug: m.slug, title: 'Algebra', status: 'SCHEDULED', orgId: tenant.orgId, settings: { muteOnEntry: true, lectureMode: true, allowStudentScreenShare: true, recordAutomatically: false } },
    user: { id: student.id, externalId: 's-1', displayName: 'Zed' },
    redirectUrl: 'https://lms.example/after',
  });
  t.match(s.accessToken, /^sat_/);
  t.match(s.mediaToken, /^mrt_/);
  assertError(t, await api(node, 'GET', '/public/users', { bearer: s.accessToken }), 401, 'auth_malformed');
});

t.test('a single-use link: join_token_used elsewhere, a reload on the same device resumes', async (t) => {
  const m = await meeting();
  const link = (await mint(m.id, { userId: student.id })).body.data;
  const first = await exchange(link.token, 'tab-A');
  t.equal(first.status, 200);
  assertError(t, await exchange(link.token, 'tab-B'), 409, 'join_token_used');
  clock.advance(10 * 60_000);
  const reload = await exchange(link.token, 'tab-A');
  t.equal(reload.status, 200, 'the same tab reloads after the link expired');
  t.equal(reload.body.data.user.id, student.id);
  const [count] = await node.app.sql<{ n: number }[]>`select count(*)::int as n from meeting_sessions where jti in (select jti from join_token_uses where device_id = 'tab-A')`;
  t.equal(count!.n, 1, 'one session, resumed');

  const multi = (await mint(m.id, { userId: student.id, singleUse: false })).body.data;
  t.equal((await exchange(multi.token, 'phone')).status, 200);
  t.equal((await exchange(multi.token, 'laptop')).status, 200, 'a multi-use link opens on several devices');
});

t.test('one single-use link exchanged at once from ten devices: one session, nine join_token_used', async (t) => {
  const m = await meeting();
  const link = (await mint(m.id, { userId: student.id })).body.data;
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => exchange(link.token, `tab-${i}`)));
  const winner = answers.findIndex((r) => r.status === 200);
  t.equal(answers.filter((r) => r.status === 200).length, 1);
  for (const r of answers.filter((r) => r.status !== 200)) assertError(t, r, 409, 'join_token_used');
  const again = await Promise.all(Array.from({ length: 5 }, () => exchange(link.token, `tab-${winner}`)));
  t.same(new Set(again.map((r) => r.status)), new Set([200]), 'the winning device reloads, five times at once');
  t.same(new Set(again.map((r) => r.body.data.user.id)), new Set([student.id]));
  const [n] = await node.app.sql<{ n: number }[]>`select count(*)::int as n from meeting_sessions s
    join join_token_uses u on u.session_id = s.id and u.jti = s.jti and u.device_id = ${`tab-${winner}`} where s.meeting_id = ${m.id}`;
  t.equal(n!.n, 1, 'the spend names the winning session');
  const [total] = await node.app.sql<{ n: number }[]>`select count(*)::int as n from meeting_sessions where meeting_id = ${m.id}`;
  t.equal(total!.n, 1, 'one session in all');
});

t.test('an exchange racing a deactivation: refused, no session left behind', async (t) => {
  const m = await meeting();
  const u = await user('s-racing');
  const link = (await mint(m.id, { userId: u.id })).body.data;
  const sql = node.app.sql;
  let answer: Awaited<ReturnType<typeof exchange>> | undefined;
  await sql.begin(async (tx) => {
    // Hold the user's row as a deactivation does, and let the exchange read it ACTIVE and come to its insert.
    await tx`select 1 from users where id = ${u.id} for update`;
    const pending = exchange(link.token).then((r) => (answer = r));
    for (let i = 0; ; i++) {
      const [w] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like '%join_token_uses%'`;
      if (w!.n > 0) break;
      if (i > 500) throw new Error('the exchange never waited on the user row');
      await new Promise((r) => setTimeout(r, 10));
    }
    t.equal(answer, undefined, 'the exchange waits for the deactivation to commit');
    await tx`update users set status = 'DEACTIVATED', deactivated_at = now(), revoked_before = now() where id = ${u.id}`;
    void pending;
  });
  for (let i = 0; !answer && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
  assertError(t, answer!, 410, 'join_token_revoked');
  const [n] = await sql<{ n: number }[]>`select count(*)::int as n from meeting_sessions where user_id = ${u.id}`;
  t.equal(n!.n, 0, 'no session for a deactivated user');
  const [spent] = await sql<{ n: number }[]>`select count(*)::int as n from join_token_uses where device_id = 'tab-1' and session_id not in (select id from meeting_sessions)`;
  t.equal(spent!.n, 0, 'and no spend without a session');
});

t.test('join_token_expired, join_token_invalid', async (t) => {
  const m = await meeting();
  const link = (await mint(m.id, { userId: student.id, expiresInSeconds: 120 })).body.data;
  clock.advance(120_001);
  const d = assertError(t, await exchange(link.token), 410, 'join_token_expired');
  t.type(d.expiredAt, 'string');
  const fresh = (await mint(m.id, { userId: student.id, expiresInSeconds: 120 })).body.data;
  clock.advance(119_000);
  t.equal((await exchange(fresh.token)).status, 200, 'just before expiry works');

  assertError(t, await exchange('jt_garbage'), 401, 'join_token_invalid');
  const tampered = fresh.token.slice(0, 20) + (fresh.token[20] === 'A' ? 'B' : 'A') + fresh.token.slice(21);
  assertError(t, await exchange(tampered), 401, 'join_token_invalid');
  const d2 = assertError(t, await exchange(''), 400, 'validation_failed');
  t.equal(d2.fields[0].field, 'token');
});

t.test('deactivation revokes links (join_token_revoked) and sessions (user_deactivated)', async (t) => {
  const m = await meeting();
  const u = await user('s-leaving');
  const used = (await mint(m.id, { userId: u.id })).body.data;
  const session = (await exchange(used.token, 'tab-1')).body.data;
  const unused = (await mint(m.id, { userId: u.id, singleUse: false })).body.data;
  t.equal((await refresh(session.accessToken)).status, 200);
  t.equal((await api(node, 'POST', `/public/users/${u.id}/deactivate`, { key })).status, 200);
  assertError(t, await exchange(unused.token), 410, 'join_token_revoked');
  assertError(t, await exchange(used.token, 'tab-1'), 410, 'join_token_revoked');
  assertError(t, await refresh(session.accessToken), 403, 'user_deactivated');
  assertError(t, await mint(m.id, { userId: u.id }), 403, 'user_deactivated');
});

t.test('not_a_member: a token for a user outside the organization', async (t) => {
  const m = await meeting();
  const outsider = await user('outsider', 'STUDENT', await createTenant(node));
  const forged = new Tokens(TEST_SECRET).join.issue({ o: tenant.orgId, m: m.id, u: outsider.id, r: 'PARTICIPANT', n: null, i: clock.now(), e: clock.now() + 60_000, s: true, d: null });
  assertError(t, await exchange(forged), 403, 'not_a_member');
});

t.test('meeting_ended: cancelled or ended meetings refuse links, exchanges and refreshes', async (t) => {
  const m = await meeting();
  const link = (await mint(m.id, { userId: student.id, singleUse: false })).body.data;
  const session = (await exchange(link.token)).body.data;
  t.equal((await api(node, 'POST', `/public/meetings/${m.id}/cancel`, { key })).status, 200);
  assertError(t, await exchange(link.token), 410, 'meeting_ended');
  assertError(t, await refresh(session.accessToken), 410, 'meeting_ended');
  assertError(t, await mint(m.id, { userId: student.id }), 410, 'meeting_ended');

  const live = await meeting();
  const l2 = (await mint(live.id, { userId: student.id, singleUse: false })).body.data;
  await goLive(t, node, key, live.id, teacher.id);
  t.equal((await exchange(l2.token)).status, 200, 'a LIVE meeting admits');
  t.equal((await api(node, 'POST', `/public/meetings/${live.id}/end`, { key })).status, 200);
  assertError(t, await exchange(l2.token), 410, 'meeting_ended');
});

t.test('POST /join-tokens/refresh for 24 hours after the exchange', async (t) => {
  const m = await meeting();
  const link = (await mint(m.id, { userId: teacher.id })).body.data;
  const s0 = (await exchange(link.token)).body.data;
  clock.advance(2 * 3600_000);
  const s1 = await refresh(s0.accessToken);
  t.equal(s1.status, 200, 'an expired accessToken still refreshes within the window');
  t.not(s1.body.data.accessToken, s0.accessToken);
  t.equal(s1.body.data.user.id, teacher.id);
  clock.advance(21 * 3600_000 + 59 * 60_000);
  const s2 = await refresh(s1.body.data.accessToken);
  t.equal(s2.status, 200);
  t.equal(s2.body.data.expiresAt, new Date(Date.parse(s0.expiresAt) - 3600_000 + 24 * 3600_000).toISOString(), 'the last token ends with the window');
  clock.advance(2 * 60_000);
  assertError(t, await refresh(s2.body.data.accessToken), 401, 'session_expired');
  assertError(t, await refresh('sat_nope'), 401, 'session_invalid');
  assertError(t, await api(node, 'POST', '/join-tokens/refresh'), 401, 'auth_missing');
  assertError(t, await api(node, 'POST', '/join-tokens/refresh', { bearer: key }), 401, 'session_invalid');
});

t.test('a waiting room: the exchange queues the user with a null mediaToken', async (t) => {
  const m = await meeting({ settings: { waitingRoom: true } });
  const s = (await exchange((await mint(m.id, { userId: student.id })).body.data.token)).body.data;
  t.equal(s.mediaToken, null);
  t.match(s.waitingRoom, { queueId: /^wr_/, status: 'WAITING' });
  const host = (await exchange((await mint(m.id, { userId: teacher.id, role: 'HOST' })).body.data.token)).body.data;
  t.equal(host.waitingRoom, null, 'hosts skip the waiting room');
  t.match(host.mediaToken, /^mrt_/);
  const again = await refresh(s.accessToken);
  t.same(again.body.data.waitingRoom, s.waitingRoom, 'refresh keeps the queue entry');
  const [ev] = await node.app.sql<{ data: any }[]>`select data from outbox where type = 'participant.waiting' and data->>'queueId' = ${s.waitingRoom.queueId}`;
  t.match(ev!.data, { meetingId: m.id, kind: 'MEETING', user: { id: student.id, externalId: 's-1', email: 's-1@school.test', role: 'STUDENT' }, admittedAt: null, admittedBy: null });
  t.type(ev!.data.requestedAt, 'string');
});

t.test('access is a standing condition: a withdrawn invitation ends refresh', async (t) => {
  const m = await meeting({ access: { mode: 'INVITED' } });
  const guest = await user('s-invited');
  t.equal((await api(node, 'POST', `/public/meetings/${m.id}/invitations`, { key, body: { userIds: [guest.id] } })).status, 200);
  const s = (await exchange((await mint(m.id, { userId: guest.id })).body.data.token)).body.data;
  t.equal((await refresh(s.accessToken)).status, 200);
  t.equal((await api(node, 'DELETE', `/public/meetings/${m.id}/invitations/${guest.id}`, { key })).status, 200);
  assertError(t, await refresh(s.accessToken), 403, 'not_invited');
});

t.test('externalUserId matches external ids only', async (t) => {
  const m = await meeting();
  assertError(t, await mint(m.id, { externalUserId: student.id }), 404, 'user_not_found');
  t.equal((await mint(m.id, { userId: 's-1' })).body.data.userId, student.id, 'userId takes either');
});

// Last: it spends this IP's exchange and refresh budgets.
t.test('exchange is limited to 300 per minute per IP, refresh to 120', async (t) => {
  let last = null as Awaited<ReturnType<typeof exchange>> | null;
  for (let i = 0; i < 301; i++) last = await exchange('jt_x');
  const d = assertError(t, last!, 429, 'rate_limited');
  t.equal(d.limit, 300);
  t.ok(d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= 60);
  t.equal(last!.headers.get('retry-after'), String(d.retryAfterSeconds));
  t.equal(last!.headers.get('x-ratelimit-remaining'), '0');
  let r = null as Awaited<ReturnType<typeof refresh>> | null;
  for (let i = 0; i < 121; i++) r = await refresh('sat_x');
  t.equal(assertError(t, r!, 429, 'rate_limited').limit, 120);
});
