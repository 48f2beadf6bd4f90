import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { LAST_USED_GRANULARITY_MS } from '../../src/services/api-keys.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, createTestDatabase, startTestNode, type Tenant } from '../helpers/node.ts';
import type { Node } from '../../src/server/node.ts';

// The console's API keys (docs/console-api.md): created, listed, revoked and rolled by an organization's
// owners and admins, on two nodes sharing Postgres and Redis, with time on a manual clock.
const clock = new ManualClock(Date.now());
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { clock, databaseUrl, redisPrefix });
const b = await startTestNode(t, { clock, databaseUrl, redisPrefix });
const PASSWORD = 'correct horse battery staple';

async function adminOf(node: Node, tenant: Tenant, email: string, role: 'owner' | 'admin') {
  const made = await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email, role, password: PASSWORD });
  const signed = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email, password: PASSWORD } })).body.data;
  return { id: made.id, email, bearer: signed.sessionToken as string };
}

const tenant = await createTenant(a);
const owner = await adminOf(a, tenant, 'owner@school.example', 'owner');
const admin = await adminOf(a, tenant, 'admin@school.example', 'admin');
const keysPath = `/orgs/${tenant.orgId}/api-keys`;
const create = (by: { bearer: string }, body: unknown, node: Node = a) => api(node, 'POST', keysPath, { bearer: by.bearer, body });
const list = async (node: Node = a) => (await api(node, 'GET', `${keysPath}?limit=100`, { bearer: owner.bearer })).body.data as any[];
const usersCall = (node: Node, key: string) => api(node, 'POST', '/public/users', { key, body: { externalId: `u-${randomBytes(3).toString('hex')}`, fullName: 'Someone', role: 'STUDENT' } });
const audit = async (q = '') => (await api(a, 'GET', `/orgs/${tenant.orgId}/audit-log${q}`, { bearer: owner.bearer })).body.data as any[];

t.test('POST /orgs/:orgId/api-keys answers the key once; it works on the public API of every node; the listing never shows it', async (t) => {
  const res = await create(admin, { name: 'LMS sync', scopes: ['users:write'] });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const k = res.body.data;
  t.match(k, { id: /^key_/, name: 'LMS sync', scopes: ['users:write'], status: 'ACTIVE', key: /^aula_sk_[A-Za-z0-9_-]{43}$/, lastUsedAt: null, revokedAt: null, expiresAt: null });
  t.equal(k.prefix, k.key.slice(0, 12));
  t.equal((await usersCall(b, k.key)).status, 201, 'the new key works on the other node');
  assertError(t, await api(a, 'GET', '/public/meetings', { key: k.key }), 403, 'insufficient_scope');

  const listing = await api(a, 'GET', keysPath, { bearer: owner.bearer });
  t.equal(listing.status, 200);
  t.notOk(listing.text.includes(k.key), 'the listing never holds the key');
  t.match(listing.body.data[0], { id: k.id, name: 'LMS sync', prefix: k.prefix, scopes: ['users:write'], createdAt: String, lastUsedAt: null, revokedAt: null, expiresAt: null });
  t.notOk('key' in listing.body.data[0]);

  const [entry] = await audit('?action=api_key.created');
  t.match(entry, { action: 'api_key.created', actor: { type: 'admin', id: admin.id, email: admin.email }, target: { type: 'api_key', id: k.id }, details: { name: 'LMS sync', prefix: k.prefix, scopes: ['users:write'] } });
  t.notOk(JSON.stringify(entry).includes(k.key), 'the audit entry never holds the key');
});

t.test('scopes and names are validated; an unknown scope is refused', async (t) => {
  for (const body of [
    { name: 'x', scopes: ['admin:all'] },
    { name: 'x', scopes: [] },
    { name: 'x', scopes: ['users:write', 'users:write'] },
    { name: '   ', scopes: ['users:write'] },
    { name: 'x' },
    { name: 'x', scopes: ['users:write'], orgId: 'org_other' },
  ]) {
    assertError(t, await create(owner, body), 400, 'validation_failed');
  }
});

