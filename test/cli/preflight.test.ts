import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { freePort, startRedisServer } from '../helpers/redis-server.ts';
import { createTestDatabase, TEST_SECRET } from '../helpers/node.ts';
import { eventually } from '../helpers/ws.ts';

// `aula serve` with Redis down at start: one plain line naming the address and what to check, never a
// stack trace; --fail-fast exits 69, otherwise it retries with backoff and starts once Redis answers.
const BIN = fileURLToPath(new URL('../../bin/aula.js', import.meta.url));
const dbUrl = await createTestDatabase(t);

t.test('--fail-fast: exits 69 with one line that names Redis, its address and what to check', async (t) => {
  const port = await freePort();
  const res = await aula(['serve', '--fail-fast'], { AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: `redis://:hunter2@127.0.0.1:${port}`, AULA_SECRET_KEY: TEST_SECRET, AULA_PORT: '0', AULA_MEDIA_WORKERS: '0' });
  t.equal(res.code, 69);
  const lines = res.stderr.trim().split('\n');
  t.equal(lines.length, 1, 'one line');
  t.match(lines[0], new RegExp(`^aula: Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} does not answer \\(connect ECONNREFUSED`));
  t.match(lines[0], /Check that Redis is running and reachable there, and that AULA_REDIS_URL is right/);
  t.notMatch(res.stderr, /hunter2/, 'the password is not printed');
  t.notMatch(res.stderr, /\n\s+at /, 'no stack trace');
});

t.test('without it: says so, retries with backoff, and starts once Redis answers', async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, AULA_LOG_LEVEL: 'info', AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: `redis://127.0.0.1:${port}`, AULA_REDIS_PREFIX: `pre-${port}:`, AULA_SECRET_KEY: TEST_SECRET, AULA_PORT: '0', AULA_MEDIA_WORKERS: '0' },
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.on('data', (d) => (stdout += d));
  t.teardown(() => void child.kill('SIGKILL'));
  await eventually(() => /Trying again in 2 s/.test(stderr), 15_000);
  t.pass('the second attempt failed too, and waits longer');
  t.notMatch(stderr, /\n\s+at /, 'no stack trace');
  await startRedisServer(t, port);
  await eventually(() => /answers now; starting/.test(stderr), 20_000);
  t.ok(await eventually(() => /aula node listening/.test(stdout + stderr), 20_000), 'the node started');
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'and drains on SIGTERM');
});
