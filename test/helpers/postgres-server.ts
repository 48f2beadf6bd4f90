// A PostgreSQL server of a test's own (the machine's initdb and pg_ctl, a data directory in a temporary
// directory, a free port), for tests that restart it: the machine's shared server is never touched.
// Run as root (as CI is), the server runs as the `postgres` user, which Postgres requires.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { freePort } from './redis-server.ts';

const run = promisify(execFile);

/** Where initdb and pg_ctl are: `AULA_TEST_PG_BIN`, or Debian's newest /usr/lib/postgresql/N/bin. */
function binDir(): string {
  if (process.env.AULA_TEST_PG_BIN) return process.env.AULA_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl'))) : [];
  if (!versions.length) throw new Error('this test runs a PostgreSQL server of its own: set AULA_TEST_PG_BIN to the directory of initdb and pg_ctl');
  return join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

export interface PostgresServer {
  port: number;
  /** A URL of the `postgres` database (trust authentication). */
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** pg_ctl restart, fast mode: every session is ended and in-flight transactions roll back, as in a real restart. */
  restart(): Promise<void>;
}

/** initdb into a temporary directory and start the server on a free port; stopped and removed at teardown. */
export async function startPostgresServer(t: Test): Promise<PostgresServer> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'aula-pg-'));
  const data = join(dir, 'data');
  const root = process.getuid?.() === 0;
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    const { stdout: g } = await run('id', ['-g', 'postgres']);
    chownSync(dir, uid, Number(g.trim()));
  }
  const as = (cmd: string, args: string[]) => (root ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args));
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const pgctl = (...args: string[]) => as('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '30', ...args]);
  const server: PostgresServer = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => void (await pgctl('stop', '-m', 'fast')),
    start: async () => void (await pgctl('start')),
    restart: async () => void (await pgctl('restart', '-m', 'fast')),
  };
  await server.start();
  t.teardown(async () => {
    await pgctl('stop', '-m', 'immediate').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}
