import { createHash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
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
  /** The body compressed once at build time, for clients that accept it (the room bundle shrinks about fourfold). */
  encoded: { br: Buffer; gzip: Buffer };
  /** Cache-Control for it. */
  cache: string;
}

/** The body in the best encoding the client accepts (`Accept-Encoding`), and the headers that say so. */
export function negotiate(asset: Asset, acceptEncoding: string | undefined): { body: string | Buffer; headers: Record<string, string> } {
  const accepts = new Set((acceptEncoding ?? '').split(',').map((e) => e.split(';')[0]!.trim().toLowerCase()));
  const vary = { Vary: 'Accept-Encoding' };
  if (accepts.has('br')) return { body: asset.encoded.br, headers: { ...vary, 'Content-Encoding': 'br' } };
  if (accepts.has('gzip')) return { body: asset.encoded.gzip, headers: { ...vary, 'Content-Encoding': 'gzip' } };
  return { body: asset.body, headers: vary };
}

function asset(path: string, contentType: string, body: string, cache: string): Asset {
  const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  return { path, contentType, body, encoded: { br, gzip: gzipSync(body, { level: 9 }) }, cache };
}

export interface Assets {
  /** The room application: the join, pre-join, waiting and room pages (web/room); `inputs`, the files bundled. */
  room: { js: Asset; css: Asset; inputs: string[] };
  /** The admin console (web/console), at /console. */
  console: { js: Asset; css: Asset };
  /** The embedding SDK (web/sdk), at /sdk/svc-embed.js. */
  sdk: Asset;
  byPath: Map<string, Asset>;
}

const WEB = fileURLToPath(new URL('../../web/', import.meta.url));
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The SDK's address never changes, so browsers revalidate it every five minutes. */
const SDK_CACHE = 'public, max-age=300';

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

async function bundle(entry: string, format: 'iife' | 'esm'): Promise<{ js: string; css: string; inputs: string[] }> {
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
    metafile: true,
  });
  const out = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
  return { js: out('.js'), css: out('.css'), inputs: Object.keys(result.metafile.inputs) };
}

async function buildAll(): Promise<Assets> {
  const [room, sdk, con] = await Promise.all([bundle('room/main.tsx', 'iife'), bundle('sdk/svc-embed.ts', 'iife'), bundle('console/main.tsx', 'iife')]);
  const js = asset(`/assets/room-${hashOf(room.js)}.js`, 'text/javascript; charset=utf-8', room.js, IMMUTABLE);
  const css = asset(`/assets/room-${hashOf(room.css)}.css`, 'text/css; charset=utf-8', room.css, IMMUTABLE);
  const sdkAsset = asset('/sdk/svc-embed.js', 'text/javascript; charset=utf-8', sdk.js, SDK_CACHE);
  const conJs = asset(`/assets/console-${hashOf(con.js)}.js`, 'text/javascript; charset=utf-8', con.js, IMMUTABLE);
  const conCss = asset(`/assets/console-${hashOf(con.css)}.css`, 'text/css; charset=utf-8', con.css, IMMUTABLE);
  return { room: { js, css, inputs: room.inputs }, console: { js: conJs, css: conCss }, sdk: sdkAsset, byPath: new Map([js, css, sdkAsset, conJs, conCss].map((a) => [a.path, a])) };
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
