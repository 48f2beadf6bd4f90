import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { iso, ManualClock } from '../../src/core/clock.ts';
import { newId } from '../../src/platform/ids.ts';
import { EVENT_TYPES } from '../../src/platform/outbox.ts';
import { webhookRoutes } from '../../http/routes/webhooks.ts';
import { deliveryDetail, deliveryRecord, eventEnvelope, webhookRecord, webhookWithSecret } from '../../http/schemas/webhooks.ts';
import { insertAttempt } from '../../src/services/webhooks/envelope.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';
import { assertError } from '../helpers/assert.ts';
import { Receiver } from '../helpers/receiver.ts';
import { api, createTenant, startTestNode, type ApiResponse, type Tenant } from '../helpers/node.ts';

// Starts at the real time: rate-limit windows run on the real clock, and receivers check timestamps.
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true } });
const { app } = node;

// ---------------------------------------------------------------------------------------------------
// A real receiver on 127.0.0.1 (allowed by WEBHOOKS_ALLOW_PRIVATE_TARGETS outside production). Paths
// starting /fail answer 500; everything else 200 with a body longer than the 1 KB that is kept.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}
const received: Received[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks) });
    if (req.url?.startsWith('/fail')) res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver is down');
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok:${'x'.repeat(2000)}`);
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
t.teardown(
  () =>
    new Promise<void>((resolve) => {
      receiver.closeAllConnections();
      receiver.close(() => resolve());
    }),
);
const receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
let pathSeq = 0;
const hookUrl = (kind: 'ok' | 'fail' = 'ok') => `${receiverBase}/${kind}/${++pathSeq}`;
const receivedAt = (url: string) => received.filter((r) => r.path === new URL(url).pathname);

/** The receiver's own check, from the spec alone: HMAC-SHA256 over `<ts>.<raw body>` keyed with the whole secret, lowercase hex. */
function independentSignatures(secrets: string[], r: Received): boolean[] {
  const ts = String(r.headers['svc-webhook-timestamp']);
  const values = String(r.headers['svc-signature'] ?? '')
    .split(',')
    .map((v) => v.trim().replace(/^v1=/, ''));
  return secrets.map((secret, i) => {
    const expected = Buffer.from(createHmac('sha256', secret).update(`${ts}.`).update(r.raw).digest('hex'));
    const got = Buffer.from(values[i] ?? '');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
const verifies = (secret: string, r: Received) => verifySvcSignature({ secret, headers: r.headers, rawBody: r.raw, now: clock.now() }).ok;

// ---------------------------------------------------------------------------------------------------
// Tenants and signed-in admins

const PASSWORD = 'correct horse battery staple';
async function signedInAdmin(tenant: Tenant, email = `admin-${tenant.orgId}@example.com`): Promise<string> {
  await app.services.admins.create(app.sql, { orgId: tenant.orgId, email, role: 'admin', password: PASSWORD });
  const res = await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email, password: PASSWORD } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(res.body)}`);
  return res.body.data.sessionToken as string;
}

const pro = await createTenant(node, 'pro');
const proAdmin = await signedInAdmin(pro);

async function createEndpoint(tenant: Tenant, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string; url: string }> {
  const res = await api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: hookUrl(), ...body } });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const endpointRow = async (id: string) =>
  (await app.sql<Record<string, any>[]>`select * from webhook_endpoints where id = ${id}`)[0];

// ---------------------------------------------------------------------------------------------------

t.test('GET /public/webhooks/event-types and the admin twin answer the whole catalog', async (t) => {
  const key = await api(node, 'GET', '/public/webhooks/event-types', { key: pro.key });
  t.equal(key.status, 200);
  t.same(key.body.data, { wildcard: '*', types: [...EVENT_TYPES] });
  t.ok(key.body.data.types.includes('webhook.test'));
  const admin = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/event-types`, { bearer: proAdmin });
  t.same(admin.body, key.body, 'same answer on both surfaces');
});

t.test('POST /public/webhooks creates an ACTIVE endpoint; the secret is shown once and stored sealed', async (t) => {
  const url = hookUrl();
  const res = await api(node, 'POST', '/public/webhooks', { key: pro.key, body: { url, description: 'LMS', events: ['meeting.started', 'user.created', 'meeting.started'] } });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const d = res.body.data;
  t.ok(webhookWithSecret.strict().safeParse(d).success, 'matches the documented schema');
  t.match(d, { url, description: 'LMS', events: ['meeting.started', 'user.created'], status: 'ACTIVE', disabledReason: null, failingSince: null, previousSecretExpiresAt: null });
  t.match(d.id, /^whe_[0-9a-z]{26}$/);
  t.match(d.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(d.createdAt, iso(clock.now()));

  const read = await api(node, 'GET', `/public/webhooks/${d.id}`, { key: pro.key });
  t.equal(read.status, 200);
  t.notOk('secret' in read.body.data, 'never returned by a read');
  t.ok(webhookRecord.strict().safeParse(read.body.data).success);
  const { secret: _s, ...withoutSecret } = d;
  t.same(read.body.data, withoutSecret);
  const list = await api(node, 'GET', '/public/webhooks', { key: pro.key });
  t.ok(list.body.data.some((e: { id: string }) => e.id === d.id));
  t.notOk(JSON.stringify(list.body).includes(d.secret), 'nor by a listing');
  const admin = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/${d.id}`, { bearer: proAdmin });
  t.same(admin.body.data, read.body.data, 'the admin surface reads the same record');

  const row = await endpointRow(d.id);
  t.ok(Buffer.isBuffer(row!.secretSealed));
  t.notOk(JSON.stringify(row).includes(d.secret.slice(6)), 'the row does not hold the secret in clear');
  t.notOk(row!.secretSealed.includes(Buffer.from(d.secret)), 'nor in the sealed bytes');
  t.equal(app.tokens.data.open(row!.secretSealed)?.toString('utf8'), d.secret, 'it opens with the data-at-rest key');

  const defaults = await api(node, 'POST', '/public/webhooks', { key: pro.key, body: { url: hookUrl() } });
  t.same(defaults.body.data.events, ['*'], 'events default to ["*"]');
  t.equal(defaults.body.data.description, null);
});

