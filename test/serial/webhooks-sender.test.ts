import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Webhook } from 'standardwebhooks';
import { ManualClock } from '../../src/core/clock.ts';
import { ulid } from '../../src/platform/ids.ts';
import { deliver, parseRetryAfter } from '../../src/services/webhooks/sender.ts';
import { newSecret, signatureHeaders } from '../../src/services/webhooks/signing.ts';
import { checkTargetUrl, type LookupFn } from '../../src/services/webhooks/targets.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';

const PUBLIC_V4 = '93.184.215.14';
const resolvesTo = (...addresses: string[]): LookupFn => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

async function listen(t: Test, server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        if (server instanceof http.Server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function event(type = 'meeting.started') {
  const id = `evt_${ulid()}`;
  const body = JSON.stringify({ id, type, createdAt: new Date().toISOString(), organizationId: 'org_1', data: { title: 'Álgebra — 李老师 👩‍🏫', n: Math.random() } });
  return { id, body };
}

/** The receiver's own check, written from the spec's receiver rules without src/: raw bytes, 5 minutes, any v1=, constant time. */
function independentVerify(secret: string, headers: http.IncomingHttpHeaders, raw: Buffer): boolean {
  const ts = String(headers['svc-webhook-timestamp'] ?? '');
  if (!/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${ts}.`), raw])).digest();
  return String(headers['svc-signature'] ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.startsWith('v1='))
    .some((v) => {
      const got = Buffer.from(v.slice(3), 'hex');
      return got.length === expected.length && timingSafeEqual(got, expected);
    });
}

t.test('a real receiver verifies every delivery: our verifier, an independent HMAC, and standardwebhooks', async (t) => {
  const oldSecret = newSecret();
  const rotated = newSecret();
  // What the receiver knows: it stays on the old secret through the rotation.
  const receiverSecret = oldSecret;
  const seen: Array<{ headers: http.IncomingHttpHeaders; raw: Buffer; ours: boolean; independent: boolean; standard: boolean; method: string; url: string }> = [];
  const server = http.createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    const ours = verifySvcSignature({ secret: receiverSecret, headers: req.headers, rawBody: raw }).ok;
    const independent = independentVerify(receiverSecret, req.headers, raw);
    let standard = false;
    try {
      new Webhook(receiverSecret).verify(raw.toString('utf8'), req.headers as Record<string, string>);
      standard = true;
    } catch {
      standard = false;
    }
    seen.push({ headers: req.headers, raw, ours, independent, standard, method: req.method ?? '', url: req.url ?? '' });
    res.writeHead(ours && independent && standard ? 200 : 400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ received: ours && independent && standard }));
  });
  const port = await listen(t, server);
  const url = `http://127.0.0.1:${port}/hooks/aula?tenant=1`;

  const sent: Array<{ id: string; body: string; secrets: string[] }> = [];
  for (let i = 0; i < 4; i++) sent.push({ ...event(), secrets: [oldSecret] });
  for (let i = 0; i < 4; i++) sent.push({ ...event('meeting.ended'), secrets: [rotated, oldSecret] }); // within 24 h of a rotation

  for (const s of sent) {
    const headers = signatureHeaders({ eventId: s.id, timestamp: Math.floor(Date.now() / 1000), body: s.body, secrets: s.secrets });
    const r = await deliver({ url, body: s.body, headers, allowPrivate: true });
    t.match(r, { ok: true, status: 200, responseBody: '{"received":true}' }, `delivery ${s.id} accepted`);
    t.notOk(r.error);
  }
  t.equal(seen.length, sent.length);
  for (const [i, s] of seen.entries()) {
    const expected = sent[i]!;
    t.equal(s.method, 'POST');
    t.equal(s.url, '/hooks/aula?tenant=1');
    t.ok(s.raw.equals(Buffer.from(expected.body)), 'the body arrives byte for byte');
    t.equal(s.headers['content-type'], 'application/json');
    t.equal(s.headers['user-agent'], 'Svc-Webhooks/1.0');
    t.equal(s.headers['svc-webhook-id'], expected.id);
    t.equal(s.headers['svc-webhook-id'], JSON.parse(s.raw.toString()).id, 'Svc-Webhook-Id equals body id');
    t.match(s.headers['svc-webhook-id'], /^evt_[0-9a-z]{26}$/);
    t.match(s.headers['svc-webhook-timestamp'], /^\d{10}$/);
    t.equal(s.headers['webhook-id'], expected.id);
    t.equal(s.headers['webhook-timestamp'], s.headers['svc-webhook-timestamp']);
    const sigs = String(s.headers['svc-signature']).split(',');
    t.equal(sigs.length, expected.secrets.length, 'one v1= per live secret');
    for (const v of sigs) t.match(v, /^v1=[0-9a-f]{64}$/);
    t.ok(s.ours, 'verifySvcSignature accepts');
    t.ok(s.independent, 'the independent HMAC accepts');
    t.ok(s.standard, 'standardwebhooks accepts');
  }
  // and the rotated deliveries verify with the new secret alone too
  for (const s of seen.slice(4)) {
    t.ok(verifySvcSignature({ secret: rotated, headers: s.headers, rawBody: s.raw }).ok);
    t.ok(independentVerify(rotated, s.headers, s.raw));
    t.doesNotThrow(() => new Webhook(rotated).verify(s.raw.toString(), s.headers as Record<string, string>));
  }
});

t.test('a name with several vetted addresses: the socket tries them (Happy Eyeballs) and nothing else', async (t) => {
  const peers: string[] = [];
  const server = http.createServer(async (req, res) => {
    await readBody(req);
    peers.push(req.socket.remoteAddress ?? '');
    res.end('ok');
  });
  const port = await listen(t, server); // IPv4 loopback only: ::1 is refused or unreachable
  const r = await deliver({ url: `http://dual.example.com:${port}/`, body: '{}', headers: {}, allowPrivate: true, lookup: resolvesTo('::1', '127.0.0.1') });
  t.match(r, { ok: true, status: 200 });
  t.same(peers, ['127.0.0.1']);
});

t.test('a 3xx is a failure and is never followed', async (t) => {
  let targetHits = 0;
  const target = http.createServer((_req, res) => {
    targetHits++;
    res.end('followed!');
  });
  const targetPort = await listen(t, target);
  const redirector = http.createServer((req, res) => {
    const status = Number(req.url!.slice(1));
    res.writeHead(status, { location: `http://127.0.0.1:${targetPort}/landed` });
    res.end('moved');
  });
  const port = await listen(t, redirector);
  for (const status of [301, 302, 303, 307, 308]) {
    const r = await deliver({ url: `http://127.0.0.1:${port}/${status}`, body: '{}', headers: { 'content-type': 'application/json' }, allowPrivate: true });
    t.match(r, { ok: false, status, responseBody: 'moved', error: { kind: 'redirect' } }, `${status} fails as redirect`);
    t.match(r.error?.message, `127.0.0.1:${targetPort}/landed`, 'the message names where it pointed');
  }
  t.equal(targetHits, 0, 'the redirect target saw no request');
});

t.test('the real 10 s deadline: a receiver that hangs before answering, and one that never finishes its body', async (t) => {
  const held: ServerResponse[] = [];
  const server = http.createServer(async (req, res) => {
    await readBody(req);
    if (req.url === '/trickle') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial ');
    }
    held.push(res); // never ends
  });
  const port = await listen(t, server);
  const started = Date.now();
  const [hang, trickle] = await Promise.all([
    deliver({ url: `http://127.0.0.1:${port}/hang`, body: '{}', headers: {}, allowPrivate: true }),
    deliver({ url: `http://127.0.0.1:${port}/trickle`, body: '{}', headers: {}, allowPrivate: true }),
  ]);
  const wall = Date.now() - started;
  t.match(hang, { ok: false, error: { kind: 'timeout' } });
  t.equal(hang.status, undefined, 'no status was received');
  t.ok(hang.durationMs >= 9_900 && hang.durationMs < 13_000, `failed at the 10 s deadline (${hang.durationMs} ms)`);
  t.match(trickle, { ok: false, status: 200, responseBody: 'partial ', error: { kind: 'timeout' } }, 'the deadline covers the body too');
  t.ok(trickle.durationMs >= 9_900 && trickle.durationMs < 13_000, `failed at the 10 s deadline (${trickle.durationMs} ms)`);
  t.ok(wall < 14_000, 'both within one deadline');
});

t.test('only the first 1 KB of a 2 MB response is read and kept', async (t) => {
  const big = 'A'.repeat(1000) + 'é'.repeat(12) + 'B'.repeat(2 * 1024 * 1024);
  const server = http.createServer(async (req, res) => {
    await readBody(req);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(big);
  });
  const port = await listen(t, server);
  const r = await deliver({ url: `http://127.0.0.1:${port}/`, body: '{}', headers: {}, allowPrivate: true });
  t.match(r, { ok: true, status: 200 });
  t.equal(Buffer.byteLength(r.responseBody.replace(/\uFFFD$/, '')) <= 1024, true);
  t.equal(r.responseBody, Buffer.from(big).subarray(0, 1024).toString('utf8'), 'exactly the first 1024 bytes, decoded');
  t.ok(r.responseBody.startsWith('A'.repeat(1000) + 'é'.repeat(12)));
});

t.test('an endless response body: the delivery returns after 1 KB, long before the deadline', async (t) => {
  let serverClosed = false;
  const server = http.createServer(async (req, res) => {
    await readBody(req);
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, 'z');
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => (serverClosed = true));
    pump();
  });
  const port = await listen(t, server);
  const r = await deliver({ url: `http://127.0.0.1:${port}/`, body: '{}', headers: {}, allowPrivate: true });
  t.match(r, { ok: true, status: 200, responseBody: 'z'.repeat(1024) });
  t.ok(r.durationMs < 2_000, `returned in ${r.durationMs} ms`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(serverClosed, 'the connection was closed on the receiver');
});