t.test('DELETE /orgs/:orgId/api-keys/:id revokes the key at once on every node; again answers it unchanged', async (t) => {
  const k = (await create(owner, { name: 'to revoke', scopes: ['users:write'] })).body.data;
  t.equal((await usersCall(b, k.key)).status, 201, 'node b has the key cached');
  t.equal((await usersCall(a, k.key)).status, 201, 'node a too');
  const res = await api(a, 'DELETE', `${keysPath}/${k.id}`, { bearer: admin.bearer });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.data, { id: k.id, status: 'REVOKED', revokedAt: String });
  assertError(t, await usersCall(b, k.key), 401, 'api_key_revoked');
  assertError(t, await usersCall(a, k.key), 401, 'api_key_revoked');
  const again = await api(b, 'DELETE', `${keysPath}/${k.id}`, { bearer: owner.bearer });
  t.equal(again.status, 200);
  t.equal(again.body.data.revokedAt, res.body.data.revokedAt, 'revoking again changes nothing');
  const entries = (await audit('?action=api_key.revoked')).filter((e) => e.target.id === k.id);
  t.equal(entries.length, 1, 'one entry: the second revoke did nothing');
  t.match(entries[0], { actor: { type: 'admin', id: admin.id }, details: { name: 'to revoke', prefix: k.prefix } });
  assertError(t, await api(a, 'POST', `${keysPath}/${k.id}/roll`, { bearer: owner.bearer, body: { expiresInSeconds: 0 } }), 409, 'invalid_state');
});

t.test('roll with an overlap: the new key works now, the old one on every node until the overlap ends, then api_key_expired', async (t) => {
  const k = (await create(owner, { name: 'nightly export', scopes: ['users:write', 'meetings:read'] })).body.data;
  t.equal((await usersCall(a, k.key)).status, 201);
  t.equal((await usersCall(b, k.key)).status, 201, 'both nodes hold the old key');
  const rolled = await api(a, 'POST', `${keysPath}/${k.id}/roll`, { bearer: admin.bearer, body: { expiresInSeconds: 30 } });
  t.equal(rolled.status, 201, JSON.stringify(rolled.body));
  const fresh = rolled.body.data;
  t.match(fresh, { id: /^key_/, name: 'nightly export', scopes: ['users:write', 'meetings:read'], status: 'ACTIVE', key: /^aula_sk_/, rolledFrom: k.id });
  t.not(fresh.key, k.key);
  t.match(fresh.previous, { id: k.id, status: 'EXPIRING', replacedBy: fresh.id, expiresAt: new Date(clock.now() + 30_000).toISOString() });
  t.equal((await usersCall(b, fresh.key)).status, 201, 'the new key works');

  clock.advance(29_000);
  t.equal((await usersCall(a, k.key)).status, 201, 'the old key works during the overlap (a)');
  t.equal((await usersCall(b, k.key)).status, 201, 'the old key works during the overlap (b)');
  clock.advance(1_000);
  for (const node of [a, b]) {
    const d = assertError(t, await usersCall(node, k.key), 401, 'api_key_expired');
    t.equal(d.expiredAt, fresh.previous.expiresAt);
  }
  t.equal((await usersCall(a, fresh.key)).status, 201, 'the new key still works');

  const rows = await list();
  t.match(rows.find((r) => r.id === k.id), { status: 'EXPIRED', replacedBy: fresh.id });
  t.match(rows.find((r) => r.id === fresh.id), { status: 'ACTIVE', rolledFrom: k.id });
  const d = assertError(t, await api(a, 'POST', `${keysPath}/${k.id}/roll`, { bearer: owner.bearer, body: { expiresInSeconds: 60 } }), 409, 'invalid_state');
  t.match(d, { status: 'EXPIRED', replacedBy: fresh.id }, 'an old key is not rolled twice');

  const [entry] = (await audit('?action=api_key.rolled')).filter((e) => e.target.id === k.id);
  t.match(entry, { actor: { type: 'admin', id: admin.id }, details: { newKeyId: fresh.id, overlapSeconds: 30, oldExpiresAt: fresh.previous.expiresAt } });
  t.notOk(JSON.stringify(entry).includes(fresh.key) || JSON.stringify(entry).includes(k.key), 'no key in the entry');
});

t.test('roll with no overlap: the old key is refused at once on every node', async (t) => {
  const k = (await create(owner, { name: 'leaked', scopes: ['users:write'] })).body.data;
  t.equal((await usersCall(a, k.key)).status, 201);
  t.equal((await usersCall(b, k.key)).status, 201);
  const rolled = await api(b, 'POST', `${keysPath}/${k.id}/roll`, { bearer: owner.bearer, body: { expiresInSeconds: 0 } });
  t.equal(rolled.status, 201);
  assertError(t, await usersCall(a, k.key), 401, 'api_key_expired');
  assertError(t, await usersCall(b, k.key), 401, 'api_key_expired');
  t.equal((await usersCall(a, rolled.body.data.key)).status, 201);
  for (const expiresInSeconds of [-1, 7 * 24 * 3600 + 1, 1.5, '60']) {
    assertError(t, await api(a, 'POST', `${keysPath}/${rolled.body.data.id}/roll`, { bearer: owner.bearer, body: { expiresInSeconds } }), 400, 'validation_failed');
  }
  assertError(t, await api(a, 'POST', `${keysPath}/${rolled.body.data.id}/roll`, { bearer: owner.bearer, body: {} }), 400, 'validation_failed');
});

