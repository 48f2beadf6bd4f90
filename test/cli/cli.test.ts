import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { spawnNode } from '../helpers/process.ts';

// Each `aula` run is a process that compiles the CLI: dozens of them take 100 s on a busy 2-core
// machine, near the suite's 120 s per file.
t.setTimeout(300_000);

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
  const node = await spawnNode(t, { ...env, ...shared });
  const res = await fetch(`${node.url}/api/v1/public/users`, {
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

  const revoked = await aula(['keys', 'revoke', k.id, '--json'], { ...env, ...shared });
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(JSON.parse(revoked.stdout), { id: k.id, revoked: true, revokedAt: String, alreadyRevoked: false });
  t.equal(revoked.stderr, '', 'no warning: the nodes were told');
  // the node had the key cached; the revocation reached it over the Redis bus, not after the cache's 60 s
  const after = await fetch(`${node.url}/api/v1/public/users`, { headers: { authorization: `Bearer ${k.key}` } });
  t.equal(after.status, 401);
  t.equal((await after.json()).error.code, 'api_key_revoked');
  const again = await aula(['keys', 'revoke', '--id', k.id], env);
  t.equal(again.code, 0, 'revoking a revoked key succeeds (--id still works)');
  t.match(again.stdout.trim(), new RegExp(`^${k.id} was already revoked \\(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\)$`));
});

t.test('aula keys list shows every key but never the key itself; revoke of an unknown id fails', async (t) => {
  const org = (await aula(['org', 'create', '--name', 'Listing School', '--plan', 'pro'], env)).stdout.trim();
  const other = (await aula(['org', 'create', '--name', 'Other School', '--plan', 'free'], env)).stdout.trim();
  const a = JSON.parse((await aula(['keys', 'create', '--org', org, '--name', 'backend', '--scopes', 'users:write', '--json'], env)).stdout);
  const b = JSON.parse((await aula(['keys', 'create', '--org', org, '--name', 'reports', '--scopes', 'meetings:read,users:read', '--json'], env)).stdout);
  const c = JSON.parse((await aula(['keys', 'create', '--org', other, '--name', 'elsewhere', '--scopes', 'users:read', '--json'], env)).stdout);
  t.equal((await aula(['keys', 'revoke', b.id], env)).stdout.trim(), `revoked ${b.id}`);

  const listed = await aula(['keys', 'list', '--org', org, '--json'], env);
  t.equal(listed.code, 0, listed.stderr);
  t.equal(listed.stdout.trim().split('\n').length, 1, 'one JSON object on stdout');
  const { data } = JSON.parse(listed.stdout);
  t.same(
    data.map((k: { id: string }) => k.id),
    [a.id, b.id],
    'only that organization, oldest first, revoked keys included',
  );
  t.match(data[0], { id: a.id, orgId: org, name: 'backend', prefix: a.key.slice(0, 12), scopes: ['users:write'], status: 'ACTIVE', createdAt: String, lastUsedAt: null, revokedAt: null });
  t.match(data[1], { id: b.id, name: 'reports', scopes: ['meetings:read', 'users:read'], status: 'REVOKED', revokedAt: String });
  t.same(Object.keys(data[0]).sort(), ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'orgId', 'prefix', 'replacedBy', 'revokedAt', 'rolledFrom', 'scopes', 'status'], 'the console\'s record of a key, with its organization');

  const text = await aula(['keys', 'list'], env);
  t.equal(text.code, 0, text.stderr);
  const lines = text.stdout.trim().split('\n');
  t.match(lines[0], /^ID\s+NAME\s+ORG\s+KEY\s+SCOPES\s+STATUS\s+CREATED\s+LAST USED\s+ENDS$/, 'a table with a header');
  for (const k of [a, b, c]) {
    t.ok(lines.some((l) => l.startsWith(k.id)), `${k.name} listed without --org`);
    t.notOk(text.stdout.includes(k.key) || listed.stdout.includes(k.key), 'never the key');
  }
  t.match(lines.find((l) => l.startsWith(b.id)), /REVOKED\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'the revoked key says when, and that it was never used');
  t.match(lines.find((l) => l.startsWith(a.id)), /users:write\s+ACTIVE\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+-\s+-$/, 'an active one has no end');

  // a key the server has seen used (its flush writes last_used_at, to the minute)
  const stored = (await import('postgres')).default(env.AULA_DATABASE_URL!, { max: 1 });
  await stored`update api_keys set last_used_at = '2026-11-20T08:15:00Z' where id = ${a.id}`;
  await stored.end();
  const used = await aula(['keys', 'list', '--org', org], env);
  t.match(used.stdout.split('\n').find((l) => l.startsWith(a.id)), /ACTIVE\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+2026-11-20 08:15 UTC\s+-$/, 'last used, as the server recorded it');

  const unknownOrg = await aula(['keys', 'list', '--org', 'org_missing'], env);
  t.equal(unknownOrg.code, 1);
  t.equal(unknownOrg.stderr, 'aula: no organization org_missing\n');

  const unknown = await aula(['keys', 'revoke', 'key_00000000000000000000000000'], env);
  t.equal(unknown.code, 1, 'an unknown id is an error');
  t.equal(unknown.stdout, '', 'nothing on stdout');
  t.equal(unknown.stderr, 'aula: no API key key_00000000000000000000000000\n');
  const unknownJson = await aula(['keys', 'revoke', 'key_nope', '--json'], env);
  t.equal(unknownJson.code, 1);
  t.equal(unknownJson.stdout, '');
  const missing = await aula(['keys', 'revoke'], env);
  t.equal(missing.code, 2);
  t.equal(missing.stderr, "aula: missing the key id (aula keys revoke KEY_ID)\nRun 'aula keys revoke --help' for usage.\n");
  const two = await aula(['keys', 'revoke', a.id, '--id', b.id], env);
  t.equal(two.code, 2);
  t.match(two.stderr, /two ids given/);
  t.equal((await aula(['keys', 'list', '--json'], env)).code, 0);
  t.equal(JSON.parse((await aula(['keys', 'list', '--org', org, '--json'], env)).stdout).data[0].revokedAt, null, 'the failed calls revoked nothing');
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
  t.equal(org.stderr, 'aula: no organization org_missing\n');
  const unknown = await aula(['frobnicate'], env);
  t.equal(unknown.code, 2);
  t.equal(unknown.stderr, "aula: unknown command: frobnicate\nRun 'aula --help' for usage.\n");
  const badEnv = await aula(['migrate'], { ...env, AULA_PORT: 'eighty' });
  t.equal(badEnv.code, 78);
  t.match(badEnv.stderr, /AULA_PORT/);
});

