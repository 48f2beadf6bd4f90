import { request } from 'node:http';
import { connect } from 'node:net';
import t from 'tap';
import { routes } from '../../http/routes/index.ts';
import { fullPath } from '../../http/route.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';

const node = await startTestNode(t);
const tenant = await createTenant(node, 'enterprise');
const key = tenant.key;

const deep = '['.repeat(100_000) + ']'.repeat(100_000);
const hostileBodies: (string | object)[] = [
  'null', '[]', '[1,2,3]', '"string"', '42', 'true', '{}', deep, '{"a":', '\u0000', '{"__proto__":{"admin":true}}',
  { externalId: "'; drop table users; --", fullName: 'Robert"); DROP TABLE meetings;--', role: 'STUDENT' },
  { externalId: 'x', fullName: 'nul\u0000inside', role: 'STUDENT' },
  { externalId: 'zw\u200b\u202eRTL', fullName: '👩‍🏫 Ms. Ünïcødé 李老师 مرحبا', role: 'TEACHER', email: 'ü@exämple.com' },
  { externalId: '\ud800', fullName: 'lone surrogate \udfff', role: 'STUDENT' },
  { title: 'x'.repeat(100_000), type: 'MEETING', hostUserId: 'x', scheduledStart: '+275760-09-13T00:00:00Z', durationMinutes: 1e308 },
  { token: 'jt_' + 'A'.repeat(4000), deviceId: 'd' },
  { userIds: Array.from({ length: 2000 }, (_, i) => `u${i}`) },
  { users: [{ nested: { deeper: ['\u0000'] } }] },
  { userId: { $ne: null }, role: ['HOST'], expiresInSeconds: '300' },
];
const hostileIds = ["' OR 1=1 --", '%00', '..%2F..%2Fetc%2Fpasswd', '%E0%A4%A', 'x'.repeat(300), '%F0%9F%98%80', '1;select pg_sleep(5)'];

t.test('every route answers hostile input with the error envelope and never a 500', async (t) => {
  let checked = 0;
  for (const r of routes) {
    const ids = r.spec.path.includes(':') ? hostileIds : [''];
    for (const id of ids) {
      const path = fullPath(r.spec).replace(/:\w+/g, id || 'x');
      const bodies = r.spec.body ? hostileBodies : [undefined];
      for (const body of bodies) {
        const res = await api(node, r.spec.method.toUpperCase(), path, { key, ...(body === undefined ? {} : { body }) });
        checked++;
        if (res.status >= 500 || (res.status >= 400 && typeof res.body?.error?.code !== 'string')) {
          t.fail(`${r.spec.method} ${path} answered ${res.status}`, { body, res: res.body });
        }
      }
    }
  }
  t.ok(checked > 200, `${checked} hostile requests, none answered 500`);
});

t.test('injection strings are stored verbatim', async (t) => {
  const body = { externalId: "'; drop table users; --", fullName: 'Robert"); DROP TABLE meetings;--', role: 'STUDENT' };
  const r = await api(node, 'POST', '/public/users', { key, body });
  t.ok(r.status === 201 || r.status === 200);
  const back = await api(node, 'GET', `/public/users/${encodeURIComponent(body.externalId)}`, { key });
  t.match(back.body.data, body);
  await api(node, 'POST', '/public/users', { key, body: { externalId: 'zw\u200b\u202eRTL', fullName: '👩‍🏫 Ms. Ünïcødé 李老师 مرحبا', role: 'TEACHER' } });
  const uni = await api(node, 'GET', `/public/users/${encodeURIComponent('zw\u200b\u202eRTL')}`, { key });
  t.equal(uni.body.data.fullName, '👩‍🏫 Ms. Ünïcødé 李老师 مرحبا');
});

t.test('a NUL in any string is a validation error naming the field', async (t) => {
  const d = assertError(t, await api(node, 'POST', '/public/users', { key, body: { externalId: 'x', fullName: 'a\u0000b', role: 'STUDENT' } }), 400, 'validation_failed');
  t.equal(d.fields[0].field, 'fullName');
  const d2 = assertError(t, await api(node, 'POST', '/public/users/bulk', { key, body: { users: [{ nested: ['\u0000'] }] } }), 400, 'validation_failed');
  t.equal(d2.fields[0].field, 'users.0.nested.0');
});