t.test('another organization\'s admin sees, revokes and rolls none of these keys', async (t) => {
  const k = (await create(owner, { name: 'ours', scopes: ['users:write'] })).body.data;
  const other = await createTenant(a);
  const theirs = await adminOf(a, other, 'admin@other.example', 'owner');
  assertError(t, await api(a, 'GET', keysPath, { bearer: theirs.bearer }), 403, 'org_mismatch');
  assertError(t, await api(a, 'POST', keysPath, { bearer: theirs.bearer, body: { name: 'x', scopes: ['users:write'] } }), 403, 'org_mismatch');
  assertError(t, await api(a, 'DELETE', `${keysPath}/${k.id}`, { bearer: theirs.bearer }), 403, 'org_mismatch');
  assertError(t, await api(a, 'POST', `${keysPath}/${k.id}/roll`, { bearer: theirs.bearer, body: { expiresInSeconds: 0 } }), 403, 'org_mismatch');
  assertError(t, await api(a, 'GET', `/orgs/${tenant.orgId}/audit-log`, { bearer: theirs.bearer }), 403, 'org_mismatch');
  // through their own organization's path, our key's id is unknown
  const mine = `/orgs/${other.orgId}/api-keys`;
  assertError(t, await api(a, 'DELETE', `${mine}/${k.id}`, { bearer: theirs.bearer }), 404, 'api_key_not_found');
  assertError(t, await api(a, 'POST', `${mine}/${k.id}/roll`, { bearer: theirs.bearer, body: { expiresInSeconds: 0 } }), 404, 'api_key_not_found');
  const listed = (await api(a, 'GET', mine, { bearer: theirs.bearer })).body.data as any[];
  t.notOk(listed.some((r) => r.id === k.id), 'not in their listing');
  t.equal((await usersCall(b, k.key)).status, 201, 'the key still works');
  // an API key is no credential for the admin surface, nor is none
  assertError(t, await api(a, 'GET', keysPath, { key: k.key }), 401, 'auth_malformed');
  assertError(t, await api(a, 'GET', keysPath), 401, 'admin_session_missing');
});

t.test('an owner and a plain admin may both create, list, revoke and roll keys', async (t) => {
  const byAdmin = (await create(admin, { name: 'by admin', scopes: ['meetings:read'] })).body.data;
  const byOwner = (await create(owner, { name: 'by owner', scopes: ['meetings:read'] })).body.data;
  t.equal((await api(a, 'DELETE', `${keysPath}/${byOwner.id}`, { bearer: admin.bearer })).status, 200, 'an admin revokes an owner\'s key');
  t.equal((await api(a, 'POST', `${keysPath}/${byAdmin.id}/roll`, { bearer: owner.bearer, body: { expiresInSeconds: 3600 } })).status, 201, 'an owner rolls an admin\'s key');
  t.equal((await api(a, 'GET', keysPath, { bearer: admin.bearer })).status, 200);
});

