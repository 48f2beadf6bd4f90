import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { aula } from '../helpers/cli.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';

// The newcomer's first hour: `npm start` on the embedded database (no AULA_DATABASE_URL, no Redis, no
// secret), and every aula command run in another terminal while it runs. The server holds PGlite, so
// the commands run inside it (src/cli/control.ts), on its connection and its bus.
const dir = mkdtempSync(join(tmpdir(), 'aula-cli-embedded-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const env = { AULA_DATA_DIR: dir, AULA_DATABASE_URL: '', AULA_REDIS_URL: '', AULA_SECRET_KEY: '', AULA_MEDIA_WORKERS: '0' };
const PASSWORD = 'a passphrase long enough';

async function call(node: NodeProcess, method: string, path: string, opts: { bearer?: string; body?: unknown } = {}) {
  const res = await fetch(`${node.url}/api/v1${path}`, {
    method,
    headers: { ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}) },
    ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

const ran = (node: NodeProcess, op: string) => node.logs.filter((l) => l.msg === 'aula CLI command run' && l.op === op).length;
const stop = async (node: NodeProcess, signal: NodeJS.Signals = 'SIGTERM') => {
  const exited = new Promise((r) => node.proc.once('exit', r));
  node.proc.kill(signal);
  await exited;
};

t.test('while npm start runs on the embedded database, every command works, through the server', async (t) => {
  const node = await spawnNode(t, env);
  t.equal(readFileSync(join(dir, 'pgdata.lock'), 'utf8').trim(), String(node.proc.pid), 'the server holds the embedded database');

  const org = await aula(['org', 'create', '--name', 'First Hour School', '--plan', 'pro'], env);
  t.equal(org.code, 0, org.stderr);
  const orgId = org.stdout.trim();
  t.match(orgId, /^org_[0-9a-z]{26}$/);
  const created = await aula(['keys', 'create', '--org', orgId, '--name', 'backend', '--scopes', 'users:write,meetings:write', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const k = JSON.parse(created.stdout);
  t.match(k, { id: /^key_/, orgId, name: 'backend', key: /^aula_sk_/ });
  t.equal(ran(node, 'keys.create'), 1, 'the server ran it');
  const ctl = statSync(join(dir, 'control.json'));
  t.equal(ctl.mode & 0o777, 0o600, 'its address and token are readable by the owner only');

  // the key it printed authenticates against that server at once
  const user = await call(node, 'POST', '/public/users', { bearer: k.key, body: { externalId: 't-1', fullName: 'Ada', role: 'TEACHER' } });
  t.equal(user.status, 201, JSON.stringify(user.body));

  // a command in the middle of the server's own traffic: one session, nothing interleaved
  const [burst, second] = await Promise.all([
    Promise.all(Array.from({ length: 20 }, (_, i) => call(node, 'POST', '/public/users', { bearer: k.key, body: { externalId: `s-${i}`, fullName: `S ${i}`, role: 'STUDENT' } }))),
    aula(['keys', 'create', '--org', orgId, '--name', 'reports', '--scopes', 'users:read', '--json'], env),
  ]);
  t.ok(burst.every((r) => r.status === 201), 'the server’s requests all succeeded');
  t.equal(second.code, 0, second.stderr);

  const listed = await aula(['keys', 'list', '--org', orgId, '--json'], env);
  t.equal(listed.code, 0, listed.stderr);
  t.same(
    JSON.parse(listed.stdout).data.map((x: { name: string; revokedAt: string | null }) => [x.name, x.revokedAt]),
    [
      ['backend', null],
      ['reports', null],
    ],
  );
  t.notOk(listed.stdout.includes(k.key), 'never the key');
  const table = await aula(['keys', 'list'], env);
  t.match(table.stdout, new RegExp(`^${k.id}\\s+backend\\s+${orgId}\\s+${k.key.slice(0, 12)}…`, 'm'));

  // the server had the key cached; revoking it through the server clears its cache at once
  const revoked = await aula(['keys', 'revoke', k.id], env);
  t.equal(revoked.code, 0, revoked.stderr);
  t.equal(revoked.stdout, `revoked ${k.id}\n`);
  const refused = await call(node, 'GET', '/public/users', { bearer: k.key });
  t.equal(refused.status, 401);
  t.equal(refused.body.error.code, 'api_key_revoked', 'refused at once, not when the cache expires');

  const unknown = await aula(['keys', 'revoke', 'key_00000000000000000000000000'], env);
  t.equal(unknown.code, 1);
  t.equal(unknown.stdout, '');
  t.equal(unknown.stderr, 'aula: no API key key_00000000000000000000000000\n');
  const noOrg = await aula(['keys', 'create', '--org', 'org_missing', '--name', 'n', '--scopes', 'users:read'], env);
  t.equal(noOrg.code, 1);
  t.equal(noOrg.stderr, 'aula: no organization org_missing\n');

  // owners and admins: made, signed in, disabled, all while it runs
  const added = await aula(['admins', 'add', '--org', orgId, '--email', 'head@school.example', '--role', 'owner', '--json'], env, `${PASSWORD}\n`);
  t.equal(added.code, 0, added.stderr);
  const m = JSON.parse(added.stdout);
  const signIn = await call(node, 'POST', '/auth/sign-in', { body: { orgId, email: 'head@school.example', password: PASSWORD } });
  t.equal(signIn.status, 200, JSON.stringify(signIn.body));
  const session = signIn.body.data.sessionToken;
  t.equal((await call(node, 'GET', `/orgs/${orgId}`, { bearer: session })).status, 200);
  const disabled = await aula(['admins', 'disable', m.id], env);
  t.equal(disabled.stdout, `disabled ${m.id}\n`, disabled.stderr);
  const gone = await call(node, 'GET', `/orgs/${orgId}`, { bearer: session });
  t.equal(gone.body.error?.code, 'admin_session_revoked', 'the session ends at once');

  const origins = await aula(['org', 'update', orgId, '--allowed-origins', 'https://lms.school.example', '--json'], env);
  t.same(JSON.parse(origins.stdout).allowedOrigins, ['https://lms.school.example'], origins.stderr);
  const migrate = await aula(['migrate', '--json'], env);
  t.same(JSON.parse(migrate.stdout), { applied: [] }, 'the server migrated at start');
  const status = await aula(['cluster', 'status', '--json'], env);
  t.equal(status.code, 0, status.stderr);
  const placement = JSON.parse(status.stdout);
  t.ok(placement.shards.every((s: { owner: string | null }) => s.owner), 'the one node owns every shard');
  t.same(placement.nodes.map((n: { pid: number }) => n.pid), [node.proc.pid], 'and is listed: the server that ran the command');
  t.ok(placement.shards.every((s: { owner: string | null }) => s.owner === placement.nodes[0].id), 'under its own id');

  const serve = await aula(['serve'], { ...env, AULA_PORT: '0' });
  t.equal(serve.code, 75, 'a second server may not open the embedded database');
  t.match(serve.stderr, new RegExp(`in use by process ${node.proc.pid}`));

  await stop(node);
  t.notOk(existsSync(join(dir, 'control.json')), 'a stopped server takes its address with it');
  const after = await aula(['keys', 'list', '--org', orgId, '--json'], env);
  t.equal(after.code, 0, `with no server, the CLI opens the database itself: ${after.stderr}`);
  t.match(JSON.parse(after.stdout).data[0], { id: k.id, revokedAt: String });
});

t.test('a server that died without cleaning up leaves nothing in the way', async (t) => {
  const node = await spawnNode(t, env);
  t.equal((await aula(['keys', 'list'], env)).code, 0);
  await stop(node, 'SIGKILL');
  t.ok(existsSync(join(dir, 'control.json')) && existsSync(join(dir, 'pgdata.lock')), 'its lock and address are left behind');
  t.ok(statSync(join(dir, 'pgdata.sock')).isSocket(), 'and the socket PGlite was served on, which the next owner clears before listening');
  const res = await aula(['org', 'create', '--name', 'After The Crash', '--plan', 'free'], env);
  t.equal(res.code, 0, res.stderr);
  t.match(res.stdout, /^org_/);
  const again = await spawnNode(t, env);
  const listed = await aula(['keys', 'list', '--json'], env);
  t.equal(listed.code, 0, listed.stderr);
  t.equal(ran(again, 'keys.list'), 1, 'the restarted server took the commands again');
  await stop(again);
});
