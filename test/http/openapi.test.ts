import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import { fullPath } from '../../http/route.ts';
import { routes } from '../../http/routes/index.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

const node = await startTestNode(t, { redis: false });

t.test('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document covering every route', async (t) => {
  const res = await api(node, 'GET', '/api/v1/openapi.json');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /application\/json/);
  const doc = res.body;
  t.equal(doc.openapi, '3.1.0');
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'validates against the OpenAPI 3.1 schema');
  for (const r of routes) {
    const path = fullPath(r.spec).replace(/:(\w+)/g, '{$1}');
    t.ok(doc.paths[path]?.[r.spec.method], `${r.spec.method.toUpperCase()} ${path}`);
  }
  const mint = doc.paths['/api/v1/public/meetings/{id}/join-links'].post;
  t.same(mint['x-scopes'], ['meetings:write', 'join-links:write']);
  t.match(mint.requestBody.content['application/json'].schema.properties, { expiresInSeconds: { maximum: 86400 }, role: { enum: ['HOST', 'COHOST', 'PARTICIPANT', 'VIEWER'] } });
  t.ok(mint.responses['201'] && mint.responses['429'] && mint.responses['401'], 'success, rate limit and auth responses');
  t.ok(mint.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key'));
  const exchange = doc.paths['/api/v1/join-tokens/exchange'].post;
  t.match(exchange.responses['410'].description, /join_token_expired/);
  t.same(exchange.security, []);
  const list = doc.paths['/api/v1/public/users'].get;
  t.ok(list.parameters.some((p: { name: string; schema: { maximum?: number } }) => p.name === 'limit' && p.schema.maximum === 100));
  t.same(list.responses['200'].content['application/json'].schema.required, ['data', 'nextCursor']);
});

t.test('responses match their documented schemas', async (t) => {
  const tenant = await createTenant(node);
  const { joinLinkRecord, meetingRecord } = await import('../../http/schemas/meetings.ts');
  const { meetingSession } = await import('../../http/schemas/sessions.ts');
  const { userRecord } = await import('../../http/schemas/users.ts');
  const u = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'o1', fullName: 'O', role: 'TEACHER' } });
  t.ok(userRecord.safeParse(u.body.data).success);
  const m = await api(node, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'T', type: 'MEETING', hostUserId: 'o1', scheduledStart: '2030-10-01T10:00:00Z', durationMinutes: 5 } });
  t.ok(meetingRecord.strict().safeParse(m.body.data).success, 'meeting record');
  const l = await api(node, 'POST', `/public/meetings/${m.body.data.id}/join-links`, { key: tenant.key, body: { userId: 'o1' } });
  t.ok(joinLinkRecord.strict().safeParse(l.body.data).success, 'join link');
  const s = await api(node, 'POST', '/join-tokens/exchange', { body: { token: l.body.data.token, deviceId: 'd' } });
  t.ok(meetingSession.strict().safeParse(s.body.data).success, 'meeting session');
});