t.test('the listing pages with cursors, newest first', async (t) => {
  const all = await list();
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await api(a, 'GET', `${keysPath}?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { bearer: owner.bearer })).body;
    t.ok(page.data.length <= 3);
    seen.push(...page.data.map((r: any) => r.id));
    cursor = page.nextCursor;
  } while (cursor);
  t.same(seen, all.map((r) => r.id));
  t.same(seen, [...seen].sort().reverse(), 'newest first');
  assertError(t, await api(a, 'GET', `${keysPath}?cursor=nope`, { bearer: owner.bearer }), 400, 'validation_failed');
});

t.test('at most 100 working keys per organization: limit_reached', async (t) => {
  const other = await createTenant(a);
  const theirs = await adminOf(a, other, 'owner@many.example', 'owner');
  const path = `/orgs/${other.orgId}/api-keys`;
  // the tenant's own key counts: 99 more fill it
  for (let i = 0; i < 99; i++) t.equal((await api(a, 'POST', path, { bearer: theirs.bearer, body: { name: `k${i}`, scopes: ['users:read'] } })).status, 201);
  const d = assertError(t, await api(a, 'POST', path, { bearer: theirs.bearer, body: { name: 'one too many', scopes: ['users:read'] } }), 409, 'limit_reached');
  t.match(d, { limit: 100, count: 100, resource: 'api_keys' });
  const first = ((await api(a, 'GET', `${path}?limit=1`, { bearer: theirs.bearer })).body.data as any[])[0];
  await api(a, 'DELETE', `${path}/${first.id}`, { bearer: theirs.bearer });
  t.equal((await api(a, 'POST', path, { bearer: theirs.bearer, body: { name: 'after a revoke', scopes: ['users:read'] } })).status, 201, 'a revoked key frees a place');
});

t.test('last used: recorded off the request path, at most once a minute per key', async (t) => {
  // the nodes' 10-second flush stops here (it flushes once as it stops): this test flushes by itself
  await Promise.all([a.app.services.apiKeys.stop(), b.app.services.apiKeys.stop()]);
  const k = (await create(owner, { name: 'used', scopes: ['users:write'] })).body.data;
  const lastUsed = async () => (await list()).find((r) => r.id === k.id).lastUsedAt;
  const flush = () => Promise.all([a.app.services.apiKeys.flushUsage(), b.app.services.apiKeys.flushUsage()]);
  t.equal(await lastUsed(), null);
  const t0 = clock.now();
  t.equal((await usersCall(a, k.key)).status, 201);
  t.equal(await lastUsed(), null, 'the request itself wrote nothing');
  await flush();
  t.equal(await lastUsed(), new Date(t0).toISOString());

  clock.advance(30_000);
  for (let i = 0; i < 5; i++) t.equal((await usersCall(a, k.key)).status, 201);
  await flush();
  t.equal(await lastUsed(), new Date(t0).toISOString(), 'uses within the minute are not written');

  clock.advance(LAST_USED_GRANULARITY_MS - 30_000);
  t.equal((await usersCall(a, k.key)).status, 201);
  await flush();
  t.equal(await lastUsed(), new Date(t0 + LAST_USED_GRANULARITY_MS).toISOString(), 'a minute later it is');

  clock.advance(5_000);
  t.equal((await usersCall(b, k.key)).status, 201, 'another node notes its own uses');
  await flush();
  t.equal(await lastUsed(), new Date(t0 + LAST_USED_GRANULARITY_MS + 5_000).toISOString());
  await a.app.services.apiKeys.flushUsage();
  t.equal(await lastUsed(), new Date(t0 + LAST_USED_GRANULARITY_MS + 5_000).toISOString(), 'a flush with nothing new writes nothing');

  clock.advance(10_000);
  const held = clock.now();
  t.equal((await usersCall(a, k.key)).status, 201);
  await flush();
  t.equal(await lastUsed(), new Date(t0 + LAST_USED_GRANULARITY_MS + 5_000).toISOString(), 'node a wrote this key less than a minute ago: its use waits');
  clock.advance(LAST_USED_GRANULARITY_MS);
  await flush();
  t.equal(await lastUsed(), new Date(held).toISOString(), 'when the minute has passed it is written, with the time it was seen');
});

t.test('the console\'s cookie session: a change needs the session\'s X-CSRF-Token; an Idempotency-Key replay makes no second key', async (t) => {
  const signed = (await api(a, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: owner.email, password: PASSWORD } })).body.data;
  const cookie = { cookie: `aula_session=${signed.sessionToken}` };
  assertError(t, await api(a, 'POST', keysPath, { headers: cookie, body: { name: 'no csrf', scopes: ['users:read'] } }), 403, 'csrf_failed');
  assertError(t, await api(a, 'DELETE', `${keysPath}/${tenant.keyId}`, { headers: cookie }), 403, 'csrf_failed');
  assertError(t, await api(a, 'POST', `${keysPath}/${tenant.keyId}/roll`, { headers: cookie, body: { expiresInSeconds: 0 } }), 403, 'csrf_failed');
  t.equal((await usersCall(b, tenant.key)).status, 201, 'nothing happened to the key');
  t.equal((await api(a, 'GET', keysPath, { headers: cookie })).status, 200, 'a read needs no CSRF token');

  const headers = { ...cookie, 'x-csrf-token': signed.csrfToken, 'idempotency-key': `create-${randomBytes(4).toString('hex')}` };
  const first = await api(a, 'POST', keysPath, { headers, body: { name: 'once', scopes: ['users:read'] } });
  t.equal(first.status, 201);
  const again = await api(b, 'POST', keysPath, { headers, body: { name: 'once', scopes: ['users:read'] } });
  t.equal(again.status, 201);
  t.equal(again.body.data.id, first.body.data.id, 'the replay answers the same key');
  t.equal((await list()).filter((r) => r.name === 'once').length, 1, 'one key');
  t.equal((await audit('?action=api_key.created&limit=100')).filter((e) => e.target.id === first.body.data.id).length, 1, 'one entry');
});
