import { parseTrustProxy } from '../../src/platform/client-address.ts';
import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';

const node = await startTestNode(t);
const tenant = await createTenant(node);

t.test('GET /healthz and /readyz answer', async (t) => {
  const h = await api(node, 'GET', '/healthz');
  t.equal(h.status, 200);
  t.same(h.body, { data: { status: 'ok' } });
  const r = await api(node, 'GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { data: { status: 'ready', database: 'ok', redis: 'ok' } });
});

t.test('unknown routes and wrong methods get the error envelope', async (t) => {
  assertError(t, await api(node, 'GET', '/api/v1/nowhere'), 404, 'route_not_found');
  const res = await api(node, 'DELETE', '/public/users', { key: tenant.key });
  const d = assertError(t, res, 405, 'method_not_allowed');
  t.same(d.allowed.sort(), ['GET', 'POST']);
  t.equal(res.headers.get('allow'), 'POST, GET');
});

t.test('a trailing slash reaches the same route', async (t) => {
  const created = await api(node, 'POST', '/public/users/', { key: tenant.key, body: { externalId: 'slash-1', fullName: 'Sla Sh', role: 'STUDENT' } });
  t.equal(created.status, 201);
  const read = await api(node, 'GET', `/public/users/${created.body.data.id}/`, { key: tenant.key });
  t.equal(read.status, 200);
  t.equal(read.body.data.externalId, 'slash-1');
  const list = await api(node, 'GET', '/public/users/?limit=1', { key: tenant.key });
  t.equal(list.status, 200);
  t.equal(list.body.data.length, 1);
  assertError(t, await api(node, 'GET', '/api/v1/nowhere/'), 404, 'route_not_found');
  assertError(t, await api(node, 'DELETE', '/public/users/', { key: tenant.key }), 405, 'method_not_allowed');
});

t.test('request ids: taken from a trusted proxy, made otherwise, always returned', async (t) => {
  const fromClient = await api(node, 'GET', '/healthz', { headers: { 'x-request-id': 'client-abc.1' } });
  t.match(fromClient.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/, 'a client cannot choose the id its lines are logged under');
  const behindProxy = await startTestNode(t, { redis: false, overrides: { AULA_TRUST_PROXY: parseTrustProxy('1') } });
  const given = await api(behindProxy, 'GET', '/healthz', { headers: { 'x-request-id': 'lb-trace.1' } });
  t.equal(given.headers.get('x-request-id'), 'lb-trace.1', 'the proxy\'s trace id is kept');
  const made = await api(behindProxy, 'GET', '/api/v1/nope', { headers: { 'x-request-id': 'bad id with spaces' } });
  t.match(made.body.requestId, /^req_[0-9a-f]{32}$/, 'a malformed one is replaced');
  t.equal(made.headers.get('x-request-id'), made.body.requestId);
});

t.test('malformed JSON, wrong content type and oversized bodies are refused', async (t) => {
  const bad = await api(node, 'POST', '/public/users', { key: tenant.key, body: '{"externalId": ' });
  assertError(t, bad, 400, 'invalid_json');
  const ct = await api(node, 'POST', '/public/users', { key: tenant.key, body: 'externalId=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assertError(t, ct, 415, 'unsupported_media_type');
  const huge = await api(node, 'POST', '/public/users', { key: tenant.key, body: JSON.stringify({ externalId: 'x', fullName: 'y'.repeat(2 * 1024 * 1024), role: 'STUDENT' }) });
  const d = assertError(t, huge, 413, 'payload_too_large');
  t.equal(d.limitBytes, 1024 * 1024);
});

t.test('validation failures name the offending fields', async (t) => {
  const res = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 42, role: 'WIZARD', extra: true } });
  const d = assertError(t, res, 400, 'validation_failed');
  const fields = d.fields.map((f: { field: string }) => f.field).sort();
  t.same(fields, ['(root)', 'externalId', 'fullName', 'role']);
  t.ok(d.fields.every((f: { in: string }) => f.in === 'body'));
});

t.test('authentication failures are distinct', async (t) => {
  assertError(t, await api(node, 'GET', '/public/users'), 401, 'auth_missing');
  assertError(t, await api(node, 'GET', '/public/users', { headers: { authorization: 'Basic abc' } }), 401, 'auth_malformed');
  assertError(t, await api(node, 'GET', '/public/users', { key: 'aula_sk_short' }), 401, 'auth_malformed');
  assertError(t, await api(node, 'GET', '/public/users', { key: `aula_sk_${'A'.repeat(43)}` }), 401, 'api_key_invalid');
  const other = await createTenant(node, 'free', ['users:read']);
  assertError(t, await api(node, 'POST', '/public/users', { key: other.key, body: { externalId: 'a', fullName: 'A', role: 'STUDENT' } }), 403, 'insufficient_scope');
  t.equal((await api(node, 'GET', '/public/users', { key: other.key })).status, 200, 'read scope suffices for GET');
  await node.app.services.apiKeys.revoke(node.app.sql, other.keyId);
  assertError(t, await api(node, 'GET', '/public/users', { key: other.key }), 401, 'api_key_revoked');
  assertError(t, await api(node, 'GET', '/public/users', { key: other.key }), 401, 'api_key_revoked'); // again: the header was seen before
  assertError(t, await api(node, 'GET', '/public/users', { headers: { authorization: `bearer   ${other.key}` } }), 401, 'api_key_revoked'); // the same key written another way
});

t.test('every API response carries rate-limit headers', async (t) => {
  const res = await api(node, 'GET', '/public/users', { key: tenant.key });
  t.equal(res.headers.get('x-ratelimit-limit'), '3000');
  t.ok(Number(res.headers.get('x-ratelimit-remaining')) < 3000);
  t.ok(Number(res.headers.get('x-ratelimit-reset')) > Date.now() / 1000);
  const err = await api(node, 'GET', '/public/users/nobody', { key: tenant.key });
  t.equal(err.status, 404);
  t.ok(err.headers.get('x-ratelimit-remaining'), 'errors carry them too');
});
