import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTestDatabase, REDIS_URL, startTestNode, TEST_SECRET } from '../helpers/node.ts';

const env = { AULA_DATABASE_URL: await createTestDatabase(t), AULA_SECRET_KEY: TEST_SECRET };
const PASSWORD = 'a passphrase long enough';

const org = await aula(['org', 'create', '--name', 'Nodes School', '--plan', 'pro'], env);
const orgId = org.stdout.trim();
const db = postgres(env.AULA_DATABASE_URL, { max: 1, onnotice: () => {} });
t.teardown(() => db.end());

t.test('aula admins add reads the password from stdin and stores only an argon2id hash', async (t) => {
  const res = await aula(['admins', 'add', '--org', orgId, '--email', 'Head@School.example', '--role', 'owner', '--json'], env, `${PASSWORD}\n`);
  t.equal(res.code, 0, res.stderr);
  t.equal(res.stdout.trim().split('\n').length, 1, 'one JSON object on stdout');
  const m = JSON.parse(res.stdout);
  t.match(m, { id: /^adm_[0-9a-z]{26}$/, orgId, email: 'head@school.example', role: 'owner', createdAt: String });
  t.notOk(res.stdout.includes(PASSWORD) || res.stderr.includes(PASSWORD), 'the password is never printed');
  const [row] = await db<{ password_hash: string }[]>`select password_hash from admins where id = ${m.id}`;
  t.match(row!.password_hash, /^\$argon2id\$v=19\$m=65536,t=3,p=1\$/);
  t.notOk(row!.password_hash.includes(PASSWORD));

  const plain = await aula(['admins', 'add', '--org', orgId, '--email', 'deputy@school.example', '--role', 'admin'], env, `${PASSWORD} two\r\nignored second line\n`);
  t.equal(plain.code, 0, plain.stderr);
  t.match(plain.stdout.trim(), /^adm_[0-9a-z]{26}$/, 'without --json: the id alone');

  // The node signs in over HTTP with what was piped in: the first line, without its line ending.
  const node = await startTestNode(t, { databaseUrl: env.AULA_DATABASE_URL, redis: false });
  const owner = await api(node, 'POST', '/auth/sign-in', { body: { orgId, email: 'HEAD@school.example', password: PASSWORD } });
  t.equal(owner.status, 200, JSON.stringify(owner.body));
  t.same(owner.body.data.admin, { id: m.id, email: 'head@school.example', role: 'owner', orgId });
  const deputy = await api(node, 'POST', '/auth/sign-in', { body: { orgId, email: 'deputy@school.example', password: `${PASSWORD} two` } });
  t.equal(deputy.status, 200, 'CRLF and later lines are not part of the password');
  t.equal(deputy.body.data.admin.role, 'admin');
});

t.test('aula admins add refuses short, common or missing passwords and bad arguments', async (t) => {
  const short = await aula(['admins', 'add', '--org', orgId, '--email', 'short@school.example', '--role', 'admin'], env, 'elevenchars\n');
  t.equal(short.code, 2);
  t.match(short.stderr, /at least 12 characters \(it has 11\)/);
  const none = await aula(['admins', 'add', '--org', orgId, '--email', 'none@school.example', '--role', 'admin'], env, '');
  t.equal(none.code, 2);
  t.match(none.stderr, /no password given on standard input/);
  const common = await aula(['admins', 'add', '--org', orgId, '--email', 'common@school.example', '--role', 'admin'], env, 'password1234\n');
  t.equal(common.code, 2);
  t.match(common.stderr, /too easy to guess: This is similar to a commonly used password/, 'a common or breached password is refused, with why');
  const personal = await aula(['admins', 'add', '--org', orgId, '--email', 'kowalski@school.example', '--role', 'admin'], env, 'kowalski1234\n');
  t.equal(personal.code, 2);
  t.match(personal.stderr, /too easy to guess: There should not be any personal/, 'so is one made of the email');
  const created = await db`select id from admins where email in ('short@school.example', 'none@school.example', 'common@school.example', 'kowalski@school.example')`;
  t.equal(created.length, 0, 'nothing was created');

  const role = await aula(['admins', 'add', '--org', orgId, '--email', 'x@school.example', '--role', 'teacher'], env, `${PASSWORD}\n`);
  t.equal(role.code, 2);
  t.match(role.stderr, /--role must be one of owner, admin/);
  const email = await aula(['admins', 'add', '--org', orgId, '--email', 'not-an-email', '--role', 'admin'], env, `${PASSWORD}\n`);
  t.equal(email.code, 2);
  t.match(email.stderr, /--email is not an email address/);
  const missing = await aula(['admins', 'add', '--org', orgId], env, `${PASSWORD}\n`);
  t.equal(missing.code, 2);
  t.equal(missing.stderr, "aula: missing --email and --role\nRun 'aula admins add --help' for usage.\n");
  const sub = await aula(['admins', 'remove'], env, '');
  t.equal(sub.code, 2);
  t.equal(sub.stderr, "aula: unknown command: admins remove\nRun 'aula admins --help' for usage.\n");

  const unknownOrg = await aula(['admins', 'add', '--org', 'org_missing', '--email', 'y@school.example', '--role', 'admin'], env, `${PASSWORD}\n`);
  t.equal(unknownOrg.code, 1);
  t.equal(unknownOrg.stderr, 'aula: no organization org_missing\n');
  const dup = await aula(['admins', 'add', '--org', orgId, '--email', 'HEAD@SCHOOL.EXAMPLE', '--role', 'admin'], env, `${PASSWORD}\n`);
  t.equal(dup.code, 1);
  t.match(dup.stderr, /already exists/);

  const usage = await aula(['admins', 'add', '--help'], env);
  t.equal(usage.code, 0);
  t.match(usage.stdout, /usage: aula admins add --org ORG_ID --email EMAIL --role owner\|admin \[--json\]/, 'its --help');
});