t.test('bad input is refused with validation_failed naming the field', async (t) => {
  const bad = async (body: unknown) => assertError(t, await api(node, 'POST', '/public/webhooks', { key: pro.key, body }), 400, 'validation_failed').fields;
  t.match(await bad({}), [{ field: 'url', in: 'body' }]);
  t.match(await bad({ url: hookUrl(), events: ['meeting.started', 'meeting.exploded'] }), [{ field: 'events.1', in: 'body' }], 'unknown event type');
  t.match(await bad({ url: hookUrl(), events: ['*', 'user.created'] }), [{ field: 'events' }], 'the wildcard goes alone');
  t.match(await bad({ url: hookUrl(), events: [] }), [{ field: 'events' }]);
  t.match(await bad({ url: hookUrl(), secret: 'whsec_mine' }), [{ code: 'unrecognized_keys' }], 'a secret cannot be chosen');
  t.match(await bad({ url: 'not a url' }), [{ field: 'url', code: 'url_refused', reason: 'invalid_url' }]);
  t.match(await bad({ url: 'https://169.254.169.254/latest/meta-data' }), [{ field: 'url', code: 'url_refused', reason: 'forbidden_address', range: 'metadata' }], 'metadata refused even with the switch');
  t.match(await bad({ url: 'ftp://127.0.0.1/x' }), [{ field: 'url', reason: 'scheme' }]);
  t.match(await bad({ url: 'http://user:pw@127.0.0.1/x' }), [{ field: 'url', reason: 'userinfo' }]);

  const e = await createEndpoint(pro);
  const patch = (body: unknown) => api(node, 'PATCH', `/public/webhooks/${e.id}`, { key: pro.key, body });
  t.match(assertError(t, await patch({}), 400, 'validation_failed').fields, [{ field: '(root)' }]);
  t.match(assertError(t, await patch({ status: 'PAUSED' }), 400, 'validation_failed').fields, [{ field: 'status' }]);
  t.match(assertError(t, await patch({ url: 'https://[fd00:ec2::254]/' }), 400, 'validation_failed').fields, [{ field: 'url', reason: 'forbidden_address' }]);
  t.equal((await endpointRow(e.id))!.url, e.url, 'a refused url changes nothing');
  const q = assertError(t, await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?status=LOST`, { key: pro.key }), 400, 'validation_failed');
  t.match(q.fields, [{ field: 'status', in: 'query' }]);
  assertError(t, await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?eventType=meeting.exploded`, { key: pro.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?cursor=nope`, { key: pro.key }), 400, 'validation_failed');
});

t.test('without the switch, http and private targets are refused on save', async (t) => {
  const strict = await startTestNode(t, { redis: false });
  const tenant = await createTenant(strict, 'enterprise');
  const cases: Array<[string, string]> = [
    [`http://example.com/hook`, 'scheme'],
    [`${receiverBase}/x`, 'scheme'],
    ['https://127.0.0.1/hook', 'forbidden_address'],
    ['https://10.1.2.3/hook', 'forbidden_address'],
    ['https://192.168.0.10/hook', 'forbidden_address'],
    ['https://100.64.0.1/hook', 'forbidden_address'],
    ['https://[::ffff:127.0.0.1]/hook', 'forbidden_address'],
    ['https://0x7f.1/hook', 'forbidden_address'],
    ['https://localhost/hook', 'forbidden_name'],
    ['https://printer.local/hook', 'forbidden_name'],
  ];
  for (const [url, reason] of cases) {
    const res = await api(strict, 'POST', '/public/webhooks', { key: tenant.key, body: { url } });
    const d = assertError(t, res, 400, 'validation_failed');
    t.match(d.fields, [{ field: 'url', in: 'body', code: 'url_refused', reason }], url);
    t.type(d.fields[0].message, 'string');
  }
  const [row] = await strict.app.sql<{ n: number }[]>`select count(*)::int as n from webhook_endpoints`;
  t.equal(row!.n, 0, 'nothing was saved');
});

t.test('unknown ids answer 404, other organizations\' endpoints are invisible, the admin surface checks the org', async (t) => {
  const unknown = newId('whe');
  const missingDelivery = newId('whd');
  for (const [method, path] of [
    ['GET', `/public/webhooks/${unknown}`],
    ['PATCH', `/public/webhooks/${unknown}`],
    ['DELETE', `/public/webhooks/${unknown}`],
    ['POST', `/public/webhooks/${unknown}/rotate-secret`],
    ['POST', `/public/webhooks/${unknown}/test`],
    ['GET', `/public/webhooks/${unknown}/deliveries`],
    ['GET', `/orgs/${pro.orgId}/webhooks/${unknown}`],
  ] as const) {
    const res = await api(node, method, path, { ...(path.startsWith('/orgs') ? { bearer: proAdmin } : { key: pro.key }), ...(method === 'PATCH' ? { body: { description: 'x' } } : {}) });
    assertError(t, res, 404, 'webhook_not_found');
  }
  assertError(t, await api(node, 'GET', `/public/webhooks/deliveries/${missingDelivery}`, { key: pro.key }), 404, 'delivery_not_found');
  assertError(t, await api(node, 'POST', `/public/webhooks/deliveries/${missingDelivery}/redeliver`, { key: pro.key }), 404, 'delivery_not_found');

  const other = await createTenant(node, 'enterprise');
  const theirs = await createEndpoint(other);
  const test = await api(node, 'POST', `/public/webhooks/${theirs.id}/test`, { key: other.key });
  t.equal(test.status, 201);
  assertError(t, await api(node, 'GET', `/public/webhooks/${theirs.id}`, { key: pro.key }), 404, 'webhook_not_found');
  assertError(t, await api(node, 'DELETE', `/public/webhooks/${theirs.id}`, { key: pro.key }), 404, 'webhook_not_found');
  assertError(t, await api(node, 'GET', `/public/webhooks/deliveries/${test.body.data.id}`, { key: pro.key }), 404, 'delivery_not_found');
  assertError(t, await api(node, 'POST', `/public/webhooks/deliveries/${test.body.data.id}/redeliver`, { key: pro.key }), 404, 'delivery_not_found');
  t.notOk((await api(node, 'GET', '/public/webhooks?limit=100', { key: pro.key })).body.data.some((e: { id: string }) => e.id === theirs.id));

  // The admin surface: another organization's path is refused before anything is looked up.
  assertError(t, await api(node, 'GET', `/orgs/${other.orgId}/webhooks`, { bearer: proAdmin }), 403, 'org_mismatch');
  assertError(t, await api(node, 'GET', `/orgs/${other.orgId}/webhooks/${theirs.id}`, { bearer: proAdmin }), 403, 'org_mismatch');
  assertError(t, await api(node, 'POST', `/orgs/org_00000000000000000000000000/webhooks`, { bearer: proAdmin, body: { url: hookUrl() } }), 403, 'org_mismatch');
  assertError(t, await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/${theirs.id}`, { bearer: proAdmin }), 404, 'webhook_not_found');
  assertError(t, await api(node, 'GET', `/orgs/${pro.orgId}/webhooks`, { key: pro.key }), 401, 'auth_malformed');
});

t.test('scopes: webhooks:read for GET, webhooks:write for the rest (and it implies read)', async (t) => {
  const e = await createEndpoint(pro);
  const reader = await app.services.apiKeys.create(app.sql, { orgId: pro.orgId, name: 'reader', scopes: ['webhooks:read'] });
  const writer = await app.services.apiKeys.create(app.sql, { orgId: pro.orgId, name: 'writer', scopes: ['webhooks:write'] });
  const none = await app.services.apiKeys.create(app.sql, { orgId: pro.orgId, name: 'none', scopes: ['users:write'] });
  t.equal((await api(node, 'GET', `/public/webhooks/${e.id}`, { key: reader.key })).status, 200);
  t.equal((await api(node, 'GET', '/public/webhooks/event-types', { key: reader.key })).status, 200);
  t.equal((await api(node, 'GET', '/public/events', { key: reader.key })).status, 200);
  const refused = assertError(t, await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: reader.key }), 403, 'insufficient_scope');
  t.same(refused.required, 'webhooks:write');
  assertError(t, await api(node, 'PATCH', `/public/webhooks/${e.id}`, { key: reader.key, body: { description: 'x' } }), 403, 'insufficient_scope');
  assertError(t, await api(node, 'DELETE', `/public/webhooks/${e.id}`, { key: reader.key }), 403, 'insufficient_scope');
  t.equal((await api(node, 'GET', `/public/webhooks/${e.id}/deliveries`, { key: writer.key })).status, 200, 'write implies read');
  t.equal((await api(node, 'PATCH', `/public/webhooks/${e.id}`, { key: writer.key, body: { description: 'by writer' } })).status, 200);
  assertError(t, await api(node, 'GET', '/public/webhooks', { key: none.key }), 403, 'insufficient_scope');
});

t.test('plan gating: the admin surface answers 402 everywhere, the key surface only on create, update, rotate, test, redeliver', async (t) => {
  const free = await createTenant(node, 'free');
  const freeAdmin = await signedInAdmin(free);
  // An endpoint made while the organization had the feature (say, before a downgrade).
  const { endpoint } = await app.services.webhookEndpoints.create(app.sql, free.orgId, { url: hookUrl() });
  const e = endpoint.id;
  const eventId = newId('evt', clock.now());
  await app.sql`insert into outbox (id, org_id, type, data, created_at, dispatched_at) values (${eventId}, ${free.orgId}, 'user.created', ${app.sql.json({ userId: 'u' })}, ${iso(clock.now())}, ${iso(clock.now())})`;
  const deliveryId = await insertAttempt(app.sql, { endpointId: e, orgId: free.orgId, messageId: null, eventId, eventType: 'user.created', attempt: 0, trigger: 'EVENT', at: clock.now(), result: 'SKIPPED' });

  const ops: Array<[string, string, unknown, boolean]> = [
    // method, path after the prefix, body, answers 402 on the key surface
    ['GET', '', undefined, false],
    ['POST', '', { url: hookUrl() }, true],
    ['GET', '/event-types', undefined, false],
    ['GET', `/${e}`, undefined, false],
    ['PATCH', `/${e}`, { description: 'x' }, true],
    ['POST', `/${e}/rotate-secret`, undefined, true],
    ['POST', `/${e}/test`, undefined, true],
    ['GET', `/${e}/deliveries`, undefined, false],
    ['GET', `/deliveries/${deliveryId}`, undefined, false],
    ['POST', `/deliveries/${deliveryId}/redeliver`, undefined, true],
  ];
  for (const [method, sub, body, gated] of ops) {
    const admin = await api(node, method, `/orgs/${free.orgId}/webhooks${sub}`, { bearer: freeAdmin, ...(body ? { body } : {}) });
    const d = assertError(t, admin, 402, 'plan_feature_unavailable');
    t.same(d, { feature: 'webhooks', plan: 'free' }, `admin ${method} ${sub}`);
    const key = await api(node, method, `/public/webhooks${sub}`, { key: free.key, ...(body ? { body } : {}) });
    if (gated) assertError(t, key, 402, 'plan_feature_unavailable');
    else t.equal(key.status, 200, `key ${method} ${sub} keeps working: ${JSON.stringify(key.body).slice(0, 200)}`);
  }
  assertError(t, await api(node, 'DELETE', `/orgs/${free.orgId}/webhooks/${e}`, { bearer: freeAdmin }), 402, 'plan_feature_unavailable');
  assertError(t, await api(node, 'GET', '/public/events', { key: free.key }), 402, 'plan_feature_unavailable');
  t.equal(receivedAt(endpoint.url).length, 0, 'nothing was sent');
  // Delete keeps working on the key surface, so a downgraded organization can clean up.
  t.equal((await api(node, 'DELETE', `/public/webhooks/${e}`, { key: free.key })).status, 200);
  t.equal(await endpointRow(e), undefined);

  const standard = await createTenant(node, 'standard');
  assertError(t, await api(node, 'POST', '/public/webhooks', { key: standard.key, body: { url: hookUrl() } }), 402, 'plan_feature_unavailable');
  const ent = await createTenant(node, 'enterprise');
  t.equal((await api(node, 'POST', '/public/webhooks', { key: ent.key, body: { url: hookUrl() } })).status, 201);
});

t.test('at most 20 endpoints per organization, disabled ones included, even under concurrent creates', async (t) => {
  const tenant = await createTenant(node, 'pro');
  const results = await Promise.all(
    Array.from({ length: 26 }, (_, i) => api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: hookUrl(), description: `#${i}` } })),
  );
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status !== 201);
  t.equal(created.length, 20, '20 created');
  t.equal(refused.length, 6);
  for (const r of refused) t.same(assertError(t, r, 409, 'limit_reached'), { limit: 20, count: 20, resource: 'webhook_endpoints' });
  const [row] = await app.sql<{ n: number }[]>`select count(*)::int as n from webhook_endpoints where org_id = ${tenant.orgId}`;
  t.equal(row!.n, 20);

  const first = created[0]!.body.data.id as string;
  const disabled = await api(node, 'PATCH', `/public/webhooks/${first}`, { key: tenant.key, body: { status: 'DISABLED' } });
  t.equal(disabled.body.data?.status, 'DISABLED', JSON.stringify(disabled.body));
  assertError(t, await api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: hookUrl() } }), 409, 'limit_reached');
  t.equal((await api(node, 'DELETE', `/public/webhooks/${first}`, { key: tenant.key })).status, 200);
  t.equal((await api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: hookUrl() } })).status, 201, 'a deleted one frees its place');

  const page1 = await api(node, 'GET', '/public/webhooks?limit=15', { key: tenant.key });
  t.equal(page1.body.data.length, 15);
  t.type(page1.body.nextCursor, 'string');
  const page2 = await api(node, 'GET', `/public/webhooks?limit=15&cursor=${page1.body.nextCursor}`, { key: tenant.key });
  t.equal(page2.body.data.length, 5);
  t.equal(page2.body.nextCursor, null);
  const ids = [...page1.body.data, ...page2.body.data].map((e: { id: string }) => e.id);
  t.equal(new Set(ids).size, 20);
  t.same(ids, [...ids].sort().reverse(), 'newest first');
});