t.test('429 and 503 carry Retry-After; other statuses fail as status', async (t) => {
  const clock = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
  const server = http.createServer(async (req, res) => {
    await readBody(req);
    const [status, retry] = req.url!.slice(1).split('/');
    res.writeHead(Number(status), retry ? { 'retry-after': decodeURIComponent(retry) } : {});
    res.end(`status ${status}`);
  });
  const port = await listen(t, server);
  const send = (path: string) => deliver({ url: `http://127.0.0.1:${port}/${path}`, body: '{}', headers: {}, allowPrivate: true, clock });

  t.match(await send('429/120'), { ok: false, status: 429, retryAfterSeconds: 120, responseBody: 'status 429', error: { kind: 'status' } });
  t.match(await send(`503/${encodeURIComponent('Mon, 05 Jan 2026 09:02:30 GMT')}`), { ok: false, status: 503, retryAfterSeconds: 150 });
  t.match(await send(`503/${encodeURIComponent('Mon, 05 Jan 2026 08:00:00 GMT')}`), { status: 503, retryAfterSeconds: 0 }, 'a past date is now');
  const noHeader = await send('429');
  t.equal(noHeader.retryAfterSeconds, undefined);
  const junk = await send('429/soon');
  t.equal(junk.retryAfterSeconds, undefined);
  const other = await send('500/60');
  t.equal(other.retryAfterSeconds, undefined, 'only on 429 and 503');
  t.match(other, { ok: false, status: 500, error: { kind: 'status' } });
  t.match(await send('404'), { ok: false, status: 404, error: { kind: 'status' } });
  t.match(await send('201'), { ok: true, status: 201 });
  t.match(await send('204'), { ok: true, status: 204, responseBody: '' });
  t.match(await send('299'), { ok: true, status: 299 }, 'any 2xx');

  t.equal(parseRetryAfter(' 30 ', 0), 30);
  t.equal(parseRetryAfter(['7', '9'], 0), 7);
  t.equal(parseRetryAfter('', 0), undefined);
  t.equal(parseRetryAfter('-5', 0), undefined);
  t.equal(parseRetryAfter('2026', 0), 2026, 'digits are seconds, not a year');
  t.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2015-10-21T07:27:00Z')), 60);
  t.equal(parseRetryAfter('2015-10-21T07:28:00Z', 0), undefined, 'not an HTTP date');
  t.equal(parseRetryAfter('Wednesday, 21-Oct-15 07:28:00 GMT', 0), undefined, 'obsolete forms are ignored');
});