t.test('aula org update sets the allowed origins, normalized, and refuses what is not an origin', async (t) => {
  const org = JSON.parse((await aula(['org', 'create', '--name', 'Framing School', '--plan', 'pro', '--json'], env)).stdout);
  const set = await aula(['org', 'update', '--id', org.id, '--allowed-origins', 'https://LMS.School.example:443, http://localhost:3000,https://lms.school.example', '--json'], env);
  t.equal(set.code, 0, set.stderr);
  t.same(JSON.parse(set.stdout), { id: org.id, name: 'Framing School', plan: 'pro', allowedOrigins: ['https://lms.school.example', 'http://localhost:3000'], aiNotes: true });
  const bad = await aula(['org', 'update', '--id', org.id, '--allowed-origins', 'https://ok.example,https://lms.example/course'], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--allowed-origins: must be an origin.*\(https:\/\/lms\.example\/course\)/);
  const cleared = await aula(['org', 'update', org.id, '--allowed-origins', '', '--json'], env);
  t.same(JSON.parse(cleared.stdout).allowedOrigins, [], 'the id may be given as an argument');
  const renamed = await aula(['org', 'update', org.id, '--name', 'Framing Academy'], env);
  t.equal(renamed.stdout, `${org.id} Framing Academy: allowed origins (none); AI notes on\n`);
  const off = await aula(['org', 'update', '--id', org.id, '--ai-notes', 'off', '--json'], env);
  t.equal(off.code, 0, off.stderr);
  t.match(JSON.parse(off.stdout), { id: org.id, aiNotes: false, allowedOrigins: [] }, 'AI notes switched off, the rest kept');
  const unknown = await aula(['org', 'update', '--id', 'org_00000000000000000000000000', '--name', 'X'], env);
  t.equal(unknown.code, 1, 'an unknown organization is an error');
  t.equal(unknown.stderr, 'aula: no organization org_00000000000000000000000000\n');
  const nothing = await aula(['org', 'update', org.id], env);
  t.equal(nothing.code, 2);
  t.match(nothing.stderr, /^aula: give --name, --allowed-origins or --ai-notes\nRun 'aula org update --help' for usage\.\n$/);
});
