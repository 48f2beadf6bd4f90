import { parseTrustProxy } from '../../src/platform/client-address.ts';
import { createHash } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, startTestNode, type ApiResponse } from '../helpers/node.ts';

// The node's clock starts at the real time (rate-limit windows run on the real clock) and only moves
// in the last two tests. X-Forwarded-For is trusted so each test signs in from an address of its own.
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock, overrides: { AULA_TRUST_PROXY: parseTrustProxy('1') } });
const { app } = node;
const tenant = await createTenant(node, 'pro');
const PASSWORD = 'correct horse battery staple';

let ipSeq = 0;
const newIp = () => `203.0.113.${++ipSeq}`;

async function addAdmin(orgId: string, email: string, role: 'owner' | 'admin' = 'admin', password = PASSWORD) {
  return app.services.admins.create(app.sql, { orgId, email, role, password });
}

function signIn(body: Record<string, unknown>, ip = newIp()): Promise<ApiResponse> {
  return api(node, 'POST', '/auth/sign-in', { body, headers: { 'x-forwarded-for': ip } });
}

const cookieOf = (token: string) => ({ cookie: `aula_session=${token}` });

const owner = await addAdmin(tenant.orgId, 'Owner@Example.com', 'owner');

t.test('sign-in sets an HttpOnly SameSite cookie and answers the session', async (t) => {
  const res = await signIn({ orgId: tenant.orgId, email: '  OWNER@example.COM ', password: PASSWORD });
  t.equal(res.status, 200, JSON.stringify(res.body));
  const d = res.body.data;
  t.same(d.admin, { id: owner.id, email: 'owner@example.com', role: 'owner', orgId: tenant.orgId });
  t.match(d.sessionToken, /^aula_as_[A-Za-z0-9_-]{43}$/);
  t.match(d.csrfToken, /^[A-Za-z0-9_-]{43}$/);
  t.equal(Date.parse(d.expiresAt), clock.now() + 12 * 3600_000, '12 hours');
  const cookies = res.headers.getSetCookie();
  t.equal(cookies.length, 1);
  const parts = cookies[0]!.split('; ');
  t.equal(parts[0], `aula_session=${d.sessionToken}`);
  t.same(parts.slice(1).sort(), ['HttpOnly', 'Max-Age=43200', 'Path=/api/v1', 'SameSite=Lax'], 'no Secure on an http base URL');
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.ok(res.headers.get('x-ratelimit-limit'), 'the per-IP budget is reported');

  const me = await api(node, 'GET', '/auth/me', { headers: cookieOf(d.sessionToken) });
  t.equal(me.status, 200);
  t.same(me.body.data, { admin: d.admin, csrfToken: d.csrfToken, expiresAt: d.expiresAt }, 'a reloaded page gets the CSRF token again');

  const org = await api(node, 'GET', `/orgs/${tenant.orgId}`, { headers: cookieOf(d.sessionToken) });
  t.equal(org.status, 200);
  t.match(org.body.data, { id: tenant.orgId, plan: 'pro', features: ['webhooks'] });
  const viaBearer = await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer: d.sessionToken });
  t.same(viaBearer.body, org.body, 'the bearer token works the same');
});

t.test('unknown organization, unknown email and wrong password answer the same 401', async (t) => {
  const wrong = await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: 'not the password at all' });
  const started = performance.now();
  const unknown = await signIn({ orgId: tenant.orgId, email: 'nobody@example.com', password: PASSWORD });
  const unknownMs = performance.now() - started;
  const noOrg = await signIn({ orgId: 'org_00000000000000000000000000', email: 'owner@example.com', password: PASSWORD });
  for (const res of [wrong, unknown, noOrg]) {
    assertError(t, res, 401, 'invalid_credentials');
    t.same(res.headers.getSetCookie(), [], 'no cookie');
  }
  t.same(unknown.body.error, wrong.body.error, 'one message for both');
  t.same(noOrg.body.error, wrong.body.error);
  t.ok(unknownMs >= 20, `an unknown email still pays for an argon2 verification (${unknownMs.toFixed(1)} ms)`);
  assertError(t, await signIn({ orgId: tenant.orgId, email: 'owner@example.com' }), 400, 'validation_failed');
});

t.test('passwords are stored as argon2id PHC strings, tokens as SHA-256', async (t) => {
  const [row] = await app.sql<{ passwordHash: string }[]>`select password_hash from admins where id = ${owner.id}`;
  t.match(row!.passwordHash, /^\$argon2id\$v=19\$m=65536,t=3,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  t.notOk(row!.passwordHash.includes(PASSWORD));
  const res = await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD });
  const { sessionToken, csrfToken } = res.body.data;
  const [s] = await app.sql<{ tokenHash: Buffer; csrfTokenHash: Buffer }[]>`select token_hash, csrf_token_hash from admin_sessions
    where token_hash = ${createHash('sha256').update(sessionToken).digest()}`;
  t.ok(s, 'found by the hash of the token');
  t.same(s!.csrfTokenHash, createHash('sha256').update(csrfToken).digest());
  const dump = JSON.stringify(await app.sql`select * from admin_sessions`);
  t.notOk(dump.includes(sessionToken) || dump.includes(csrfToken), 'neither token is stored');
});

