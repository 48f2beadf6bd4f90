import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, createTestDatabase, startTestNode, type Tenant } from '../helpers/node.ts';
import type { Node } from '../../src/server/node.ts';
import { eventually } from '../helpers/ws.ts';

// /.well-known/assetlinks.json and /.well-known/apple-app-site-association: they vouch for exactly the
// apps organizations configured (admin setting mobileApps), and follow a change.

const clock = new ManualClock(Date.parse('2026-11-24T09:00:00Z'));
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const node = await startTestNode(t, { clock, databaseUrl, redisPrefix, overrides: { AULA_MEDIA_WORKERS: 0 } });
const PASSWORD = 'correct horse battery staple';

async function adminOf(tenant: Tenant): Promise<(body: unknown) => ReturnType<typeof api>> {
  const email = `admin-${tenant.orgId}@school.example`;
  await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email, role: 'admin', password: PASSWORD });
  const bearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email, password: PASSWORD } })).body.data.sessionToken as string;
  return (mobileApps: unknown) => api(node, 'PATCH', `/orgs/${tenant.orgId}`, { bearer, body: { mobileApps } });
}

const FP = (byte: string) => Array.from({ length: 32 }, () => byte).join(':');
const ANDROID_A = { packageName: 'org.north.classroom', sha256CertFingerprints: [FP('AB'), FP('0C')] };
const IOS_A = { teamId: 'A1B2C3D4E5', bundleId: 'org.north.classroom' };
const IOS_B = { teamId: 'Z9Y8X7W6V5', bundleId: 'edu.south.live-class' };

async function wellKnown(at: Node, file: 'assetlinks.json' | 'apple-app-site-association') {
  const res = await fetch(`${at.url}/.well-known/${file}`, { redirect: 'manual' });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), cache: res.headers.get('cache-control'), text, json: JSON.parse(text) };
}
const assetLinks = async (at: Node = node) => (await wellKnown(at, 'assetlinks.json')).json;
const appleLinks = async (at: Node = node) => (await wellKnown(at, 'apple-app-site-association')).json;

const north = await createTenant(node);
const south = await createTenant(node);
const none = await createTenant(node);
const patchNorth = await adminOf(north);
const patchSouth = await adminOf(south);

t.test('with no app configured both documents vouch for nothing', async (t) => {
  const android = await wellKnown(node, 'assetlinks.json');
  t.equal(android.status, 200, 'answered here: no redirect');
  t.equal(android.type, 'application/json');
  t.match(android.cache, /max-age=\d+/);
  t.same(android.json, []);
  const ios = await wellKnown(node, 'apple-app-site-association');
  t.equal(ios.status, 200, 'answered here: no redirect');
  t.equal(ios.type, 'application/json');
  t.same(ios.json, { applinks: { details: [] } });
});

t.test('each configured app is in its platform\'s document, and nothing else is', async (t) => {
  t.equal((await patchNorth({ android: ANDROID_A, ios: IOS_A })).status, 200);
  t.equal((await patchSouth({ ios: IOS_B })).status, 200);

  t.same(await assetLinks(), [
    {
      relation: ['delegate_permission/common.handle_all_urls'],
      target: { namespace: 'android_app', package_name: 'org.north.classroom', sha256_cert_fingerprints: [FP('AB'), FP('0C')] },
    },
  ]);
  t.same(await appleLinks(), {
    applinks: { details: [{ appIDs: ['A1B2C3D4E5.org.north.classroom', 'Z9Y8X7W6V5.edu.south.live-class'], components: [{ '/': '/join/*', comment: 'Join links; the token is in the fragment.' }] }] },
  });
  const ios = await wellKnown(node, 'apple-app-site-association');
  t.notMatch(ios.text, none.orgId, 'an organization without an app is not named');
  t.notMatch(ios.text, /org_/, 'no organization ids at all');
});

