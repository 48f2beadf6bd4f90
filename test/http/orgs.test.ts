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

// The organization's own apps: what the join page offers and the well-known documents vouch for
// (test/http/well-known.test.ts, test/browser/join-page.test.ts).
const FP = (byte: string) => Array.from({ length: 32 }, () => byte).join(':');
const ANDROID = { packageName: 'org.school.classroom', sha256CertFingerprints: [FP('14'), FP('6D')] };
const IOS = { teamId: 'A1B2C3D4E5', bundleId: 'org.school.classroom' };

t.test('mobile apps: none at first; each platform set, kept, replaced and cleared on its own', async (t) => {
  const get = async () => (await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer })).body.data.mobileApps;
  t.same(await get(), { android: null, ios: null }, 'no app until one is configured');

  const set = await patch({ mobileApps: { android: { ...ANDROID, sha256CertFingerprints: [FP('14'), FP('6D'), FP('14')] } } });
  t.equal(set.status, 200, JSON.stringify(set.body));
  t.same(set.body.data.mobileApps, { android: ANDROID, ios: null }, 'a repeated fingerprint is kept once');
  t.same(await get(), { android: ANDROID, ios: null });

  t.same((await patch({ mobileApps: { ios: IOS } })).body.data.mobileApps, { android: ANDROID, ios: IOS }, 'iOS added, Android kept');
  t.same((await patch({ name: 'Renamed again' })).body.data.mobileApps, { android: ANDROID, ios: IOS }, 'a rename keeps them');
  t.same((await patch({ mobileApps: {} })).body.data.mobileApps, { android: ANDROID, ios: IOS }, 'an empty change keeps them');
  const other = { packageName: 'org.school.classroom.beta', sha256CertFingerprints: [FP('FF')] };
  t.same((await patch({ mobileApps: { android: other } })).body.data.mobileApps, { android: other, ios: IOS }, 'Android replaced as a whole');
  t.same((await patch({ mobileApps: { android: null } })).body.data.mobileApps, { android: null, ios: IOS }, 'null removes Android only');
  t.same(await get(), { android: null, ios: IOS });
  t.same((await patch({ mobileApps: { ios: null } })).body.data.mobileApps, { android: null, ios: null });
});

t.test('mobile apps: anything but the platforms\' own syntax is refused, naming the field and the rule', async (t) => {
  await patch({ mobileApps: { android: ANDROID, ios: IOS } });
  const android = (over: Record<string, unknown>) => ({ mobileApps: { android: { ...ANDROID, ...over } } });
  const ios = (over: Record<string, unknown>) => ({ mobileApps: { ios: { ...IOS, ...over } } });
  for (const [body, field, message] of [
    [android({ packageName: 'classroom' }), 'mobileApps.android.packageName', /Android package name/],
    [android({ packageName: '1school.classroom' }), 'mobileApps.android.packageName', /starting with a letter/],
    [android({ packageName: 'org..classroom' }), 'mobileApps.android.packageName', /Android package name/],
    [android({ packageName: 'org.school-app' }), 'mobileApps.android.packageName', /Android package name/],
    [android({ packageName: 'org.school.' }), 'mobileApps.android.packageName', /Android package name/],
    [android({ packageName: `org.${'a'.repeat(260)}` }), 'mobileApps.android.packageName', /./],
    [android({ sha256CertFingerprints: [FP('6d')] }), 'mobileApps.android.sha256CertFingerprints.0', /32 upper-case hex pairs/],
    [android({ sha256CertFingerprints: [FP('14'), FP('6D').slice(3)] }), 'mobileApps.android.sha256CertFingerprints.1', /32 upper-case hex pairs/],
    [android({ sha256CertFingerprints: [FP('14').replaceAll(':', '')] }), 'mobileApps.android.sha256CertFingerprints.0', /SHA-256/],
    [android({ sha256CertFingerprints: [Array.from({ length: 20 }, () => 'AB').join(':')] }), 'mobileApps.android.sha256CertFingerprints.0', /SHA-256/],
    [android({ sha256CertFingerprints: [`${FP('14')}:AB`] }), 'mobileApps.android.sha256CertFingerprints.0', /./],
    [android({ sha256CertFingerprints: [] }), 'mobileApps.android.sha256CertFingerprints', /at least one/],
    [android({ sha256CertFingerprints: ['01', '02', '03', '04', '05', '06'].map(FP) }), 'mobileApps.android.sha256CertFingerprints', /at most 5/],
    [{ mobileApps: { android: { packageName: 'org.school.classroom' } } }, 'mobileApps.android.sha256CertFingerprints', /./],
    [android({ name: 'Classroom' }), 'mobileApps.android', /name/],
    [ios({ teamId: 'A1B2C3D4E' }), 'mobileApps.ios.teamId', /10 upper-case letters and digits/],
    [ios({ teamId: 'a1b2c3d4e5' }), 'mobileApps.ios.teamId', /10 upper-case letters and digits/],
    [ios({ teamId: 'A1B2C3D4E5F' }), 'mobileApps.ios.teamId', /Apple team id/],
    [ios({ teamId: 'A1B2-3D4E5' }), 'mobileApps.ios.teamId', /Apple team id/],
    [ios({ bundleId: 'classroom' }), 'mobileApps.ios.bundleId', /reverse-DNS/],
    [ios({ bundleId: 'org.school_app' }), 'mobileApps.ios.bundleId', /bundle id/],
    [ios({ bundleId: 'org..school' }), 'mobileApps.ios.bundleId', /bundle id/],
    [ios({ bundleId: 'org.school.classroom/' }), 'mobileApps.ios.bundleId', /bundle id/],
    [{ mobileApps: { windows: { id: 'x' } } }, 'mobileApps', /windows/],
    [{ mobileApps: { android: 'org.school.classroom' } }, 'mobileApps.android', /./],
  ] as const) {
    const res = await patch(body);
    assertError(t, res, 400, 'validation_failed');
    const fields = res.body.error.details.fields as { field: string; message: string }[];
    t.equal(fields[0]?.field, field, `${JSON.stringify(body).slice(0, 90)}: ${field}`);
    t.match(fields[0]?.message, message);
  }
  t.same((await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer })).body.data.mobileApps, { android: ANDROID, ios: IOS }, 'nothing changed');
  await patch({ mobileApps: { android: null, ios: null } });
});

