import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The browser code (web/), bundled by esbuild when a process first serves a page, and kept in memory.
 * Each asset is named by a hash of its content (`/assets/room-3f2a….js`), so it is cached for a year
 * and a new build never meets an old cache; only the SDK keeps a fixed name, because customers'
 * pages load it by its address. No CDN and no fetch from outside: mediasoup-client and Preact are
 * inside the bundle.
 */

export interface Asset {
  /** The path it is served at. */
  path: string;
  contentType: string;
  body: string;
  /** Cache-Control for it. */
  cache: string;
}

export interface Assets {
  /** The room application: the join, pre-join, waiting and room pages (web/room). */
  room: { js: Asset; css: Asset };
  /** The embedding SDK (web/sdk), at /sdk/svc-embed.js. */
  sdk: Asset;
  byPath: Map<string, Asset>;
}

const WEB = fileURLToPath(new URL('../../web/', import.meta.url));
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The SDK's address never changes, so browsers revalidate it every five minutes. */
const SDK_CACHE = 'public, max-age=300';

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

async function bundle(entry: string, format: 'iife' | 'esm'): Promise<{ js: string; css: string }> {
  const result = await build({
    entryPoints: [WEB + entry],
    bundle: true,
    write: false,
    outdir: '/out',
    format,
    target: ['chrome100', 'firefox100', 'safari15'],
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: WEB + 'tsconfig.json',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const out = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
  return { js: out('.js'), css: out('.css') };
}

async function buildAll(): Promise<Assets> {
  const [room, sdk] = await Promise.all([bundle('room/main.tsx', 'iife'), bundle('sdk/svc-embed.ts', 'iife')]);
  const js: Asset = { path: `/assets/room-${hashOf(room.js)}.js`, contentType: 'text/javascript; charset=utf-8', body: room.js, cache: IMMUTABLE };
  const css: Asset = { path: `/assets/room-${hashOf(room.css)}.css`, contentType: 'text/css; charset=utf-8', body: room.css, cache: IMMUTABLE };
  const sdkAsset: Asset = { path: '/sdk/svc-embed.js', contentType: 'text/javascript; charset=utf-8', body: sdk.js, cache: SDK_CACHE };
  return { room: { js, css }, sdk: sdkAsset, byPath: new Map([js, css, sdkAsset].map((a) => [a.path, a])) };
}

let built: Promise<Assets> | null = null;

/** The bundles, built once per process (the first call waits for esbuild, about a second). */
export function assets(): Promise<Assets> {
  built ??= buildAll().catch((err) => {
    built = null;
    throw err;
  });
  return built;
}
