import { z } from 'zod';
import type { App } from '../../src/services/app.ts';
import { AppError } from '../../src/core/errors.ts';
import { route } from '../route.ts';
import { assets, negotiate } from './assets.ts';

/**
 * The pages a join link opens: `/join/:slug#jt=…` as a full page, `/embed/:slug?jt=…` in a customer's
 * iframe. Both are the same shell around the room application (web/room, bundled by ./assets.ts); the
 * application exchanges the token with JavaScript after load, so link previews that only fetch HTML
 * never spend a single-use link. Nothing about the meeting or the visitor is in the HTML; what the page
 * needs from the meeting's organization before the exchange rides in a JSON block: the embed page's
 * allowed origins, the join page's app (so the page offers an app without spending the token).
 */

/** The JSON block a page reads before the exchange; `<` escaped so no value can close the script. */
const bootBlock = (id: string, value: unknown) => `<script type="application/json" id="${id}">${JSON.stringify(value).replaceAll('<', '\\u003c')}</script>\n`;

/**
 * What the join page learns of the organization's apps: the Android package (the page opens it by
 * name) and whether there is an iOS app. With neither the page offers no app at all.
 */
export interface JoinBoot {
  apps: { android: string | null; ios: boolean };
}

const shell = (a: { js: string; css: string }, boot: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1,viewport-fit=cover">
<meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><link rel="icon" href="data:,"><title>Joining…</title>
<link rel="stylesheet" href="${a.css}">
${boot}</head>
<body><div id="app"><main class="center"><section class="card"><h1 id="title">Joining…</h1><p id="status" class="muted">Checking your link.</p><noscript>This page needs JavaScript to join the meeting.</noscript></section></main></div>
<script src="${a.js}"></script></body></html>`;

/** The page's own policy: its scripts and styles from this origin only, sockets to this origin and to the configured base URL. */
function pageCsp(app: App): string {
  const ws = app.baseUrl ? ` ${new URL(app.baseUrl).origin.replace(/^http/, 'ws')}` : '';
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob: mediastream:; connect-src 'self'${ws}; base-uri 'none'; form-action 'none'`;
}

const PAGE_HEADERS = { 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', 'Permissions-Policy': 'camera=(self), microphone=(self), display-capture=(self)' };
const slugParams = z.object({ slug: z.string().max(64) });

export const pageRoutes = [
  route({ method: 'get', path: '/join/:slug', root: true, tag: 'Pages', auth: 'none', summary: 'Full-page join (token in the #jt fragment).', raw: ['text/html'], params: slugParams }, async ({ app, db, params }) => {
    const [a, apps] = await Promise.all([assets(), app.services.orgOrigins.appsForSlug(db, params.slug)]);
    const boot: JoinBoot = { apps: { android: apps.android?.packageName ?? null, ios: apps.ios !== null } };
    return {
      data: null,
      raw: { contentType: 'text/html; charset=utf-8', body: shell({ js: a.room.js.path, css: a.room.css.path }, bootBlock('aula-join', boot)) },
      headers: { ...PAGE_HEADERS, 'Content-Security-Policy': `${pageCsp(app)}; frame-ancestors 'none'` },
    };
  }),
  route({ method: 'get', path: '/embed/:slug', root: true, tag: 'Pages', auth: 'none', summary: 'Iframe join (token in the jt query parameter); only the organization\'s allowed origins may frame it.', raw: ['text/html'], params: slugParams }, async ({ app, db, params }) => {
    const [a, allowedOrigins] = await Promise.all([assets(), app.services.orgOrigins.forSlug(db, params.slug)]);
    return {
      data: null,
      raw: { contentType: 'text/html; charset=utf-8', body: shell({ js: a.room.js.path, css: a.room.css.path }, bootBlock('aula-embed', { allowedOrigins })) },
      headers: { ...PAGE_HEADERS, 'Permissions-Policy': 'camera=*, microphone=*, display-capture=*', 'Content-Security-Policy': `${pageCsp(app)}; frame-ancestors ${allowedOrigins.length ? allowedOrigins.join(' ') : "'none'"}` },
    };
  }),
  route(
    { method: 'get', path: '/sdk/svc-embed.js', root: true, tag: 'Pages', auth: 'none', summary: 'The embedding SDK: the global `Svc` (docs/sdk.md).', raw: ['text/javascript'] },
    async ({ req }) => {
      const sdk = (await assets()).sdk;
      const { body, headers } = negotiate(sdk, req.headers['accept-encoding']);
      return {
        data: null,
        raw: { contentType: sdk.contentType, body },
        headers: { ...headers, 'Cache-Control': sdk.cache, 'X-Content-Type-Options': 'nosniff', 'Cross-Origin-Resource-Policy': 'cross-origin', 'Access-Control-Allow-Origin': '*' },
      };
    },
  ),
  route(
    { method: 'get', path: '/assets/:file', root: true, tag: 'Pages', auth: 'none', summary: 'The room application\'s scripts and styles, named by content hash.', raw: ['text/javascript', 'text/css'], params: z.object({ file: z.string().max(80) }) },
    async ({ req }) => {
      const asset = (await assets()).byPath.get(req.path);
      if (!asset) throw new AppError('not_found', { message: 'No such asset; the page that asked for it is older than this server.' });
      const { body, headers } = negotiate(asset, req.headers['accept-encoding']);
      return { data: null, raw: { contentType: asset.contentType, body }, headers: { ...headers, 'Cache-Control': asset.cache, 'X-Content-Type-Options': 'nosniff' } };
    },
  ),
];
