// A customer's generated client: openapi-typescript's types from our document (committed, checked
// current here) and openapi-fetch calling a real server at the document's own `servers` URL.
import { readFileSync } from 'node:fs';
import createClient from 'openapi-fetch';
import t from 'tap';
import { GENERATED, generatedTypes } from '../helpers/openapi-types.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import type { paths } from './generated/aula-api.ts';

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);

t.test('the generated types are those of the current document', async (t) => {
  t.equal(readFileSync(GENERATED, 'utf8'), await generatedTypes(), 'test/http/generated/aula-api.ts is current (npm run openapi:types)');
});

t.test('the document names this server, and a generated client calls it at that URL', async (t) => {
  const doc = (await api(node, 'GET', '/api/v1/openapi.json')).body;
  t.same(doc.servers, [{ url: node.url }], 'the base URL of the server that answered, without the /api/v1 of the paths');
  const client = createClient<paths>({ baseUrl: doc.servers[0].url, headers: { authorization: `Bearer ${tenant.key}` } });

  const user = await client.POST('/api/v1/public/users', { body: { externalId: 'gen-1', fullName: 'Gen Erated', role: 'TEACHER' } });
  t.equal(user.response.status, 201);
  t.equal(user.data?.data.externalId, 'gen-1');

  const meeting = await client.POST('/api/v1/public/meetings', {
    body: { externalId: 'gen-m', title: 'Generated', type: 'MEETING', hostUserId: 'gen-1', scheduledStart: '2030-01-01T10:00:00Z', durationMinutes: 30 },
  });
  t.equal(meeting.response.status, 201);
  const id = meeting.data!.data.id;

  const read = await client.GET('/api/v1/public/meetings/{id}', { params: { path: { id } } });
  t.equal(read.response.status, 200);
  t.match(read.data?.data, { id, title: 'Generated', status: 'SCHEDULED' });

  const link = await client.POST('/api/v1/public/meetings/{id}/join-links', { params: { path: { id } }, body: { userId: 'gen-1' } });
  t.equal(link.response.status, 201);
  t.match(link.data?.data.token, /^jt_/);

  const missing = await client.GET('/api/v1/public/meetings/{id}', { params: { path: { id: 'mtg_01kav9ft00m2cy489pkcsrq7n9' } } });
  t.equal(missing.response.status, 404);
  t.equal(missing.error?.error.code, 'meeting_not_found', 'errors come typed in the envelope');
});

t.test('pages are described as HTML and scripts, not JSON; every route documents 500 and 503', async (t) => {
  const doc = (await api(node, 'GET', '/api/v1/openapi.json')).body;
  t.same(Object.keys(doc.paths['/join/{slug}'].get.responses['200'].content), ['text/html']);
  t.same(Object.keys(doc.paths['/sdk/svc-embed.js'].get.responses['200'].content), ['text/javascript']);
  for (const [path, ops] of Object.entries<Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!op.responses['500'] || !op.responses['503']?.headers?.['Retry-After']) t.fail(`${method} ${path}: 500, and 503 with Retry-After`);
    }
  }
});