t.test('TLS: a self-signed certificate or a wrong name is kind tls; a trusted one works through the pinned lookup', async (t) => {
  let openssl = true;
  const dir = mkdtempSync(join(tmpdir(), 'aula-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:tls.example.com',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
  } catch {
    openssl = false;
  }
  if (!openssl) {
    t.plan(0, 'openssl CLI not available');
    return;
  }
  let requests = 0;
  const servernames: unknown[] = [];
  const cert = readFileSync(join(dir, 'cert.pem'));
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    requests++;
    servernames.push((req.socket as { servername?: string | false }).servername);
    res.end('ok');
  });
  const port = await listen(t, server);
  const literal = await deliver({ url: `https://127.0.0.1:${port}/`, body: '{}', headers: {}, allowPrivate: true });
  t.match(literal, { ok: false, error: { kind: 'tls' } });
  t.match(literal.error?.message, /self[- ]signed/i);
  const named = await deliver({ url: `https://tls.example.com:${port}/`, body: '{}', headers: {}, allowPrivate: true, lookup: resolvesTo('127.0.0.1') });
  t.match(named, { ok: false, error: { kind: 'tls' } }, 'through a name too');
  t.equal(requests, 0, 'no request got through');

  // With the certificate trusted, https works through the pinned lookup, with SNI and name checks on the name.
  const trusted = await deliver({ url: `https://tls.example.com:${port}/`, body: '{}', headers: {}, allowPrivate: true, lookup: resolvesTo('127.0.0.1'), ca: cert });
  t.match(trusted, { ok: true, status: 200, responseBody: 'ok' });
  t.same(servernames, ['tls.example.com']);
  const wrongName = await deliver({ url: `https://other.example.com:${port}/`, body: '{}', headers: {}, allowPrivate: true, lookup: resolvesTo('127.0.0.1'), ca: cert });
  t.match(wrongName, { ok: false, error: { kind: 'tls' } }, 'a certificate for another name is a TLS failure');
  t.match(wrongName.error?.message, /ERR_TLS_CERT_ALTNAME_INVALID|altname/i);
  t.equal(requests, 1);
  // TLS spoken to a plain HTTP server is a TLS failure as well
  const plain = http.createServer((_req, res) => res.end('plain'));
  const plainPort = await listen(t, plain);
  t.match(await deliver({ url: `https://127.0.0.1:${plainPort}/`, body: '{}', headers: {}, allowPrivate: true }), { ok: false, error: { kind: 'tls' } });
});