t.test('aula admins disable refuses sign-in and ends every session on the running nodes at once', async (t) => {
  const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
  const shared = { ...env, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: redisPrefix };
  const node = await startTestNode(t, { databaseUrl: env.AULA_DATABASE_URL, redisPrefix });
  const added = await aula(['admins', 'add', '--org', orgId, '--email', 'leaving@school.example', '--role', 'admin', '--json'], env, `${PASSWORD}\n`);
  const m = JSON.parse(added.stdout);
  const signIn = () => api(node, 'POST', '/auth/sign-in', { body: { orgId, email: 'leaving@school.example', password: PASSWORD } });
  const session = (await signIn()).body.data.sessionToken;
  t.equal((await api(node, 'GET', `/orgs/${orgId}`, { bearer: session })).status, 200, 'signed in; the node caches the session');

  const res = await aula(['admins', 'disable', '--id', m.id, '--json'], shared);
  t.equal(res.code, 0, res.stderr);
  t.match(JSON.parse(res.stdout), { id: m.id, disabled: true, disabledAt: String, alreadyDisabled: false });
  t.equal(res.stderr, '', 'no warning: the nodes were told');
  assertError(t, await api(node, 'GET', `/orgs/${orgId}`, { bearer: session }), 401, 'admin_session_revoked');
  assertError(t, await signIn(), 403, 'admin_disabled');

  const again = await aula(['admins', 'disable', m.id], shared);
  t.equal(again.code, 0);
  t.equal(again.stdout.trim(), `${m.id} was already disabled`);
  const unknown = await aula(['admins', 'disable', 'adm_00000000000000000000000000'], shared);
  t.equal(unknown.code, 1, 'an unknown id is an error');
  t.equal(unknown.stdout, '');
  t.equal(unknown.stderr, 'aula: no admin adm_00000000000000000000000000\n');
  // Redis unreachable: the node is disabled all the same, with a warning that the nodes learn it late
  const other = JSON.parse((await aula(['admins', 'add', '--org', orgId, '--email', 'later@school.example', '--role', 'admin', '--json'], env, `${PASSWORD}\n`)).stdout);
  t.equal((await api(node, 'POST', '/auth/sign-in', { body: { orgId, email: 'later@school.example', password: PASSWORD } })).status, 200, 'a session to revoke');
  const offline = await aula(['admins', 'disable', '--id', other.id], { ...shared, AULA_REDIS_URL: 'redis://127.0.0.1:1' });
  t.equal(offline.code, 0, offline.stderr);
  t.equal(offline.stdout.trim(), `disabled ${other.id}`);
  t.match(offline.stderr, /warning: done, but running nodes could not be told .*within 60 seconds/);
  const missing = await aula(['admins', 'disable'], shared);
  t.equal(missing.code, 2);
  t.equal(missing.stderr, "aula: missing the admin id (aula admins disable ADMIN_ID)\nRun 'aula admins disable --help' for usage.\n");
});