t.test('POST /public/webhooks/:id/test sends one signed webhook.test and answers its delivery record', async (t) => {
  const e = await createEndpoint(pro);
  const res = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const d = res.body.data;
  t.ok(deliveryRecord.strict().safeParse(d).success, 'matches the documented schema');
  t.match(d, { endpointId: e.id, eventType: 'webhook.test', attempt: 1, trigger: 'TEST', status: 'SUCCEEDED', statusCode: 200, error: null, nextAttemptAt: null });
  t.match(d.id, /^whd_[0-9a-z]{26}$/);
  t.equal(d.responseBody.length, 1024, 'the first 1 KB of the response is kept');
  t.ok(d.responseBody.startsWith('ok:xxx'));

  const got = receivedAt(e.url);
  t.equal(got.length, 1, 'sent once');
  const r = got[0]!;
  const body = JSON.parse(r.raw.toString('utf8'));
  t.same(Object.keys(body), ['id', 'type', 'createdAt', 'organizationId', 'data']);
  t.match(body, { id: d.eventId, type: 'webhook.test', organizationId: pro.orgId, data: { endpointId: e.id } });
  t.type(body.data.message, 'string');
  t.equal(r.headers['svc-webhook-id'], d.eventId);
  t.equal(r.headers['user-agent'], 'Svc-Webhooks/1.0');
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.headers['svc-webhook-timestamp'], String(Math.floor(clock.now() / 1000)));
  t.match(r.headers['svc-signature'], /^v1=[0-9a-f]{64}$/, 'one signature');
  t.ok(verifies(e.secret, r), 'verify.ts accepts it');
  t.same(independentSignatures([e.secret], r), [true], 'an independent HMAC agrees');

  const [event] = await app.sql<{ type: string; dispatchedAt: Date | null; data: unknown }[]>`select type, dispatched_at, data from outbox where id = ${d.eventId}`;
  t.equal(event!.type, 'webhook.test');
  t.ok(event!.dispatchedAt, 'written as dispatched: never fanned out to other endpoints');
  t.same(event!.data, body.data);

  const failing = await createEndpoint(pro, { url: hookUrl('fail') });
  const failed = await api(node, 'POST', `/public/webhooks/${failing.id}/test`, { key: pro.key });
  t.equal(failed.status, 201, 'the request succeeded; the delivery did not');
  t.match(failed.body.data, { status: 'FAILED', statusCode: 500, responseBody: 'receiver is down', error: { kind: 'status' } });
  const row = await endpointRow(failing.id);
  t.equal(row!.failingSince, null, 'a failed test does not touch the failure state');
  t.equal(row!.status, 'ACTIVE');
});

