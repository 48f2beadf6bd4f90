import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { request } from 'undici';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'p1', fullName: 'Pat', role: 'TEACHER' } });
const m = (await api(node, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'Page', type: 'MEETING', hostUserId: 'p1', scheduledStart: '2030-10-01T10:00:00Z', durationMinutes: 5 } })).body.data;

t.test('GET /join/:slug and /embed/:slug serve the join page without spending the link', async (t) => {
  const link = (await api(node, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'p1' } })).body.data;
  for (const url of [link.url, link.embedUrl]) {
    const res = await fetch(url, { headers: { 'user-agent': 'Slackbot-LinkExpanding 1.0' } });
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^text\/html/);
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.equal(res.headers.get('referrer-policy'), 'no-referrer');
    t.match(res.headers.get('content-security-policy'), /default-src 'none'/);
    const html = await res.text();
    t.match(html, /<script src="\/assets\/room-[0-9a-f]{16}\.js"><\/script>/, 'the room application, named by its content hash');
    t.notOk(html.includes(link.token), 'the token is never echoed into the page');
  }
  t.match((await fetch(link.url)).headers.get('content-security-policy'), /frame-ancestors 'none'/, 'the full page cannot be framed');
  const ex = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'tab' } });
  t.equal(ex.status, 200, 'previews did not spend the single-use link');
});

t.test('the room application is served by content hash, cached for a year; an unknown asset is a 404 envelope', async (t) => {
  const link = (await api(node, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'p1' } })).body.data;
  const html = await (await fetch(link.url)).text();
  for (const path of [html.match(/\/assets\/room-[0-9a-f]{16}\.js/)![0], html.match(/\/assets\/room-[0-9a-f]{16}\.css/)![0]]) {
    const res = await fetch(node.url + path);
    t.equal(res.status, 200, path);
    t.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const body = await res.text();
    if (path.endsWith('.js')) {
      t.match(res.headers.get('content-type'), /^text\/javascript/);
      t.match(body, /join-tokens\/exchange/, 'the exchange happens in the script, after load');
    } else t.match(res.headers.get('content-type'), /^text\/css/);
  }
  const missing = await fetch(`${node.url}/assets/room-0000000000000000.js`);
  t.equal(missing.status, 404);
  t.match(await missing.json(), { error: { code: 'not_found' } });
});

t.test('scripts and styles go compressed to clients that accept it, the same bytes once decoded', async (t) => {
  const link = (await api(node, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'p1' } })).body.data;
  const html = await (await fetch(link.url)).text();
  for (const path of [html.match(/\/assets\/room-[0-9a-f]{16}\.js/)![0], '/sdk/svc-embed.js']) {
    const get = async (acceptEncoding?: string) => {
      const res = await request(node.url + path, { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
      return { encoding: res.headers['content-encoding'], vary: res.headers['vary'], body: Buffer.from(await res.body.arrayBuffer()) };
    };
    const plain = await get();
    t.equal(plain.encoding, undefined, `${path}: no Accept-Encoding, no encoding`);
    t.equal(plain.vary, 'Accept-Encoding');
    const br = await get('gzip, deflate, br');
    t.equal(br.encoding, 'br', 'brotli preferred');
    t.same(brotliDecompressSync(br.body), plain.body, 'decodes to the same bytes');
    t.ok(br.body.length < plain.body.length / (path.startsWith('/assets/') ? 4 : 2), `${br.body.length} bytes instead of ${plain.body.length}`);
    const gz = await get('gzip;q=1.0, identity;q=0.5');
    t.equal(gz.encoding, 'gzip');
    t.same(gunzipSync(gz.body), plain.body);
  }
});