t.test('connection refused and reset are kind connection; a name that does not resolve is kind dns', async (t) => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const freePort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const refused = await deliver({ url: `http://127.0.0.1:${freePort}/`, body: '{}', headers: {}, allowPrivate: true });
  t.match(refused, { ok: false, error: { kind: 'connection' } });
  t.match(refused.error?.message, /ECONNREFUSED/);

  const rude = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  const rudePort = await listen(t, rude);
  t.match(await deliver({ url: `http://127.0.0.1:${rudePort}/`, body: '{}', headers: {}, allowPrivate: true }), { ok: false, error: { kind: 'connection' } });

  const notFound: LookupFn = async (host) => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  t.match(await deliver({ url: 'https://nope.example.com/', body: '{}', headers: {}, lookup: notFound }), { ok: false, error: { kind: 'dns' } });
  t.match(await deliver({ url: 'https://empty.example.com/', body: '{}', headers: {}, lookup: async () => [] }), { ok: false, error: { kind: 'dns' } });
});

t.test('SSRF on the socket: DNS rebinding and forbidden addresses never get a connection', async (t) => {
  let connections = 0;
  const peers: string[] = [];
  const trap = net.createServer((socket) => {
    connections++;
    peers.push(socket.remoteAddress ?? '');
    socket.destroy();
  });
  const port = await listen(t, trap);

  // Save time: the name resolves to a public address, so the endpoint is accepted.
  const saved = await checkTargetUrl(`https://rebind.example.com:${port}/hook`, { lookup: resolvesTo(PUBLIC_V4) });
  t.match(saved, { ok: true });

  const lookups: string[] = [];
  const rebound: LookupFn = async (host) => {
    lookups.push(host);
    return [{ address: '127.0.0.1', family: 4 }];
  };
  // Send time: the same name now answers 127.0.0.1.
  const r = await deliver({ url: `https://rebind.example.com:${port}/hook`, body: '{}', headers: {}, lookup: rebound });
  t.match(r, { ok: false, error: { kind: 'ssrf' } }, 'refused at send');
  t.match(r.error?.message, /127\.0\.0\.1.*loopback/);
  t.same(lookups, ['rebind.example.com'], 'resolved once, on the socket path');

  const refused: Array<[string, LookupFn | undefined, boolean]> = [
    [`https://both.example.com:${port}/`, resolvesTo(PUBLIC_V4, '127.0.0.1'), false], // public and private
    [`https://both.example.com:${port}/`, resolvesTo('127.0.0.1', PUBLIC_V4), false],
    [`https://v6.example.com:${port}/`, resolvesTo('::ffff:127.0.0.1'), false],
    [`https://nat64.example.com:${port}/`, resolvesTo('64:ff9b::7f00:1'), false],
    [`https://127.0.0.1:${port}/`, undefined, false],
    [`https://2130706433:${port}/`, undefined, false],
    [`https://0x7f.1:${port}/`, undefined, false],
    [`https://[::ffff:127.0.0.1]:${port}/`, undefined, false],
    [`https://localhost:${port}/`, resolvesTo('127.0.0.1'), false],
    [`http://127.0.0.1:${port}/`, undefined, false], // http without the switch
    [`http://meta.example.com:${port}/`, resolvesTo('169.254.169.254'), true], // metadata, even with the switch
    [`http://zero.example.com:${port}/`, resolvesTo('0.0.0.0'), true], // 0.0.0.0 reaches localhost on Linux
    [`http://0.0.0.0:${port}/`, undefined, true],
  ];
  for (const [url, lookup, allowPrivate] of refused) {
    const res = await deliver({ url, body: '{}', headers: {}, allowPrivate, ...(lookup ? { lookup } : {}) });
    t.match(res, { ok: false, error: { kind: 'ssrf' } }, `${url} refused`);
  }
  t.equal(connections, 0, 'the trap on 127.0.0.1 saw no connection at all');

  // Control: the trap does see a connection when the switch allows the local target, so zero above means zero.
  const allowed = await deliver({ url: `http://rebind.example.com:${port}/`, body: '{}', headers: {}, allowPrivate: true, lookup: rebound });
  t.match(allowed, { ok: false, error: { kind: 'connection' } }, 'the trap hangs up');
  t.equal(connections, 1, 'the control connection reached the trap');
  t.same(peers, ['127.0.0.1']);
});

t.test('a URL refused by rule fails as ssrf before anything is resolved', async (t) => {
  const never: LookupFn = async () => {
    throw new Error('must not resolve');
  };
  for (const url of ['ftp://example.com/', 'https://user:pw@example.com/', 'https://metadata.google.internal/', 'not a url', 'https://[fe80::1%25eth0]/']) {
    t.match(await deliver({ url, body: '{}', headers: {}, lookup: never, allowPrivate: true }), { ok: false, error: { kind: 'ssrf' } }, url);
  }
});