t.test('test events: 10 per endpoint per minute, on either surface', async (t) => {
  const e = await createEndpoint(pro);
  for (let i = 0; i < 10; i++) {
    const via = i % 2 ? api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key }) : api(node, 'POST', `/orgs/${pro.orgId}/webhooks/${e.id}/test`, { bearer: proAdmin });
    t.equal((await via).status, 201);
  }
  const limited = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key });
  const d = assertError(t, limited, 429, 'rate_limited');
  t.equal(d.limit, 10);
  t.ok(Number(limited.headers.get('retry-after')) >= 1);
  t.equal(receivedAt(e.url).length, 10, 'the 11th was not sent');
  const other = await createEndpoint(pro);
  t.equal((await api(node, 'POST', `/public/webhooks/${other.id}/test`, { key: pro.key })).status, 201, 'another endpoint has its own budget');
});

t.test('Idempotency-Key on create replays the same endpoint and secret', async (t) => {
  const body = { url: hookUrl() };
  const headers = { 'idempotency-key': `create-${body.url}` };
  const first = await api(node, 'POST', '/public/webhooks', { key: pro.key, body, headers });
  const again = await api(node, 'POST', '/public/webhooks', { key: pro.key, body, headers });
  t.equal(first.status, 201);
  t.equal(again.status, 201);
  t.same(again.body.data, first.body.data, 'the same id and secret');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  const [row] = await app.sql<{ n: number }[]>`select count(*)::int as n from webhook_endpoints where url = ${body.url}`;
  t.equal(row!.n, 1, 'one endpoint');
  const [stored] = await app.sql<{ responseBody: Buffer }[]>`select response_body from idempotency_keys where key = ${headers['idempotency-key']}`;
  t.notOk(stored!.responseBody.includes(Buffer.from(first.body.data.secret)), 'the stored answer is encrypted');
});

