import type { App } from '../../src/services/app.ts';
import { route } from '../route.ts';
import { assets } from './assets.ts';

/**
 * The admin console (web/console, docs/console.md): one shell for `/console` and every path under it,
 * a single-page application that routes with the history API, so a reload or a shared link to
 * `/console/webhooks/whe_…` gets the same page and the application draws the right one. Nothing of the
 * organization is in the HTML: the application signs in and calls the admin API like any client.
 */

const shell = (a: { js: string; css: string }) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><meta name="color-scheme" content="light dark"><link rel="icon" href="data:,"><title>Aula console</title>
<link rel="stylesheet" href="${a.css}">
</head>
<body><div id="app"><main class="boot"><p>Loading the console…</p><noscript>The console needs JavaScript.</noscript></main></div>
<script src="${a.js}"></script></body></html>`;

/**
 * Scripts and styles from this origin only; requests to this origin only (the admin API); recordings
 * play from this origin or the storage's signed https links; the console itself is never framed.
 */
function consoleCsp(app: App): string {
  const base = app.baseUrl ? ` ${new URL(app.baseUrl).origin}` : '';
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'${base} https: blob:; connect-src 'self'${base}; frame-src 'self'${base}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
}

const HEADERS = { 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', 'Permissions-Policy': 'camera=(), microphone=(), display-capture=()' };

async function page(app: App) {
  const a = await assets();
  return {
    data: null,
    raw: { contentType: 'text/html; charset=utf-8', body: shell({ js: a.console.js.path, css: a.console.css.path }) },
    headers: { ...HEADERS, 'Content-Security-Policy': consoleCsp(app) },
  };
}

export const consoleRoutes = [
  route({ method: 'get', path: '/console', root: true, tag: 'Pages', auth: 'none', summary: 'The admin console (docs/console.md).', raw: ['text/html'] }, ({ app }) => page(app)),
  route({ method: 'get', path: '/console/*', root: true, tag: 'Pages', auth: 'none', summary: 'The admin console\'s pages: the same application, which draws the page the path names.', raw: ['text/html'] }, ({ app }) => page(app)),
];