t.test('the join page tells the room application which apps there are, and nothing more', async (t) => {
  await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'o2', fullName: 'Omar', role: 'TEACHER' } });
  const m = (await api(node, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'Apps', type: 'MEETING', hostUserId: 'o2', scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 30 } })).body.data;
  const link = (await api(node, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'o2' } })).body.data;
  const boot = async (url: string) => JSON.parse(/<script type="application\/json" id="aula-join">(.*?)<\/script>/.exec(await (await fetch(url)).text())![1]!);
  t.same(await boot(link.url), { apps: { android: null, ios: false } });
  await patch({ mobileApps: { android: ANDROID, ios: IOS } });
  t.same(await boot(link.url), { apps: { android: 'org.school.classroom', ios: true } }, 'a change applies at once on this node; fingerprints and team stay out of the page');
  t.same(await boot(`${new URL(link.url).origin}/join/no-such-meeting`), { apps: { android: null, ios: false } }, 'an unknown meeting has no app');
  await patch({ mobileApps: { android: null, ios: null } });
  t.same(await boot(link.url), { apps: { android: null, ios: false } });
});

t.test('a short name: set, unique, signed in with instead of the id (any case), removed; unknown ones answer as an unknown organization', async (t) => {
  const set = await patch({ shortName: 'riverside-high' });
  t.equal(set.status, 200, JSON.stringify(set.body));
  t.equal(set.body.data.shortName, 'riverside-high');
  const byName = await api(node, 'POST', '/auth/sign-in', { body: { orgId: 'Riverside-High', email: 'admin@school.example', password: PASSWORD } });
  t.equal(byName.status, 200, JSON.stringify(byName.body));
  t.equal(byName.body.data.admin.orgId, tenant.orgId);
  assertError(t, await api(node, 'POST', '/auth/sign-in', { body: { orgId: 'riverside-low', email: 'admin@school.example', password: PASSWORD } }), 401, 'invalid_credentials');
  for (const bad of ['rh', '1school', 'has space', 'under_score', 'x'.repeat(41), 'Ünï']) assertError(t, await patch({ shortName: bad }), 400, 'validation_failed');
  const other = await createTenant(node, 'pro');
  await app.services.admins.create(app.sql, { orgId: other.orgId, email: 'admin@other.example', role: 'admin', password: PASSWORD });
  const theirs = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: other.orgId, email: 'admin@other.example', password: PASSWORD } })).body.data.sessionToken;
  const taken = await api(node, 'PATCH', `/orgs/${other.orgId}`, { bearer: theirs, body: { shortName: 'riverside-high' } });
  assertError(t, taken, 409, 'slug_taken');
  // two organizations asking for one name at once: one gets it
  const race = await Promise.all([patch({ shortName: 'the-one' }), api(node, 'PATCH', `/orgs/${other.orgId}`, { bearer: theirs, body: { shortName: 'the-one' } })]);
  t.same(race.map((r) => r.status).sort(), [200, 409], race.map((r) => JSON.stringify(r.body)).join(' '));
  t.equal((await patch({ shortName: null })).body.data.shortName, null, 'removed');
  t.equal((await patch({ name: 'Kept' })).body.data.shortName, null);
});