t.test('Idempotency-Key on test replays the delivery record without sending again', async (t) => {
  const e = await createEndpoint(pro);
  const first = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers: { 'idempotency-key': `test-${e.id}` } });
  const again = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers: { 'idempotency-key': `test-${e.id}` } });
  t.equal(first.status, 201);
  t.same(again.body.data, first.body.data);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal(receivedAt(e.url).length, 1);
});

t.test('Idempotency-Key on test: a retry while the event is being sent is 409, the log shows the claimed attempt, then the outcome is replayed', async (t) => {
  const receiver = await Receiver.start(t);
  receiver.answer = () => ({ hang: true });
  const e = await createEndpoint(pro, { url: receiver.url() });
  const headers = { 'idempotency-key': `in-flight-${e.id}` };
  const first = api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers });
  await receiver.waitFor(1);
  assertError(t, await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers }), 409, 'idempotency_in_progress');
  // claimed before the send: the row is there, and says what it will say for good if the node dies now
  const log = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries`, { key: pro.key });
  t.match(log.body.data, [{ trigger: 'TEST', status: 'FAILED', statusCode: null, error: { kind: 'interrupted' } }]);
  receiver.release(200);
  const done = await first;
  t.equal(done.status, 201);
  t.match(done.body.data, { id: log.body.data[0].id, status: 'SUCCEEDED', statusCode: 200, error: null });
  const again = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers });
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, done.body, 'the outcome, as the first request answered it');
  t.same((await api(node, 'GET', `/public/webhooks/${e.id}/deliveries`, { key: pro.key })).body.data, [done.body.data], 'and as the log has it');
  t.equal(receiver.received.length, 1, 'sent once');
});

t.test('an endpoint deleted while its test event is sent: the request answers 404, and so does a retry, with nothing sent again', async (t) => {
  const receiver = await Receiver.start(t);
  receiver.answer = () => ({ hang: true });
  const e = await createEndpoint(pro, { url: receiver.url() });
  const headers = { 'idempotency-key': `deleted-${e.id}` };
  const first = api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers });
  await receiver.waitFor(1);
  t.equal((await api(node, 'DELETE', `/public/webhooks/${e.id}`, { key: pro.key })).status, 200);
  receiver.release(200);
  assertError(t, await first, 404, 'webhook_not_found');
  const again = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key, headers });
  assertError(t, again, 404, 'webhook_not_found');
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'the stored answer: the test is not run again');
  t.equal(receiver.received.length, 1);
});

t.test('rotate-secret: both signatures (new first) for 24 hours, then only the new one', async (t) => {
  const e = await createEndpoint(pro);
  const rotated = await api(node, 'POST', `/public/webhooks/${e.id}/rotate-secret`, { key: pro.key });
  t.equal(rotated.status, 200, JSON.stringify(rotated.body));
  t.ok(webhookWithSecret.strict().safeParse(rotated.body.data).success);
  const fresh = rotated.body.data.secret as string;
  t.match(fresh, /^whsec_/);
  t.not(fresh, e.secret);
  t.equal(rotated.body.data.previousSecretExpiresAt, iso(clock.now() + 24 * 3600_000));
  const row = await endpointRow(e.id);
  t.equal(app.tokens.data.open(row!.secretSealed)?.toString(), fresh);
  t.equal(app.tokens.data.open(row!.previousSecretSealed)?.toString(), e.secret, 'the old secret is kept sealed');
  t.equal(new Date(row!.previousSecretExpiresAt).getTime(), clock.now() + 24 * 3600_000);
  t.notOk('secret' in (await api(node, 'GET', `/public/webhooks/${e.id}`, { key: pro.key })).body.data);

  t.equal((await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key })).status, 201);
  const during = receivedAt(e.url).at(-1)!;
  t.match(during.headers['svc-signature'], /^v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/, 'two signatures');
  t.same(independentSignatures([fresh, e.secret], during), [true, true], 'new first, then old');
  t.ok(verifies(fresh, during) && verifies(e.secret, during), 'a receiver on either secret accepts it');

  clock.advance(24 * 3600_000 + 1000);
  try {
    t.equal((await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key })).status, 201);
    const after = receivedAt(e.url).at(-1)!;
    t.match(after.headers['svc-signature'], /^v1=[0-9a-f]{64}$/, 'one signature after 24 hours');
    t.ok(verifies(fresh, after));
    t.notOk(verifies(e.secret, after), 'the old secret no longer verifies');
    t.equal((await api(node, 'GET', `/public/webhooks/${e.id}`, { key: pro.key })).body.data.previousSecretExpiresAt, null);
  } finally {
    clock.set(clock.now() - (24 * 3600_000 + 1000));
  }
});

t.test('rotating twice within 24 hours keeps only the secret just replaced', async (t) => {
  const e = await createEndpoint(pro);
  const one = (await api(node, 'POST', `/orgs/${pro.orgId}/webhooks/${e.id}/rotate-secret`, { bearer: proAdmin })).body.data.secret as string;
  clock.advance(3600_000);
  try {
    const two = await api(node, 'POST', `/public/webhooks/${e.id}/rotate-secret`, { key: pro.key });
    const secret2 = two.body.data.secret as string;
    t.equal(two.body.data.previousSecretExpiresAt, iso(clock.now() + 24 * 3600_000), 'the overlap restarts');
    await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key });
    const r = receivedAt(e.url).at(-1)!;
    t.same(independentSignatures([secret2, one], r), [true, true]);
    t.notOk(verifies(e.secret, r), 'the first secret stopped signing at the second rotation');
  } finally {
    clock.set(clock.now() - 3600_000);
  }
});

t.test('redeliver re-sends the same event once and answers the new delivery', async (t) => {
  const e = await createEndpoint(pro);
  const test = (await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key })).body.data;
  const again = await api(node, 'POST', `/public/webhooks/deliveries/${test.id}/redeliver`, { key: pro.key });
  t.equal(again.status, 201, JSON.stringify(again.body));
  t.ok(deliveryRecord.strict().safeParse(again.body.data).success);
  t.match(again.body.data, { endpointId: e.id, eventId: test.eventId, eventType: 'webhook.test', trigger: 'REDELIVERY', attempt: 1, status: 'SUCCEEDED' });
  t.not(again.body.data.id, test.id, 'a new delivery');
  const [a, b] = receivedAt(e.url);
  t.equal(b!.headers['svc-webhook-id'], a!.headers['svc-webhook-id'], 'the same event id');
  t.equal(b!.raw.toString(), a!.raw.toString(), 'the same body');
  t.ok(verifies(e.secret, b!));
  t.same(independentSignatures([e.secret], b!), [true]);

  // A scheduled delivery that found the endpoint disabled (SKIPPED) is what redelivery is for.
  const eventId = newId('evt', clock.now());
  const data = { userId: 'usr_1', externalId: 'ext-1', name: 'Ada', role: 'TEACHER' };
  await app.sql`insert into outbox (id, org_id, type, data, created_at, dispatched_at) values (${eventId}, ${pro.orgId}, 'user.updated', ${app.sql.json(data)}, ${iso(clock.now())}, ${iso(clock.now())})`;
  const skipped = await insertAttempt(app.sql, { endpointId: e.id, orgId: pro.orgId, messageId: null, eventId, eventType: 'user.updated', attempt: 0, trigger: 'EVENT', at: clock.now(), result: 'SKIPPED' });
  const viaAdmin = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks/deliveries/${skipped}/redeliver`, { bearer: proAdmin });
  t.equal(viaAdmin.status, 201);
  t.match(viaAdmin.body.data, { eventId, eventType: 'user.updated', trigger: 'REDELIVERY', status: 'SUCCEEDED' });
  const sent = receivedAt(e.url).at(-1)!;
  t.match(JSON.parse(sent.raw.toString()), { id: eventId, type: 'user.updated', organizationId: pro.orgId, data });
  t.ok(verifies(e.secret, sent));
  t.equal((await endpointRow(e.id))!.failingSince, null);
});