t.test('a disabled admin cannot sign in, and loses the sessions they had', async (t) => {
  const m = await addAdmin(tenant.orgId, 'leaver@example.com');
  const before = await signIn({ orgId: tenant.orgId, email: 'leaver@example.com', password: PASSWORD });
  t.equal(before.status, 200);
  t.equal(await app.services.admins.disable(app.sql, m.id), true);
  assertError(t, await signIn({ orgId: tenant.orgId, email: 'leaver@example.com', password: PASSWORD }), 403, 'admin_disabled');
  assertError(t, await signIn({ orgId: tenant.orgId, email: 'leaver@example.com', password: 'a wrong password!' }), 401, 'invalid_credentials');
  assertError(t, await api(node, 'GET', '/auth/me', { bearer: before.body.data.sessionToken }), 401, 'admin_session_revoked');
});

t.test('wrong passwords slow the address that sends them, never the owner elsewhere', async (t) => {
  await addAdmin(tenant.orgId, 'target@example.com');
  const attacker = newIp();
  for (let i = 0; i < 5; i++) {
    assertError(t, await signIn({ orgId: tenant.orgId, email: 'target@example.com', password: `guess number ${i}` }, attacker), 401, 'invalid_credentials');
  }
  const limited = await signIn({ orgId: tenant.orgId, email: 'TARGET@example.com', password: PASSWORD }, attacker);
  const d = assertError(t, limited, 429, 'rate_limited');
  t.equal(d.reason, 'address_failures');
  t.ok(Number(limited.headers.get('retry-after')) > 800, 'until the oldest failure is 15 minutes old');
  t.same(limited.headers.getSetCookie(), [], 'from that address even the right password waits');

  const owner = await signIn({ orgId: tenant.orgId, email: 'target@example.com', password: PASSWORD });
  t.equal(owner.status, 200, 'the owner, from another address, signs in at once');
  const again = await signIn({ orgId: tenant.orgId, email: 'target@example.com', password: 'one more guess' }, attacker);
  t.equal(again.status, 429, 'the attacker still waits');
});

t.test('an account under attack from many addresses gives each address one guess; the right password from a fresh one gets in', async (t) => {
  await addAdmin(tenant.orgId, 'besieged@example.com');
  const bots = Array.from({ length: 10 }, newIp);
  for (const bot of bots) {
    for (let i = 0; i < 2; i++) assertError(t, await signIn({ orgId: tenant.orgId, email: 'besieged@example.com', password: `bot guess ${i}` }, bot), 401, 'invalid_credentials');
  }
  const refused = await signIn({ orgId: tenant.orgId, email: 'besieged@example.com', password: 'bot guess 3' }, bots[0]);
  t.equal(assertError(t, refused, 429, 'rate_limited').reason, 'account_under_attack', 'twenty failures: a failed address waits after one');
  const fresh = newIp();
  assertError(t, await signIn({ orgId: tenant.orgId, email: 'besieged@example.com', password: 'new bot guess' }, fresh), 401, 'invalid_credentials');
  t.equal((await signIn({ orgId: tenant.orgId, email: 'besieged@example.com', password: 'and another' }, fresh)).status, 429, 'a new address gets one guess');
  t.equal((await signIn({ orgId: tenant.orgId, email: 'besieged@example.com', password: PASSWORD })).status, 200, 'the owner from an address that has not failed gets in');
});

t.test('the per-address budget counts every attempt over all accounts', async (t) => {
  const ip = newIp();
  for (let i = 0; i < 30; i++) {
    const res = await signIn({ orgId: tenant.orgId, email: `spray-${i}@example.com`, password: PASSWORD }, ip);
    t.equal(res.status, 401);
  }
  const blocked = await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD }, ip);
  t.equal(assertError(t, blocked, 429, 'rate_limited').limit, 30);
  t.equal(blocked.headers.get('x-ratelimit-remaining'), '0');
});