t.test('inputs that once answered 500 are validation errors, and nothing is written', async (t) => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const before = (await api(node, 'GET', '/public/users?limit=100', { key })).body.data.length;
  const cases: [string, string, unknown?, string?][] = [
    ['GET', `/public/users?cursor=${b64(['a\u0000b'])}`, undefined, 'cursor'],
    ['GET', `/public/meetings?cursor=${b64(['not-a-date', 'x'])}`, undefined, 'cursor'],
    ['GET', `/public/meetings?cursor=${b64(['0000-01-01T00:00:00Z', 'x'])}`, undefined, 'cursor'],
    ['GET', `/public/meetings?cursor=${b64([1, 2])}`, undefined, 'cursor'],
    ['GET', '/public/meetings?from=0000-01-01T00:00:00Z', undefined, 'from'],
    ['GET', `/public/meetings?to=${encodeURIComponent('9999-12-31T23:59:59-14:00')}`, undefined, 'to'],
    ['POST', '/public/meetings', { title: 'Year zero', type: 'MEETING', hostUserId: 'x', scheduledStart: '0000-01-01T00:00:00Z', durationMinutes: 10 }, 'scheduledStart'],
    ['POST', '/public/users', { externalId: 'lone\ud800', fullName: 'x', role: 'STUDENT' }, 'externalId'],
    ['POST', '/public/users', { externalId: 'lone-name', fullName: 'half \udfff a pair', role: 'STUDENT' }, 'fullName'],
  ];
  for (const [method, path, body, field] of cases) {
    const d = assertError(t, await api(node, method, path, { key, ...(body ? { body } : {}) }), 400, 'validation_failed');
    t.equal(d.fields[0].field, field, `${method} ${path.slice(0, 60)}: names ${field}`);
  }
  const deepText = '{"a":'.repeat(5000) + '"x"' + '}'.repeat(5000);
  const bulk = await fetch(`${node.url}/api/v1/public/users/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: `{"users":[{"externalId":"deep1","fullName":"Deep","role":"STUDENT","extra":${deepText}}]}`,
  });
  t.equal(bulk.status, 400, 'a 5,000-deep item in a bulk import');
  t.equal((await bulk.json()).error.details.fields[0].code, 'too_deep');
  const notUtf8 = await fetch(`${node.url}/api/v1/public/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: Buffer.concat([Buffer.from('{"externalId":"latin1","fullName":"Caf'), Buffer.from([0xe9]), Buffer.from('","role":"STUDENT"}')]),
  });
  t.equal(notUtf8.status, 400, 'a body that is not UTF-8 is refused, not stored with U+FFFD');
  t.equal((await notUtf8.json()).error.code, 'invalid_json');
  t.equal((await api(node, 'GET', '/public/users?limit=100', { key })).body.data.length, before, 'no user was written');
  t.equal((await api(node, 'GET', '/public/users/lone-name', { key })).status, 404);
});

t.test('deep nesting is invalid JSON or a validation error, not a crash', async (t) => {
  const r = await api(node, 'POST', '/public/users', { key, body: deep });
  t.equal(r.status, 400);
  t.equal((await api(node, 'GET', '/healthz')).status, 200, 'the server is still up');
});

t.test('a chunked body over the cap is cut off with 413', async (t) => {
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${node.url}/api/v1/public/users`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => resolve({ status: r.statusCode!, body }));
    });
    req.on('error', reject);
    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < 40) {
        sent++;
        if (!req.write(chunk)) return req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  t.equal(res.status, 413);
  t.equal(JSON.parse(res.body).error.code, 'payload_too_large');
});

/** Writes raw bytes on a fresh connection and collects what comes back until the server closes it (or `waitMs` pass). */
function rawHttp(text: string, waitMs = 3000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect(node.port, '127.0.0.1', () => s.write(text));
    let got = '';
    const timer = setTimeout(() => (s.destroy(), resolve({ text: got, closed: false })), waitMs);
    s.on('data', (d) => (got += d));
    s.on('close', () => (clearTimeout(timer), resolve({ text: got, closed: true })));
    s.on('error', () => {});
  });
}
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

t.test('a body declared larger than the cap is answered 413, readable by the client', async (t) => {
  const size = 8 * 1024 * 1024;
  const res = await new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
    const req = request(`${node.url}/api/v1/public/users`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(size) } }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => resolve({ status: r.statusCode!, body }));
    });
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(Buffer.alloc(size, 0x20));
  });
  t.ok('status' in res, 'an answer, not a reset');
  if ('status' in res) {
    t.equal(res.status, 413);
    t.equal(JSON.parse(res.body).error.code, 'payload_too_large');
  }
});

t.test('Content-Length twice is a 400; with Transfer-Encoding the connection is refused; neither writes', async (t) => {
  const auth = `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`;
  const body = JSON.stringify({ externalId: 'smuggled', fullName: 'Smuggled', role: 'STUDENT' });
  const twice = await rawHttp(`POST /api/v1/public/users HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length}\r\nContent-Length: 5\r\n\r\n${body}`);
  t.same(statuses(twice.text), [400], 'two Content-Length headers: 400');
  t.match(twice.text, /"code":"bad_request"/);
  const both = await rawHttp(`POST /api/v1/public/users HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  t.ok(both.closed && statuses(both.text).every((s) => s === 400), 'Content-Length with Transfer-Encoding: the connection is closed (uWS refuses it before any handler)');
  t.equal((await api(node, 'GET', '/public/users/smuggled', { key })).status, 404, 'no user was created');
});

t.test('pipelining: answered in order when each answer is immediate; behind one in progress the connection closes and nothing later runs', async (t) => {
  const health = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  const two = await rawHttp(health + health, 1000);
  t.same(statuses(two.text), [200, 200], 'two immediate answers, in order');

  // uWS closes a connection that pipelines behind a response still in progress (uWebSockets.js issue 277)
  const body = JSON.stringify({ externalId: 'pipelined', fullName: 'Pipelined', role: 'STUDENT' });
  const post = `POST /api/v1/public/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const behind = await rawHttp(post + health);
  t.ok(behind.closed, 'the connection is closed');
  t.same(statuses(behind.text), [], 'without an answer');
  await new Promise((r) => setTimeout(r, 200));
  t.equal((await api(node, 'GET', '/public/users/pipelined', { key })).status, 404, 'and the unanswered POST was not carried out');
  t.equal((await api(node, 'POST', '/public/users', { key, body: JSON.parse(body) })).status, 201, 'sent again without pipelining, it is');
});

t.test('oversized headers and odd authorization values are refused cleanly', async (t) => {
  assertError(t, await api(node, 'GET', '/public/users', { headers: { authorization: `Bearer ${'a'.repeat(8000)}` } }), 401, 'auth_malformed');
  assertError(t, await api(node, 'GET', '/public/users', { headers: { authorization: 'Bearer' } }), 401, 'auth_malformed');
  t.equal((await api(node, 'GET', '/public/users', { headers: { authorization: `bearer  ${key}` } })).status, 200, 'the scheme is case-insensitive');
});