t.test('GET .../deliveries/:deliveryId returns the record with the payload as delivered', async (t) => {
  const e = await createEndpoint(pro);
  const test = (await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key })).body.data;
  const res = await api(node, 'GET', `/public/webhooks/deliveries/${test.id}`, { key: pro.key });
  t.equal(res.status, 200);
  t.ok(deliveryDetail.strict().safeParse(res.body.data).success, 'matches the documented schema');
  const { payload, ...record } = res.body.data;
  t.same(record, test);
  t.same(payload, JSON.parse(receivedAt(e.url)[0]!.raw.toString()), 'the envelope exactly as sent');
  const admin = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/deliveries/${test.id}`, { bearer: proAdmin });
  t.same(admin.body, { data: res.body.data });
});

t.test('the delivery log: newest first, status and eventType filters, cursor paging', async (t) => {
  const e = await createEndpoint(pro);
  const ok = (await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key })).body.data;
  // Scheduled deliveries, as the dispatcher writes them.
  const rows: Array<[string, 'ok' | 'fail' | 'SKIPPED']> = [
    ['meeting.started', 'ok'],
    ['meeting.started', 'fail'],
    ['meeting.ended', 'fail'],
    ['user.created', 'SKIPPED'],
    ['meeting.started', 'SKIPPED'],
    ['meeting.ended', 'ok'],
  ];
  const ids: string[] = [ok.id];
  for (const [i, [type, outcome]] of rows.entries()) {
    const at = clock.now() + i + 1;
    ids.push(
      await insertAttempt(app.sql, {
        endpointId: e.id,
        orgId: pro.orgId,
        messageId: null,
        eventId: newId('evt', at),
        eventType: type,
        attempt: outcome === 'SKIPPED' ? 0 : 1,
        trigger: 'EVENT',
        at,
        result: outcome === 'SKIPPED' ? 'SKIPPED' : outcome === 'ok' ? { ok: true, status: 204, durationMs: 12, responseBody: '' } : { ok: false, status: 503, durationMs: 40, responseBody: 'busy', error: { kind: 'status', message: 'the receiver answered 503' } },
        nextAttemptAt: outcome === 'fail' ? at + 60_000 : null,
      }),
    );
  }
  const newestFirst = [...ids].reverse();
  const all = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries`, { key: pro.key });
  t.equal(all.status, 200);
  t.same(all.body.data.map((d: { id: string }) => d.id), newestFirst);
  t.equal(all.body.nextCursor, null);
  for (const d of all.body.data) t.ok(deliveryRecord.strict().safeParse(d).success);
  t.match(all.body.data[1], { status: 'SKIPPED', statusCode: null, error: { kind: 'disabled' } });
  t.match(all.body.data[4], { status: 'FAILED', statusCode: 503, responseBody: 'busy', nextAttemptAt: iso(clock.now() + 2 + 60_000) });

  const paged: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: ApiResponse = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: pro.key });
    t.ok(res.body.data.length <= 2);
    paged.push(...res.body.data.map((d: { id: string }) => d.id));
    cursor = res.body.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  t.same(paged, newestFirst, 'cursor paging visits every delivery once, in order');
  t.equal(pages, 4);

  const failed = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?status=FAILED`, { key: pro.key });
  t.same(failed.body.data.map((d: { id: string }) => d.id), [ids[3], ids[2]]);
  const started = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?eventType=meeting.started&limit=2`, { key: pro.key });
  t.same(started.body.data.map((d: { id: string }) => d.id), [ids[5], ids[2]]);
  const startedRest = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?eventType=meeting.started&limit=2&cursor=${started.body.nextCursor}`, { key: pro.key });
  t.same(startedRest.body.data.map((d: { id: string }) => d.id), [ids[1]]);
  const both = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/${e.id}/deliveries?status=SKIPPED&eventType=user.created`, { bearer: proAdmin });
  t.same(both.body.data.map((d: { id: string }) => d.id), [ids[4]], 'filters combine, on the admin surface too');
  const tests = await api(node, 'GET', `/public/webhooks/${e.id}/deliveries?eventType=webhook.test`, { key: pro.key });
  t.same(tests.body.data.map((d: { id: string }) => d.id), [ok.id]);
});

