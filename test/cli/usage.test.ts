import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { aula } from '../helpers/cli.ts';

// --help, --version and usage errors: answered from the arguments alone, before any configuration is
// read or any database opened. The data folder below is never created, the Postgres URL never
// answers, and AULA_PORT is not even valid: a command that ran would fail.
const dir = mkdtempSync(join(tmpdir(), 'aula-usage-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = join(dir, 'never-created');
const embedded = { AULA_DATA_DIR: dataDir, AULA_DATABASE_URL: '', AULA_REDIS_URL: '', AULA_PORT: 'eighty' };
const external = { ...embedded, AULA_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' };
const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

const COMMANDS = ['serve', 'migrate', 'org create', 'org update', 'keys create', 'keys list', 'keys revoke', 'admins add', 'admins disable', 'cluster status'];
const PRINTS_DATA = COMMANDS.filter((c) => c !== 'serve');

/** Runs a few at a time: each is a node process. */
async function all<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += 4) await Promise.all(items.slice(i, i + 4).map(fn));
}

t.test('every command answers --help and -h with its usage, exit 0, without running', async (t) => {
  await all(COMMANDS, async (cmd) => {
    for (const flag of ['--help', '-h']) {
      const res = await aula([...cmd.split(' '), flag], flag === '-h' ? external : embedded);
      t.equal(res.code, 0, `${cmd} ${flag}: ${res.stderr}`);
      t.equal(res.stderr, '', `${cmd} ${flag}: nothing on stderr`);
      t.match(res.stdout, new RegExp(`^.+\\n\\nusage: aula ${cmd}\\b`), `${cmd} ${flag}: a summary, then the usage`);
      t.match(res.stdout, /-h, --help\s+show this help/);
      if (PRINTS_DATA.includes(cmd)) t.match(res.stdout, /--json\s+print one JSON object/, `${cmd} takes --json`);
    }
  });
  const serve = await aula(['serve', '--workers', '2', '--help'], { ...embedded, AULA_PORT: '0' });
  t.equal(serve.code, 0, 'help wins over the other arguments: serve does not start');
  const after = await aula(['keys', 'create', '--bogus', '--help'], embedded);
  t.equal(after.code, 0, 'even over a wrong one');
  t.match(after.stdout, /usage: aula keys create --org ORG_ID --name NAME --scopes SCOPE,… \[--json\]/);
  t.match(after.stdout, /users:read, users:write, meetings:read/, 'the scopes are listed');
  t.notOk(existsSync(dataDir), 'no database was opened');
});

t.test('aula, aula --help, aula help <command> and the command groups', async (t) => {
  const bare = await aula([], embedded);
  t.equal(bare.code, 0);
  for (const cmd of COMMANDS) t.match(bare.stdout, new RegExp(`\\n  ${cmd}\\s+\\S`), `${cmd} is listed`);
  t.match(bare.stdout, /exit codes: 0 done; 1 the command failed/);
  t.equal((await aula(['--help'], embedded)).stdout, bare.stdout);
  t.equal((await aula(['-h'], embedded)).stdout, bare.stdout);
  const one = await aula(['help', 'keys', 'revoke'], embedded);
  t.equal(one.code, 0);
  t.equal(one.stdout, (await aula(['keys', 'revoke', '--help'], embedded)).stdout, 'aula help keys revoke = aula keys revoke --help');
  for (const group of ['org', 'keys', 'admins', 'cluster']) {
    const res = await aula([group], embedded);
    t.equal(res.code, 0, `aula ${group}`);
    t.match(res.stdout, new RegExp(`usage: aula ${group} <command>`));
    t.equal((await aula([group, '--help'], embedded)).stdout, res.stdout);
  }
  t.match((await aula(['keys'], embedded)).stdout, /keys create[\s\S]*keys list[\s\S]*keys revoke/);
  t.notOk(existsSync(dataDir));
});

t.test('aula --version prints the package version', async (t) => {
  for (const args of [['--version'], ['-v'], ['version']]) {
    const res = await aula(args, embedded);
    t.equal(res.code, 0);
    t.equal(res.stdout, `aula ${VERSION}\n`, args.join(' '));
  }
  t.same(JSON.parse((await aula(['version', '--json'], embedded)).stdout), { version: VERSION });
});

t.test('unknown flags, missing or bad arguments: one line, a hint, exit 2', async (t) => {
  await all(COMMANDS, async (cmd) => {
    const res = await aula([...cmd.split(' '), '--bogus'], embedded);
    t.equal(res.code, 2, `${cmd} --bogus`);
    t.equal(res.stdout, '');
    t.equal(res.stderr, `aula: unknown option --bogus\nRun 'aula ${cmd} --help' for usage.\n`);
  });
  const cases: [string[], string, string][] = [
    [['keys', 'create'], 'missing --org, --name and --scopes', 'keys create'],
    [['keys', 'create', '--org', 'org_x', '--name', 'n'], 'missing --scopes', 'keys create'],
    [['keys', 'create', '--org', '--name', 'n', '--scopes', 'users:read'], '--org needs a value (--org ORG_ID)', 'keys create'],
    [['keys', 'create', '--org', 'org_x', '--name', 'n', '--scopes', 'users:write,root'], 'unknown scopes: root; known: users:read, users:write, meetings:read, meetings:write, join-links:write, classes:read, classes:write, webhooks:read, webhooks:write, recordings:read, recordings:write', 'keys create'],
    [['keys', 'list', '--json=yes'], '--json takes no value', 'keys list'],
    [['keys', 'list', 'extra'], 'unexpected argument "extra"', 'keys list'],
    [['keys', 'revoke', 'key_a', 'key_b'], 'unexpected argument "key_b"', 'keys revoke'],
    [['keys', 'revoke', '-x'], 'unknown option -x', 'keys revoke'],
    [['org', 'create', '--name', 'X', '--plan', 'platinum'], '--plan must be one of free, standard, pro, enterprise', 'org create'],
    [['org', 'update'], 'missing the organization id (aula org update ORG_ID)', 'org update'],
    [['admins', 'add', '--org', 'org_x', '--email', 'nope', '--role', 'owner'], '--email is not an email address: nope', 'admins add'],
    [['serve', '--workers', 'many'], '--workers must be a whole number from 1 to 256', 'serve'],
    [['keys', 'rotate'], 'unknown command: keys rotate', 'keys'],
    [['frobnicate'], 'unknown command: frobnicate', ''],
    [['--bogus'], 'unknown option --bogus', ''],
  ];
  await all(cases, async ([args, message, cmd]) => {
    const res = await aula(args, embedded);
    t.equal(res.code, 2, args.join(' '));
    t.equal(res.stdout, '');
    t.equal(res.stderr, `aula: ${message}\nRun 'aula ${cmd ? cmd + ' ' : ''}--help' for usage.\n`, args.join(' '));
  });
  t.notOk(existsSync(dataDir), 'no database was opened');
});

t.test('a command that runs reads the configuration: a bad variable exits 78', async (t) => {
  const res = await aula(['keys', 'list'], embedded);
  t.equal(res.code, 78);
  t.match(res.stderr, /AULA_PORT/);
});
