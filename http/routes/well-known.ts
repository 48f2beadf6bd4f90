import { z } from 'zod';
import type { App } from '../../src/services/app.ts';
import type { LinkedApps } from '../../src/services/orgs.ts';
import { route } from '../route.ts';

/**
 * The documents by which Android and iOS verify that an app may open this server's join links
 * (`/join/:slug`) in place of the browser: Digital Asset Links for Android, the apple-app-site-association
 * file for iOS. They vouch for every app an organization configured (admin setting mobileApps) and for
 * nothing else. The verification is per host, not per organization: the OS may hand any vouched-for
 * app a join link tapped outside the page (in mail, say), whichever organization's meeting it is; the
 * join page itself opens only the link's own organization's app (docs/api.md, "Mobile apps").
 *
 * Verifiers want JSON at exactly these paths, over HTTPS, without redirects. Apple reads at most 128 KB;
 * both documents stop there (oldest organizations first) and the log says how many apps were left out.
 */

export const MAX_DOCUMENT_BYTES = 128 * 1024;
/** The answer is read from a cache the bus clears on a change; a minute at most end to end with this. */
const CACHE_CONTROL = 'public, max-age=30';
const JOIN_PATHS = '/join/*';

const assetStatement = z.object({
  relation: z.array(z.literal('delegate_permission/common.handle_all_urls')),
  target: z.object({ namespace: z.literal('android_app'), package_name: z.string(), sha256_cert_fingerprints: z.array(z.string()) }),
});
const assetLinks = z.array(assetStatement).describe('Digital Asset Links statements: each configured Android app may handle this host\'s URLs.');
const appSiteAssociation = z
  .object({ applinks: z.object({ details: z.array(z.object({ appIDs: z.array(z.string()), components: z.array(z.object({ '/': z.string(), comment: z.string() })) })) }) })
  .describe('Universal links: every configured iOS app (TEAMID.bundle.id) may open /join/* links.');

/** Adds JSON items to an array text while it stays within the budget; says how many did not fit. */
function boundedArray(items: unknown[], reserved: number): { text: string; left: number } {
  const parts: string[] = [];
  let bytes = 2 + reserved;
  for (const item of items) {
    const json = JSON.stringify(item);
    const size = Buffer.byteLength(json) + (parts.length ? 1 : 0);
    if (bytes + size > MAX_DOCUMENT_BYTES) break;
    parts.push(json);
    bytes += size;
  }
  return { text: `[${parts.join(',')}]`, left: items.length - parts.length };
}

function androidDocument(apps: LinkedApps['android']): { text: string; left: number } {
  // one statement per package: organizations that share an app share its statement
  const byPackage = new Map<string, Set<string>>();
  for (const a of apps) {
    const set = byPackage.get(a.packageName) ?? new Set<string>();
    for (const f of a.sha256CertFingerprints) set.add(f);
    byPackage.set(a.packageName, set);
  }
  return boundedArray(
    [...byPackage].map(([packageName, fingerprints]) => ({
      relation: ['delegate_permission/common.handle_all_urls'],
      target: { namespace: 'android_app', package_name: packageName, sha256_cert_fingerprints: [...fingerprints] },
    })),
    0,
  );
}

function iosDocument(apps: LinkedApps['ios']): { text: string; left: number } {
  const components = JSON.stringify([{ '/': JOIN_PATHS, comment: 'Join links; the token is in the fragment.' }]);
  const wrap = (ids: string) => `{"applinks":{"details":[{"appIDs":${ids},"components":${components}}]}}`;
  const ids = [...new Set(apps.map((a) => `${a.teamId}.${a.bundleId}`))];
  if (!ids.length) return { text: '{"applinks":{"details":[]}}', left: 0 };
  const appIds = boundedArray(ids, Buffer.byteLength(wrap('')));
  return { text: wrap(appIds.text), left: appIds.left };
}

/** The documents of one read of the apps, built once for every request that shares the read. */
const built = new WeakMap<LinkedApps, { android: string; ios: string }>();

async function documents(app: App): Promise<{ android: string; ios: string }> {
  const apps = await app.services.orgOrigins.linkedApps(app.sql);
  let docs = built.get(apps);
  if (!docs) {
    const android = androidDocument(apps.android);
    const ios = iosDocument(apps.ios);
    if (android.left) app.log.warn({ left: android.left, maxBytes: MAX_DOCUMENT_BYTES }, 'assetlinks.json is full: Android apps left out (the oldest organizations are served)');
    if (ios.left) app.log.warn({ left: ios.left, maxBytes: MAX_DOCUMENT_BYTES }, 'apple-app-site-association is full: iOS apps left out (the oldest organizations are served)');
    built.set(apps, (docs = { android: android.text, ios: ios.text }));
  }
  return docs;
}

const headers = { 'Cache-Control': CACHE_CONTROL, 'X-Content-Type-Options': 'nosniff' };

export const wellKnownRoutes = [
  route(
    {
      method: 'get',
      path: '/.well-known/assetlinks.json',
      root: true,
      tag: 'Pages',
      auth: 'none',
      summary: 'Android Digital Asset Links: the organizations\' Android apps (admin setting mobileApps) may open join links.',
      raw: ['application/json'],
      response: assetLinks,
    },
    async ({ app }) => ({ data: null, raw: { contentType: 'application/json', body: (await documents(app)).android }, headers }),
  ),
  route(
    {
      method: 'get',
      path: '/.well-known/apple-app-site-association',
      root: true,
      tag: 'Pages',
      auth: 'none',
      summary: 'iOS universal links: the organizations\' iOS apps (admin setting mobileApps) may open /join/* links.',
      raw: ['application/json'],
      response: appSiteAssociation,
    },
    async ({ app }) => ({ data: null, raw: { contentType: 'application/json', body: (await documents(app)).ios }, headers }),
  ),
];