t.test('status changes and delete go through the endpoint\'s actor', async (t) => {
  const e = await createEndpoint(pro);
  const patch = (body: unknown) => api(node, 'PATCH', `/public/webhooks/${e.id}`, { key: pro.key, body });
  const off = await patch({ status: 'DISABLED' });
  t.equal(off.status, 200, JSON.stringify(off.body));
  t.match(off.body.data, { status: 'DISABLED', disabledReason: 'MANUAL' });
  t.ok(webhookRecord.strict().safeParse(off.body.data).success, 'no secret in an update\'s answer');
  t.type(off.body.data.disabledAt, 'string');
  const again = await patch({ status: 'DISABLED' });
  t.equal(again.status, 200, 'disabling a disabled endpoint is a no-op');
  t.equal(again.body.data.disabledAt, off.body.data.disabledAt);

  const test = await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key });
  t.match(test.body.data, { status: 'SUCCEEDED', trigger: 'TEST' }, 'a test works on a disabled endpoint');
  t.equal((await endpointRow(e.id))!.status, 'DISABLED', 'and does not change its status');

  const on = await api(node, 'PATCH', `/orgs/${pro.orgId}/webhooks/${e.id}`, { bearer: proAdmin, body: { status: 'ACTIVE', description: 'back', events: ['user.created'] } });
  t.equal(on.status, 200, JSON.stringify(on.body));
  t.match(on.body.data, { status: 'ACTIVE', disabledReason: null, disabledAt: null, description: 'back', events: ['user.created'] });
  t.equal((await patch({ status: 'ACTIVE' })).status, 200, 'enabling an active endpoint is a no-op');

  const url = hookUrl();
  const moved = await patch({ url, description: null, events: ['*'] });
  t.match(moved.body.data, { url, description: null, events: ['*'], status: 'ACTIVE' });

  const del = await api(node, 'DELETE', `/public/webhooks/${e.id}`, { key: pro.key });
  t.equal(del.status, 200, JSON.stringify(del.body));
  t.same(del.body.data, { id: e.id, deleted: true });
  t.equal(await endpointRow(e.id), undefined, 'the row is gone');
  assertError(t, await api(node, 'GET', `/public/webhooks/${e.id}`, { key: pro.key }), 404, 'webhook_not_found');
  assertError(t, await api(node, 'DELETE', `/public/webhooks/${e.id}`, { key: pro.key }), 404, 'webhook_not_found');
  assertError(t, await api(node, 'POST', `/public/webhooks/${e.id}/test`, { key: pro.key }), 404, 'webhook_not_found');
});

t.test('the admin surface runs every operation, with CSRF on cookie sessions', async (t) => {
  const created = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks`, { bearer: proAdmin, body: { url: hookUrl(), events: ['class.created'] } });
  t.equal(created.status, 201);
  t.match(created.body.data.secret, /^whsec_/);
  const id = created.body.data.id as string;
  const list = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks?limit=100`, { bearer: proAdmin });
  t.ok(list.body.data.some((e: { id: string }) => e.id === id));
  const keyList = await api(node, 'GET', '/public/webhooks?limit=100', { key: pro.key });
  t.same(list.body, keyList.body, 'one listing on both surfaces');
  const test = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks/${id}/test`, { bearer: proAdmin });
  t.equal(test.status, 201);
  t.ok(verifies(created.body.data.secret, receivedAt(created.body.data.url).at(-1)!));
  const log = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/${id}/deliveries`, { bearer: proAdmin });
  t.same(log.body.data, [test.body.data]);

  const cookie = { cookie: `aula_session=${proAdmin}` };
  assertError(t, await api(node, 'POST', `/orgs/${pro.orgId}/webhooks/${id}/rotate-secret`, { headers: cookie }), 403, 'csrf_failed');
  t.equal((await api(node, 'GET', `/orgs/${pro.orgId}/webhooks/${id}`, { headers: cookie })).status, 200, 'reads need no CSRF token');
  const me = await api(node, 'GET', '/auth/me', { bearer: proAdmin });
  const withCsrf = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks/${id}/rotate-secret`, { headers: { ...cookie, 'x-csrf-token': me.body.data.csrfToken } });
  t.equal(withCsrf.status, 200);
  const del = await api(node, 'DELETE', `/orgs/${pro.orgId}/webhooks/${id}`, { bearer: proAdmin });
  t.equal(del.status, 200, JSON.stringify(del.body));
});

t.test('Idempotency-Key on the admin surface: a retried create answers the first endpoint, once', async (t) => {
  const body = { url: hookUrl(), events: ['class.updated'] };
  const first = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks`, { bearer: proAdmin, body, headers: { 'idempotency-key': 'admin-create-1' } });
  t.equal(first.status, 201);
  const again = await api(node, 'POST', `/orgs/${pro.orgId}/webhooks`, { bearer: proAdmin, body, headers: { 'idempotency-key': 'admin-create-1' } });
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body.data, first.body.data, 'the same endpoint, its secret included');
  const list = await api(node, 'GET', `/orgs/${pro.orgId}/webhooks?limit=100`, { bearer: proAdmin });
  t.equal(list.body.data.filter((e: { url: string }) => e.url === body.url).length, 1, 'made once');
  assertError(t, await api(node, 'POST', `/orgs/${pro.orgId}/webhooks`, { bearer: proAdmin, body: { ...body, events: ['user.created'] }, headers: { 'idempotency-key': 'admin-create-1' } }), 422, 'idempotency_key_reused');
  await api(node, 'DELETE', `/orgs/${pro.orgId}/webhooks/${first.body.data.id}`, { bearer: proAdmin });
});