t.test('an organization that clears its app disappears at once, here and on another node', async (t) => {
  const other = await startTestNode(t, { clock, databaseUrl, redisPrefix, overrides: { AULA_MEDIA_WORKERS: 0 } });
  t.equal((await assetLinks(other)).length, 1, 'the other node reads it too (and caches it)');

  t.equal((await patchNorth({ android: null })).status, 200);
  t.same(await assetLinks(), [], 'the Android app is gone');
  // the other node hears of it over Redis pub/sub, a moment after the PATCH answered; the clock stands
  // still, so the 30-second cache cannot be what clears it
  t.same(await eventually(async () => { const d = await assetLinks(other); return d.length === 0 && d; }, 5000), [], 'on the other node too: the bus cleared its cache');
  t.same((await appleLinks()).applinks.details[0].appIDs, ['A1B2C3D4E5.org.north.classroom', 'Z9Y8X7W6V5.edu.south.live-class'], 'its iOS app stays');

  t.equal((await patchSouth({ ios: null })).status, 200);
  const ids = async () => (await appleLinks(other)).applinks.details[0]?.appIDs ?? [];
  t.same(await eventually(async () => { const v = await ids(); return v.length === 1 && v; }, 5000), ['A1B2C3D4E5.org.north.classroom']);
  t.equal((await patchNorth({ ios: null })).status, 200);
  t.same(await eventually(async () => { const v = await appleLinks(other); return v.applinks.details.length === 0 && v; }, 5000), { applinks: { details: [] } });
});

t.test('a change that no node was told of shows within the cache\'s 30 seconds', async (t) => {
  t.same(await assetLinks(), [], 'read and cached');
  await node.app.sql`update organizations set android_app = ${node.app.sql.json(ANDROID_A)} where id = ${south.orgId}`;
  t.same(await assetLinks(), [], 'still the cached document');
  clock.advance(31_000);
  t.equal((await assetLinks())[0]?.target.package_name, 'org.north.classroom', 'read again after 30 seconds');
  await node.app.sql`update organizations set android_app = null where id = ${south.orgId}`;
  clock.advance(31_000);
});

t.test('organizations that share an app share one statement', async (t) => {
  t.equal((await patchNorth({ android: ANDROID_A })).status, 200);
  t.equal((await patchSouth({ android: { packageName: 'org.north.classroom', sha256CertFingerprints: [FP('0C'), FP('EF')] } })).status, 200);
  t.same(await assetLinks(), [
    { relation: ['delegate_permission/common.handle_all_urls'], target: { namespace: 'android_app', package_name: 'org.north.classroom', sha256_cert_fingerprints: [FP('AB'), FP('0C'), FP('EF')] } },
  ]);
  await patchNorth({ android: null });
  await patchSouth({ android: null });
});

t.test('the documents stay within Apple\'s 128 KB however many organizations configure an app', async (t) => {
  const sql = node.app.sql;
  // 700 organizations with the longest bundle ids the setting accepts: about 180 KB of app ids
  await sql`insert into organizations (id, name, plan, created_at, updated_at, ios_app, android_app)
    select 'org_many_' || lpad(i::text, 4, '0'), 'Many ' || i, 'pro', now() + i * interval '1 second', now(),
      jsonb_build_object('teamId', 'MANY' || lpad(i::text, 6, '0'), 'bundleId', 'org.' || repeat('x', 240) || '.a' || i),
      jsonb_build_object('packageName', 'org.' || repeat('y', 240) || '.a' || i, 'sha256CertFingerprints', jsonb_build_array(${FP('11')}::text, ${FP('22')}::text))
    from generate_series(1, 700) as i`;
  clock.advance(31_000);
  for (const file of ['assetlinks.json', 'apple-app-site-association'] as const) {
    const doc = await wellKnown(node, file);
    t.ok(Buffer.byteLength(doc.text) <= 128 * 1024, `${file}: ${Buffer.byteLength(doc.text)} bytes`);
    t.ok(Buffer.byteLength(doc.text) > 100 * 1024, `${file}: filled, not emptied`);
  }
  const ids: string[] = (await appleLinks()).applinks.details[0].appIDs;
  t.equal(ids[0], `MANY000001.org.${'x'.repeat(240)}.a1`, 'the oldest organizations are served first');
  t.ok(ids.length < 700);
  await sql`delete from organizations where id like 'org_many_%'`;
});
