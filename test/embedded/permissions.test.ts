import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/platform/config.ts';
import { embeddedPgOptions, openDatabase } from '../../src/platform/db/index.ts';
import { memoryLogger } from '../helpers/logs.ts';
import { spawnNode } from '../helpers/process.ts';

// The embedded database is one user's data on a machine others may use: its folder is the owner's
// alone whatever the umask, and PGlite is reached through a Unix socket inside it, never a TCP port.
const base = mkdtempSync(join(tmpdir(), 'aula-perm-'));
t.teardown(() => rmSync(base, { recursive: true, force: true }));

/** Every path under `dir` (and `dir` itself) that group or other may read, write or enter. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (p: string) => {
    const st = lstatSync(p);
    if (st.mode & 0o077) found.push(`${p} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(dir);
  return found;
}

/** Loosens everything as a deployment under umask 0 (or an older Aula) left it: directories 0777, files 0666. */
function loosen(dir: string): void {
  const st = lstatSync(dir);
  if (st.isSocket() || st.isSymbolicLink()) return;
  chmodSync(dir, st.isDirectory() ? 0o777 : 0o666);
  if (st.isDirectory()) for (const name of readdirSync(dir)) loosen(join(dir, name));
}

/** The TCP ports `pid` listens on, from /proc: its socket inodes matched against the LISTEN rows. */
function listeningTcpPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // the fd closed while we looked
    }
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const row of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9]!)) ports.push(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return ports.sort((a, b) => a - b);
}


const configFor = (dir: string) => loadConfig({ AULA_DATA_DIR: dir });

t.test('aula serve under umask 0: nothing in the data folder is open to other users, and PGlite is on a socket inside it', async (t) => {
  const dir = join(base, 'served');
  const previous = process.umask(0); // the child inherits it
  t.teardown(() => process.umask(previous));
  const env = { AULA_DATA_DIR: dir, AULA_DATABASE_URL: '', AULA_REDIS_URL: '', AULA_SECRET_KEY: '', AULA_MEDIA_WORKERS: '0' };
  const node = await spawnNode(t, env);
  process.umask(previous);

  const res = await fetch(`${node.url}/readyz`);
  t.equal(res.status, 200, 'migrated and serving');
  t.ok(existsSync(join(dir, 'secret.key')) && existsSync(join(dir, 'control.json')), 'the server wrote its files');
  t.same(openToOthers(dir), [], 'every directory 0700, every file 0600');

  const started = node.logs.find((l) => l.msg === 'embedded database started (PGlite)');
  t.equal(started?.conn, join(dir, 'pgdata.sock'), 'the connection is a Unix socket in the data folder');
  t.ok(lstatSync(join(dir, 'pgdata.sock')).isSocket());
  const control = JSON.parse(readFileSync(join(dir, 'control.json'), 'utf8')).port as number;
  t.same(listeningTcpPorts(node.proc.pid!), [node.port, control].sort((a, b) => a - b), 'TCP: the API and the token-guarded command channel, nothing for PGlite');

  const exited = new Promise((r) => node.proc.once('exit', r));
  node.proc.kill('SIGTERM');
  await exited;
  t.notOk(existsSync(join(dir, 'pgdata.sock')), 'the socket goes with the server');
});

t.test('openDatabase() tightens a data folder left open to other users, and says so once', async (t) => {
  const dir = join(base, 'loose');
  const first = await openDatabase(configFor(dir), memoryLogger().log);
  await first.sql`create table note (body text)`;
  await first.sql`insert into note values ('the name of an organization')`;
  await first.close();
  writeFileSync(join(dir, 'secret.key'), 'k\n', { mode: 0o644 });
  loosen(dir);
  t.not(openToOthers(dir).length, 0);

  const { log, lines } = memoryLogger();
  const db = await openDatabase(configFor(dir), log);
  t.same(openToOthers(dir), [], 'nothing is left open');
  const said = lines.filter((l) => /tightened/.test(l.msg));
  t.equal(said.length, 1, 'one line');
  t.match(said[0], { level: 40, dir, dirs: Number, files: Number });
  t.ok(said[0]!.dirs > 1 && said[0]!.files > 900, `it counts what it changed (${said[0]!.dirs} directories, ${said[0]!.files} files)`);
  t.match(said[0]!.msg, /0700.*0600/);
  t.same(await db.sql`select body from note`, [{ body: 'the name of an organization' }], 'the data is intact');
  await db.close();

  const again = memoryLogger();
  await (await openDatabase(configFor(dir), again.log)).close();
  t.same(again.lines.filter((l) => /tightened/.test(l.msg)), [], 'a tight folder is not mentioned');
});

t.test('the embedded connection is never recycled: no lifetime, no idle timeout, one connection, the socket', async (t) => {
  t.match(embeddedPgOptions('/x/pgdata.sock'), { path: '/x/pgdata.sock', max: 1, max_lifetime: null, idle_timeout: 0 });
  const dir = join(base, 'options');
  const db = await openDatabase(configFor(dir), memoryLogger().log);
  t.teardown(() => db.close());
  // what postgres.js parsed and runs with, whatever PGMAX_LIFETIME or PGIDLE_TIMEOUT say
  const o = db.sql.options as unknown as Record<string, unknown>;
  t.equal(o.max, 1);
  t.equal(o.max_lifetime, null, 'no lifetime: postgres.js would end it after 30 to 60 minutes');
  t.notOk(o.idle_timeout, 'no idle timeout');
  t.equal(o.path, join(dir, 'pgdata.sock'));
});

t.test('a data folder too deep for a socket path: the socket lives in a private temp directory, named in the data folder', async (t) => {
  const dir = join(base, 'd'.repeat(60), 'e'.repeat(60));
  t.ok(Buffer.byteLength(join(dir, 'pgdata.sock')) > 107, 'the socket could not be in the folder');
  const previous = process.umask(0);
  t.teardown(() => process.umask(previous));
  const { log, lines } = memoryLogger();
  const db = await openDatabase(configFor(dir), log);
  process.umask(previous);
  const conn = lines.find((l) => l.msg === 'embedded database started (PGlite)')?.conn as string;
  t.equal(dirname(dirname(conn)), tmpdir(), 'under the system temp directory');
  t.match(conn, /\/aula-pg-[^/]+\/pgdata\.sock$/);
  t.equal(lstatSync(dirname(conn)).mode & 0o777, 0o700, 'a directory of its own, the owner’s only');
  t.ok(lstatSync(conn).isSocket());
  t.equal(readFileSync(join(dir, 'pgdata.sock.path'), 'utf8'), `${conn}\n`, 'the data folder names it');
  t.same(openToOthers(dir), []);
  t.same(openToOthers(dirname(conn)), []);
  t.same(await db.sql`select 1 as one`, [{ one: 1 }], 'and the server talks to PGlite through it');
  await db.close();
  t.notOk(existsSync(dirname(conn)), 'closing removes the temp directory');
  t.notOk(existsSync(join(dir, 'pgdata.sock.path')), 'and its name');

  // a server that died left its temp directory behind: the next one clears it
  const stale = mkdtempSync(join(tmpdir(), 'aula-pg-'));
  mkdirSync(join(stale, 'x'));
  writeFileSync(join(dir, 'pgdata.sock.path'), `${join(stale, 'pgdata.sock')}\n`, { mode: 0o600 });
  const next = await openDatabase(configFor(dir), memoryLogger().log);
  t.notOk(existsSync(stale), 'the dead server’s temp directory is removed');
  await next.close();
});