t.test('GET /public/events: the last 30 days, oldest first, as delivered, without test events', async (t) => {
  const tenant = await createTenant(node, 'enterprise');
  const at = (ms: number) => iso(ms);
  const now = clock.now();
  const insert = async (type: string, when: number, data: Record<string, unknown> = { n: type }) => {
    const id = newId('evt', when);
    await app.sql`insert into outbox (id, org_id, type, data, created_at, dispatched_at) values (${id}, ${tenant.orgId}, ${type}, ${app.sql.json(data as never)}, ${at(when)}, ${at(when)})`;
    return id;
  };
  const old = await insert('user.created', now - 31 * 24 * 3600_000);
  const e1 = await insert('user.created', now - 29 * 24 * 3600_000, { userId: 'usr_a', name: 'Ünïcødé 李' });
  await insert('webhook.test', now - 3600_000);
  const e2 = await insert('meeting.created', now - 60_000);
  const u = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'feed-1', fullName: 'Feed', role: 'STUDENT' } });
  t.equal(u.status, 201);
  const all = await api(node, 'GET', '/public/events', { key: tenant.key });
  t.equal(all.status, 200, JSON.stringify(all.body));
  const ids = all.body.data.map((e: { id: string }) => e.id);
  t.equal(ids[0], e1);
  t.equal(ids[1], e2);
  t.equal(ids.length, 3, 'the user.created of the API call too');
  t.notOk(ids.includes(old), 'older than 30 days: left out');
  t.notOk(all.body.data.some((e: { type: string }) => e.type === 'webhook.test'));
  for (const e of all.body.data) t.ok(eventEnvelope.strict().safeParse(e).success);
  t.same(all.body.data[0], { id: e1, type: 'user.created', createdAt: at(now - 29 * 24 * 3600_000), organizationId: tenant.orgId, data: { userId: 'usr_a', name: 'Ünïcødé 李' } });
  t.match(all.body.data[2], { type: 'user.created', data: { externalId: 'feed-1' } });

  const p1 = await api(node, 'GET', '/public/events?limit=2', { key: tenant.key });
  t.same(p1.body.data.map((e: { id: string }) => e.id), ids.slice(0, 2));
  t.equal(p1.body.nextCursor, e2, 'the cursor is the last event id');
  const p2 = await api(node, 'GET', `/public/events?limit=2&after=${p1.body.nextCursor}`, { key: tenant.key });
  t.same(p2.body.data.map((e: { id: string }) => e.id), ids.slice(2));
  t.equal(p2.body.nextCursor, null);
  const typed = await api(node, 'GET', '/public/events?type=meeting.created', { key: tenant.key });
  t.same(typed.body.data.map((e: { id: string }) => e.id), [e2]);
  assertError(t, await api(node, 'GET', '/public/events?after=nope', { key: tenant.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/events?type=webhook.test', { key: tenant.key }), 400, 'validation_failed');
  assertError(t, await api(node, 'GET', '/public/events?cursor=x', { key: tenant.key }), 400, 'validation_failed');
  const other = await api(node, 'GET', '/public/events', { key: pro.key });
  t.notOk(other.body.data.some((e: { id: string }) => ids.includes(e.id)), 'only the caller\'s organization');
});

t.test('every webhook route is in the OpenAPI document with its scope', async (t) => {
  const doc = (await api(node, 'GET', '/api/v1/openapi.json')).body;
  const create = doc.paths['/api/v1/public/webhooks'].post;
  t.same(create['x-scopes'], ['webhooks:write']);
  t.match(create.responses['402'].description, /plan_feature_unavailable/);
  t.match(create.responses['409'].description, /limit_reached/);
  t.same(doc.paths['/api/v1/public/webhooks/{id}/deliveries'].get['x-scopes'], ['webhooks:read']);
  t.notOk(doc.paths['/api/v1/public/webhooks/{id}'].get.responses['402'], 'reads are not gated on the key surface');
  t.ok(doc.paths['/api/v1/orgs/{orgId}/webhooks/{id}'].get.responses['402'], 'the admin surface is');
  t.ok(doc.paths['/api/v1/public/events'].get);
});


t.test('each admin-surface webhook route is its API-key route on /orgs/:orgId, idempotency included', async (t) => {
  const keyRoutes = webhookRoutes.filter((r) => r.spec.path.startsWith('/public/webhooks'));
  const adminRoutes = webhookRoutes.filter((r) => r.spec.path.startsWith('/orgs/'));
  t.equal(keyRoutes.length, 11, 'every operation of the spec\'s table');
  t.equal(adminRoutes.length, keyRoutes.length, 'one twin each');
  const GATED_ON_KEYS = ['post /public/webhooks', 'patch /public/webhooks/:id', 'post /public/webhooks/:id/rotate-secret', 'post /public/webhooks/:id/test', 'post /public/webhooks/deliveries/:deliveryId/redeliver'];
  for (const k of keyRoutes) {
    const name = `${k.spec.method} ${k.spec.path}`;
    const twin = adminRoutes.find((a) => a.spec.method === k.spec.method && a.spec.path === k.spec.path.replace('/public/webhooks', '/orgs/:orgId/webhooks'));
    if (!t.ok(twin, `${name} has its admin twin`)) continue;
    const { path: _p, auth: _a, tag: _t, scope, params: kp, errors: ke, ...keyRest } = k.spec;
    const { path: _q, auth, tag: _u, scope: adminScope, params: ap, errors: ae, ...adminRest } = twin!.spec;
    t.same(adminRest, keyRest, `${name}: the same summary, schemas, status and idempotency (${k.spec.idempotency ?? 'transaction'})`);
    t.equal(auth, 'admin');
    t.ok(scope, 'a scope on the key surface');
    t.equal(adminScope, undefined, 'none on the admin surface: owners and admins may do everything');
    t.same(Object.keys(ap!.shape), [...Object.keys(kp?.shape ?? {}), 'orgId']);
    t.same(new Set(ae), new Set([...(ke ?? []), 'plan_feature_unavailable']), `${name}: the twin answers 402 too`);
    t.equal((ke ?? []).includes('plan_feature_unavailable'), GATED_ON_KEYS.includes(name), `${name}: 402 on the key surface as rule 3 says`);
  }
});
