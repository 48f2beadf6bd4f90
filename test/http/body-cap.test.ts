import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DRAIN_MAX_BYTES } from '../../http/server.ts';
import { createTenant, startTestNode } from '../helpers/node.ts';

// A body over the cap is answered 413 with the error envelope, and ordinary clients read that answer:
// Node's own fetch (undici) and curl write the whole body before they read, so a server that answered
// and closed at once left them with EPIPE or a reset instead of the 413.
const node = await startTestNode(t, { redis: false, overrides: { AULA_MEDIA_WORKERS: 0 } });
const tenant = await createTenant(node);
const url = `${node.url}/api/v1/public/users`;
const LIMIT = node.app.config.AULA_MAX_BODY_BYTES;
const fiveMb = JSON.stringify({ externalId: 'big', fullName: 'x'.repeat(5 * 1024 * 1024), role: 'STUDENT' });
const dir = mkdtempSync(join(tmpdir(), 'aula-body-cap-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function assertEnvelope(t: Test, status: number, text: string) {
  t.equal(status, 413);
  const body = JSON.parse(text);
  t.match(body, { error: { code: 'payload_too_large', message: String, details: { limitBytes: LIMIT } }, requestId: String });
}

/**
 * Sends `times` requests with Node's fetch from a separate Node process, as a client elsewhere would: in
 * this process the client shares the server's event loop, which reads the answer before the reset lands.
 * `chunked` streams the body with no Content-Length.
 */
function fetchFromAnotherProcess(body: 'json' | 'chunked', times: number): Promise<({ status: number; text: string } | { error: string })[]> {
  const script = `
    const [url, key, kind, times] = process.argv.slice(1);
    const json = JSON.stringify({ externalId: 'big', fullName: 'x'.repeat(5 * 1024 * 1024), role: 'STUDENT' });
    const chunk = new TextEncoder().encode('x'.repeat(256 * 1024));
    const out = [];
    for (let i = 0; i < Number(times); i++) {
      let sent = 0;
      const body = kind === 'json' ? json : new ReadableStream({ pull: (c) => (sent++ < 20 ? c.enqueue(chunk) : c.close()) });
      try {
        const res = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body, duplex: 'half' });
        out.push({ status: res.status, text: await res.text() });
      } catch (err) {
        out.push({ error: err.cause?.code ?? err.message });
      }
    }
    console.log(JSON.stringify(out));`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--input-type=module', '-e', script, url, tenant.key, body, String(times)], (err, stdout, stderr) =>
      err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout)),
    ),
  );
}

t.test('fetch() with a 5 MB JSON body reads the 413 envelope', async (t) => {
  for (const r of await fetchFromAnotherProcess('json', 10)) {
    t.ok('status' in r, `an answer, not ${'error' in r ? r.error : ''}`);
    if ('status' in r) assertEnvelope(t, r.status, r.text);
  }
});

t.test('fetch() with a chunked body (no Content-Length) over the cap reads the 413 envelope', async (t) => {
  for (const r of await fetchFromAnotherProcess('chunked', 10)) {
    t.ok('status' in r, `an answer, not ${'error' in r ? r.error : ''}`);
    if ('status' in r) assertEnvelope(t, r.status, r.text);
  }
});

const curl = (args: string[]) =>
  new Promise<{ status: number; body: string; code: number; stderr: string }>((resolve) => {
    execFile('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}', ...args], { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const nl = stdout.lastIndexOf('\n');
      resolve({ status: Number(stdout.slice(nl + 1)), body: stdout.slice(0, nl), code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr });
    });
  });

t.test('curl with a 5 MB JSON body reads the 413 envelope, with and without Expect: 100-continue', async (t) => {
  const file = join(dir, 'big.json');
  writeFileSync(file, fiveMb);
  const headers = ['-H', `Authorization: Bearer ${tenant.key}`, '-H', 'Content-Type: application/json'];
  for (const expect of [[], ['-H', 'Expect:']]) {
    const started = performance.now();
    const res = await curl([...headers, ...expect, '--data-binary', `@${file}`, url]);
    t.equal(res.code, 0, `curl succeeded ${expect.length ? 'without' : 'with'} Expect (${res.stderr})`);
    assertEnvelope(t, res.status, res.body);
    t.ok(performance.now() - started < 900, 'without waiting out curl’s one-second Expect timeout');
  }
  const chunked = await curl([...headers, '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, url]);
  t.equal(chunked.code, 0, chunked.stderr);
  assertEnvelope(t, chunked.status, chunked.body);
});

t.test('the connection after a refused body: a body under the cap on the same server still works', async (t) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ externalId: 'small', fullName: 'Small', role: 'STUDENT' }),
  });
  t.equal(res.status, 201);
});

t.test('a body declared larger than the server will read is answered at once, and its connection closed', async (t) => {
  const res = await new Promise<{ text: string; closed: boolean }>((resolve) => {
    const s = connect(node.port, '127.0.0.1', () =>
      s.write(`POST /api/v1/public/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: application/json\r\nContent-Length: ${DRAIN_MAX_BYTES + 1}\r\n\r\n{"a":`),
    );
    let text = '';
    const timer = setTimeout(() => (s.destroy(), resolve({ text, closed: false })), 3000);
    s.on('data', (d) => (text += d));
    s.on('close', () => (clearTimeout(timer), resolve({ text, closed: true })));
    s.on('error', () => {});
  });
  t.match(res.text, /^HTTP\/1\.1 413 /);
  t.match(res.text, /"code":"payload_too_large"/);
  t.ok(res.closed, 'not read: the connection is closed');
});