t.test('cookie sessions need X-CSRF-Token on mutations; bearer sessions do not', async (t) => {
  const a = (await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD })).body.data;
  assertError(t, await api(node, 'POST', '/auth/sign-out', { headers: cookieOf(a.sessionToken) }), 403, 'csrf_failed');
  assertError(t, await api(node, 'POST', '/auth/sign-out', { headers: { ...cookieOf(a.sessionToken), 'x-csrf-token': 'x'.repeat(43) } }), 403, 'csrf_failed');
  const b = (await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD })).body.data;
  assertError(t, await api(node, 'POST', '/auth/sign-out', { headers: { ...cookieOf(a.sessionToken), 'x-csrf-token': b.csrfToken } }), 403, 'csrf_failed'); // another session's token does not count
  t.equal((await api(node, 'GET', '/auth/me', { headers: cookieOf(a.sessionToken) })).status, 200, 'GET needs no CSRF header');

  const out = await api(node, 'POST', '/auth/sign-out', { headers: { ...cookieOf(a.sessionToken), 'x-csrf-token': a.csrfToken } });
  t.equal(out.status, 200);
  t.same(out.body.data, { signedOut: true });
  t.match(out.headers.getSetCookie()[0], /^aula_session=; HttpOnly; SameSite=Lax; Path=\/api\/v1; Max-Age=0$/);
  assertError(t, await api(node, 'GET', '/auth/me', { headers: cookieOf(a.sessionToken) }), 401, 'admin_session_revoked');
  assertError(t, await api(node, 'GET', '/auth/me', { bearer: a.sessionToken }), 401, 'admin_session_revoked');

  const bearerOut = await api(node, 'POST', '/auth/sign-out', { bearer: b.sessionToken });
  t.equal(bearerOut.status, 200, 'a bearer session signs out without the CSRF header');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer: b.sessionToken }), 401, 'admin_session_revoked');
});

t.test('missing, malformed and unknown admin credentials are distinct', async (t) => {
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`), 401, 'admin_session_missing');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { headers: { cookie: 'other=1; aula_session=' } }), 401, 'admin_session_missing');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { headers: cookieOf('garbage') }), 401, 'admin_session_invalid');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer: `aula_as_${'A'.repeat(43)}` }), 401, 'admin_session_invalid');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { key: tenant.key }), 401, 'auth_malformed');
  assertError(t, await api(node, 'GET', `/public/users`, { bearer: `aula_as_${'A'.repeat(43)}` }), 401, 'admin_session_invalid');
});

t.test('the admin surface checks the organization in the path', async (t) => {
  const other = await createOrg(app.sql, app.clock, { name: 'Elsewhere', plan: 'enterprise' });
  const s = (await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD })).body.data;
  const mismatch = await api(node, 'GET', `/orgs/${other.id}`, { bearer: s.sessionToken });
  assertError(t, mismatch, 403, 'org_mismatch');
  const missing = await api(node, 'GET', '/orgs/org_00000000000000000000000000', { bearer: s.sessionToken });
  t.same(missing.body.error, mismatch.body.error, 'the same answer whether the other organization exists or not');
  const cookie = await api(node, 'GET', `/orgs/${other.id}`, { headers: cookieOf(s.sessionToken) });
  assertError(t, cookie, 403, 'org_mismatch');
});

t.test('a signed-in admin calls the public API with the plan budget, counted apart from API keys', async (t) => {
  const admin = await addAdmin(tenant.orgId, 'ops@example.com', 'admin');
  const s = (await signIn({ orgId: tenant.orgId, email: 'ops@example.com', password: PASSWORD })).body.data;

  const created = await api(node, 'POST', '/public/users', { bearer: s.sessionToken, body: { externalId: 'by-admin', fullName: 'Made By Admin', role: 'TEACHER' } });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(created.headers.get('x-ratelimit-limit'), '3000', 'the pro plan budget');
  t.equal(created.headers.get('x-ratelimit-remaining'), '2999');

  const viaKey = await api(node, 'GET', '/public/users/by-admin', { key: tenant.key });
  t.equal(viaKey.status, 200, 'the same organization');
  t.equal(viaKey.headers.get('x-ratelimit-limit'), '3000');
  const keyRemaining = Number(viaKey.headers.get('x-ratelimit-remaining'));

  const again = await api(node, 'GET', '/public/users', { bearer: s.sessionToken });
  t.equal(again.status, 200);
  t.equal(again.headers.get('x-ratelimit-remaining'), '2998', 'the admin bucket, untouched by the key');
  const key2 = await api(node, 'GET', '/public/users', { key: tenant.key });
  t.equal(Number(key2.headers.get('x-ratelimit-remaining')), keyRemaining - 1, 'the key bucket, untouched by the admin');
  const prefix = app.config.AULA_REDIS_PREFIX;
  const buckets = await app.redis!.keys(`${prefix}rl:key:*`);
  t.ok(buckets.includes(`${prefix}rl:key:admin:${admin.id}:${tenant.orgId}`), 'bucket keyed per admin and organization');
  t.ok(buckets.includes(`${prefix}rl:key:${tenant.keyId}`), 'beside the key\'s own');

  const cookieOnly = await api(node, 'GET', '/public/users', { headers: cookieOf(s.sessionToken) });
  assertError(t, cookieOnly, 401, 'auth_missing');

  const idem = { 'idempotency-key': 'admin-op-1' };
  const first = await api(node, 'POST', '/public/users', { bearer: s.sessionToken, headers: idem, body: { externalId: 'idem-admin', fullName: 'I', role: 'STUDENT' } });
  const replay = await api(node, 'POST', '/public/users', { bearer: s.sessionToken, headers: idem, body: { externalId: 'idem-admin', fullName: 'I', role: 'STUDENT' } });
  t.equal(first.status, 201);
  t.equal(replay.headers.get('idempotent-replayed'), 'true', 'Idempotency-Key works for admins too');

  const free = await createTenant(node, 'free', ['users:read']);
  await addAdmin(free.orgId, 'ops@example.com', 'owner');
  const fs = (await signIn({ orgId: free.orgId, email: 'ops@example.com', password: PASSWORD })).body.data;
  const freeCall = await api(node, 'POST', '/public/meetings', {
    bearer: fs.sessionToken,
    body: { title: 'T', type: 'MEETING', hostUserId: 'nobody', scheduledStart: '2026-10-01T10:00:00Z', durationMinutes: 5 },
  });
  t.equal(freeCall.headers.get('x-ratelimit-limit'), '600', 'the free plan budget');
  t.not(freeCall.status, 403, 'every scope, unlike the org\'s read-only key');
});

t.test('Secure is added when the base URL is https', async (t) => {
  const https = await startTestNode(t, { overrides: { AULA_BASE_URL: 'https://aula.example.org' } });
  const org = await createOrg(https.app.sql, https.app.clock, { name: 'Secure School', plan: 'free' });
  await https.app.services.admins.create(https.app.sql, { orgId: org.id, email: 'a@example.org', role: 'owner', password: PASSWORD });
  t.equal(https.url, 'https://aula.example.org');
  const local = { ...https, url: `http://127.0.0.1:${https.port}` }; // the public address is behind a proxy that is not here
  const res = await api(local, 'POST', '/auth/sign-in', { body: { orgId: org.id, email: 'a@example.org', password: PASSWORD } });
  t.equal(res.status, 200);
  t.ok(res.headers.getSetCookie()[0]!.split('; ').includes('Secure'));
});

