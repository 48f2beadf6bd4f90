import t from 'tap';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

// The organization as its signed-in admins see and change it: the allowed origins behind the embed
// page's frame-ancestors (docs/sdk.md).
const node = await startTestNode(t, { redis: false });
const { app } = node;
const tenant = await createTenant(node, 'pro');
const PASSWORD = 'correct horse battery staple';
await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'admin@school.example', role: 'admin', password: PASSWORD });
const signedIn = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: 'admin@school.example', password: PASSWORD } })).body.data;
const bearer = signedIn.sessionToken as string;
const patch = (body: unknown) => api(node, 'PATCH', `/orgs/${tenant.orgId}`, { bearer, body });

t.test('an admin sets allowed origins; they come back normalized and deduplicated', async (t) => {
  const res = await patch({ allowedOrigins: ['https://LMS.school.example', 'https://lms.school.example:443/', 'http://127.0.0.1:5173'] });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(res.body.data.allowedOrigins, ['https://lms.school.example', 'http://127.0.0.1:5173']);
  t.same((await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer })).body.data.allowedOrigins, ['https://lms.school.example', 'http://127.0.0.1:5173']);
  t.equal((await patch({ name: 'Renamed School' })).body.data.name, 'Renamed School');
  t.same((await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer })).body.data.allowedOrigins, ['https://lms.school.example', 'http://127.0.0.1:5173'], 'a rename keeps the origins');
});

t.test('what is not an origin is refused with the field that is wrong', async (t) => {
  for (const [bad, index] of [
    [['https://ok.example', 'https://lms.example/course'], 1],
    [['ftp://files.example'], 0],
    [['https://*.school.example'], 0],
    [['https://user:pw@school.example'], 0],
    [['https://school.example?x=1'], 0],
    [['school.example'], 0],
  ] as const) {
    const res = await patch({ allowedOrigins: bad });
    assertError(t, res, 400, 'validation_failed');
    t.match(res.body.error.details.fields, [{ field: `allowedOrigins.${index}` }], `${bad.join(', ')}: field ${index}`);
  }
  const many = Array.from({ length: 51 }, (_, i) => `https://s${i}.example`);
  assertError(t, await patch({ allowedOrigins: many }), 400, 'validation_failed');
  assertError(t, await patch({ allowedOrigins: ['https://a.example'], plan: 'enterprise' }), 400, 'validation_failed');
  t.same((await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer })).body.data.allowedOrigins, ['https://lms.school.example', 'http://127.0.0.1:5173'], 'nothing changed');
});

t.test('the embed page is framed only by allowed origins; the full page by nobody', async (t) => {
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'o1', fullName: 'Olga', role: 'TEACHER' } });
  const m = (await api(node, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'Framed', type: 'MEETING', hostUserId: 'o1', scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 30 } })).body.data;
  const link = (await api(node, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'o1' } })).body.data;
  const embed = await fetch(link.embedUrl);
  t.match(embed.headers.get('content-security-policy'), /frame-ancestors https:\/\/lms\.school\.example http:\/\/127\.0\.0\.1:5173$/);
  t.match(await embed.text(), /<script type="application\/json" id="aula-embed">\{"allowedOrigins":\["https:\/\/lms\.school\.example","http:\/\/127\.0\.0\.1:5173"\]\}<\/script>/);
  t.match((await fetch(link.url)).headers.get('content-security-policy'), /frame-ancestors 'none'$/);

  await patch({ allowedOrigins: [] });
  t.match((await fetch(link.embedUrl)).headers.get('content-security-policy'), /frame-ancestors 'none'$/, 'a change applies at once on this node');
});

t.test('another organization\'s admin cannot change it', async (t) => {
  const other = await createTenant(node, 'pro');
  await app.services.admins.create(app.sql, { orgId: other.orgId, email: 'admin@other.example', role: 'admin', password: PASSWORD });
  const theirs = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: other.orgId, email: 'admin@other.example', password: PASSWORD } })).body.data.sessionToken;
  const res = await api(node, 'PATCH', `/orgs/${tenant.orgId}`, { bearer: theirs, body: { allowedOrigins: ['https://evil.example'] } });
  t.equal(res.status, 403);
  t.equal(res.body.error.code, 'org_mismatch');
  assertError(t, await api(node, 'PATCH', `/orgs/${tenant.orgId}`, { body: { allowedOrigins: ['https://evil.example'] } }), 401, 'admin_session_missing');
});
