import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { spawnNode } from '../helpers/process.ts';

// The README's quick start: no AULA_DATABASE_URL, no AULA_REDIS_URL, no AULA_SECRET_KEY.
const dir = mkdtempSync(join(tmpdir(), 'aula-embedded-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const env = { AULA_DATA_DIR: dir, AULA_DATABASE_URL: '', AULA_REDIS_URL: '', AULA_SECRET_KEY: '' };

const org = JSON.parse((await aula(['org', 'create', '--name', 'Embedded', '--plan', 'pro', '--json'], env)).stdout);
const { key } = JSON.parse((await aula(['keys', 'create', '--org', org.id, '--name', 'k', '--scopes', 'users:write,meetings:write', '--json'], env)).stdout);

async function call(url: string, method: string, path: string, body?: unknown, bearer = key) {
  const res = await fetch(`${url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

t.test('the embedded default runs the whole join flow and keeps its data across restarts', async (t) => {
  let node = await spawnNode(t, env);
  t.match(node.logs.find((l) => l.msg === 'embedded database started (PGlite)'), { dir: join(dir, 'pgdata') });
  const busy = await aula(['serve'], { ...env, AULA_PORT: '0', AULA_MEDIA_WORKERS: '0' });
  t.equal(busy.code, 75, 'a second server may not open the embedded database');
  t.match(busy.stderr, new RegExp(`in use by process ${node.proc.pid}`));
  const second = await aula(['org', 'create', '--name', 'Second', '--plan', 'free'], env);
  t.equal(second.code, 0, `the CLI works while it runs: the server runs the command (${second.stderr})`);
  t.equal((await call(node.url, 'POST', '/public/users', { externalId: 'e1', fullName: 'Em', role: 'TEACHER' })).status, 201);
  const m = await call(node.url, 'POST', '/public/meetings', { externalId: 'em', title: 'Embedded class', type: 'MEETING', hostUserId: 'e1', scheduledStart: '2030-09-01T08:00:00Z', durationMinutes: 30 });
  t.equal(m.status, 201);
  const concurrent = await Promise.all(Array.from({ length: 20 }, (_, i) => call(node.url, 'POST', '/public/users', { externalId: `c${i}`, fullName: `C ${i}`, role: 'STUDENT' })));
  t.ok(concurrent.every((r) => r.status === 201), 'concurrent writes on the one embedded connection');
  const link = await call(node.url, 'POST', '/public/meetings/em/join-links', { externalUserId: 'e1', role: 'HOST' });
  t.equal(link.status, 201);
  const session = await fetch(`${node.url}/api/v1/join-tokens/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: link.body.data.token, deviceId: 'tab' }) });
  t.equal(session.status, 200);
  const s = (await session.json()).data;

  node.proc.kill('SIGTERM');
  await new Promise((r) => node.proc.once('exit', r));
  node = await spawnNode(t, env);
  t.equal((await call(node.url, 'GET', '/public/meetings/em')).body.data.title, 'Embedded class', 'data survived the restart');
  const refreshed = await call(node.url, 'POST', '/join-tokens/refresh', undefined, s.accessToken);
  t.equal(refreshed.status, 200, 'the generated secret survived the restart too');
  node.proc.kill('SIGTERM');
  await new Promise((r) => node.proc.once('exit', r));
});