t.test('Secure in production whatever the base URL says (TLS ends at a proxy)', async (t) => {
  const prod = await startTestNode(t, { overrides: { AULA_ENV: 'production', AULA_MEDIA_WORKERS: 0 } });
  const org = await createOrg(prod.app.sql, prod.app.clock, { name: 'Prod School', plan: 'free' });
  await prod.app.services.admins.create(prod.app.sql, { orgId: org.id, email: 'p@example.org', role: 'owner', password: PASSWORD });
  t.match(prod.url, /^http:/);
  const res = await api(prod, 'POST', '/auth/sign-in', { body: { orgId: org.id, email: 'p@example.org', password: PASSWORD } });
  t.equal(res.status, 200);
  const attrs = res.headers.getSetCookie()[0]!.split('; ');
  for (const a of ['Secure', 'HttpOnly', 'SameSite=Lax']) t.ok(attrs.includes(a), a);
});

// Last: it moves the node's clock 12 hours on, and with it the sign-in failure window.
t.test('failures older than 15 minutes no longer count', async (t) => {
  await addAdmin(tenant.orgId, 'patient@example.com');
  const ip = newIp();
  for (let i = 0; i < 5; i++) await signIn({ orgId: tenant.orgId, email: 'patient@example.com', password: `guess ${i}` }, ip);
  t.equal((await signIn({ orgId: tenant.orgId, email: 'patient@example.com', password: PASSWORD }, ip)).status, 429);
  clock.advance(15 * 60_000);
  t.equal((await signIn({ orgId: tenant.orgId, email: 'patient@example.com', password: PASSWORD }, ip)).status, 200, 'after the window, the same address signs in');
});

t.test('sessions expire 12 hours after sign-in', async (t) => {
  const s = (await signIn({ orgId: tenant.orgId, email: 'owner@example.com', password: PASSWORD })).body.data;
  clock.advance(12 * 3600_000 - 1000);
  t.equal((await api(node, 'GET', '/auth/me', { bearer: s.sessionToken })).status, 200, 'still good a second before');
  clock.advance(1000);
  assertError(t, await api(node, 'GET', '/auth/me', { bearer: s.sessionToken }), 401, 'admin_session_expired');
  assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { headers: cookieOf(s.sessionToken) }), 401, 'admin_session_expired');
  assertError(t, await api(node, 'GET', '/public/users', { bearer: s.sessionToken }), 401, 'admin_session_expired');
});
