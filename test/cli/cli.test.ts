import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/member.ts';
import { spawnMember } from '../helpers/process.ts';

const env = { AULA_DATABASE_URL: await createTestDatabase(t), AULA_SECRET_KEY: TEST_SECRET };

t.test('aula migrate applies migrations once', async (t) => {
  const first = await aula(['migrate'], env);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /^applied migrations 1/);
  const second = await aula(['migrate'], env);
  t.equal(second.stdout.trim(), 'database is up to date');
});

t.test('aula org create and aula keys create bootstrap a working key', async (t) => {
  const org = await aula(['org', 'create', '--name', 'Northwind Academy', '--plan', 'standard', '--json'], env);
  t.equal(org.code, 0, org.stderr);
  const o = JSON.parse(org.stdout);
  t.match(o, { id: /^org_/, name: 'Northwind Academy', plan: 'standard' });
  t.equal(org.stdout.trim().split('\n').length, 1, 'one JSON object on stdout');
  const plain = await aula(['org', 'create', '--name', 'Plain', '--plan', 'free'], env);
  t.match(plain.stdout.trim(), /^org_[0-9a-z]{26}$/, 'without --json: the id alone');

  const key = await aula(['keys', 'create', '--org', o.id, '--name', 'backend', '--scopes', 'users:write,meetings:read', '--json'], env);
  t.equal(key.code, 0, key.stderr);
  const k = JSON.parse(key.stdout);
  t.match(k, { id: /^key_/, orgId: o.id, name: 'backend', scopes: ['users:write', 'meetings:read'], key: /^aula_sk_/ });

  const shared = { AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: `aulatest:${randomBytes(4).toString('hex')}:` };
  const member = await spawnMember(t, { ...env, ...shared });
  const res = await fetch(`${member.url}/api/v1/public/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ externalId: 'cli-user', fullName: 'From CLI', role: 'TEACHER' }),
  });
  t.equal(res.status, 201);
  t.equal(res.headers.get('x-ratelimit-limit'), '1200', 'the standard plan budget');
  const stored = await (await import('postgres')).default(env.AULA_DATABASE_URL, { max: 1 });
  const rows = await stored`select key_hash, key_prefix from api_keys where id = ${k.id}`;
  await stored.end();
  t.notOk(rows[0]!.key_hash.toString().includes(k.key), 'only a hash is stored');
  t.equal(rows[0]!.key_prefix, k.key.slice(0, 12));

  const revoked = await aula(['keys', 'revoke', '--id', k.id, '--json'], { ...env, ...shared });
  t.same(JSON.parse(revoked.stdout), { id: k.id, revoked: true });
  t.equal(revoked.stderr, '', 'no warning: the members were told');
  // the member had the key cached; the revocation reached it over the Redis bus, not after the cache's 60 s
  const after = await fetch(`${member.url}/api/v1/public/users`, { headers: { authorization: `Bearer ${k.key}` } });
  t.equal(after.status, 401);
  t.equal((await after.json()).error.code, 'api_key_revoked');
  const again = await aula(['keys', 'revoke', '--id', k.id], env);
  t.equal(again.stdout.trim(), `${k.id} was not active`);
});

t.test('bad invocations exit non-zero with a clear message', async (t) => {
  const plan = await aula(['org', 'create', '--name', 'X', '--plan', 'platinum'], env);
  t.equal(plan.code, 2);
  t.match(plan.stderr, /--plan must be one of free, standard, pro, enterprise/);
  const scope = await aula(['keys', 'create', '--org', 'org_x', '--name', 'n', '--scopes', 'users:write,root'], env);
  t.equal(scope.code, 2);
  t.match(scope.stderr, /unknown scopes: root/);
  const org = await aula(['keys', 'create', '--org', 'org_missing', '--name', 'n', '--scopes', 'users:read'], env);
  t.equal(org.code, 1);
  t.match(org.stderr, /No organization org_missing/);
  const unknown = await aula(['frobnicate'], env);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /usage: aula/);
  const badEnv = await aula(['migrate'], { ...env, AULA_PORT: 'eighty' });
  t.equal(badEnv.code, 78);
  t.match(badEnv.stderr, /AULA_PORT/);
});

t.test('aula org update sets the allowed origins, normalized, and refuses what is not an origin', async (t) => {
  const org = JSON.parse((await aula(['org', 'create', '--name', 'Framing School', '--plan', 'pro', '--json'], env)).stdout);
  const set = await aula(['org', 'update', '--id', org.id, '--allowed-origins', 'https://LMS.School.example:443, http://localhost:3000,https://lms.school.example', '--json'], env);
  t.equal(set.code, 0, set.stderr);
  t.same(JSON.parse(set.stdout), { id: org.id, name: 'Framing School', plan: 'pro', allowedOrigins: ['https://lms.school.example', 'http://localhost:3000'] });
  const bad = await aula(['org', 'update', '--id', org.id, '--allowed-origins', 'https://ok.example,https://lms.example/course'], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--allowed-origins: must be an origin.*\(https:\/\/lms\.example\/course\)/);
  const cleared = await aula(['org', 'update', '--id', org.id, '--allowed-origins', '', '--json'], env);
  t.same(JSON.parse(cleared.stdout).allowedOrigins, []);
  const unknown = await aula(['org', 'update', '--id', 'org_00000000000000000000000000', '--name', 'X'], env);
  t.not(unknown.code, 0, 'an unknown organization is an error');
});
