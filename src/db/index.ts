import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

export type Sql = postgres.Sql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Either the pool or a transaction: services take this so callers choose the transaction boundary. */
export type Db = Sql | Tx;

export interface Database {
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * Column names are camelCased, and only column names: `postgres.camel` also rewrites the keys inside
 * json values, which would corrupt snapshots keyed by ids and caller-supplied JSON.
 */
export const pgOptions = {
  transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
  onnotice: () => {},
  /**
   * Seconds before a connection that closed with an error connects again; a query given to it waits that
   * long. postgres.js's default grows to 20 s after a few refused connects, so while the database is
   * down (a restart) requests hung for many seconds instead of being refused fast with a 503; capped
   * here at a quarter of a second, which still keeps a pool from hammering a server that is down.
   */
  backoff: (retries: number) => Math.min(0.02 * 2 ** retries, 0.25),
};

/**
 * Connects to AULA_DATABASE_URL, or, when it is unset, starts the embedded default: PGlite with its
 * data in AULA_DATA_DIR, served over its socket server so the same postgres.js code runs on it.
 */
export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  if (config.AULA_DATABASE_URL) {
    const sql = postgres(config.AULA_DATABASE_URL, { ...pgOptions, max: config.AULA_DATABASE_POOL }) as unknown as Sql;
    return { sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dir = join(config.AULA_DATA_DIR, 'pgdata');
  mkdirSync(dir, { recursive: true });
  const release = lockDataDir(config.AULA_DATA_DIR);
  const db = await PGlite.create(dir);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
  await server.start();
  const conn = server.getServerConn();
  log.info({ dir, conn }, 'embedded database started (PGlite)');
  // PGlite is one session: one connection keeps transactions from interleaving.
  const sql = postgres(`postgres://postgres@${conn}/postgres`, { ...pgOptions, max: 1 }) as unknown as Sql;
  return {
    sql,
    embedded: true,
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
      release();
    },
  };
}

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError';
}

/**
 * PGlite is one process's database: a second process opening the same folder would see stale data and
 * could corrupt it. A lock file with the owner's pid keeps it to one; a lock left by a dead process is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'pgdata.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new DatabaseInUseError(
          `the embedded database in ${dataDir} is in use by process ${pid}; stop it first, or set AULA_DATABASE_URL to share a Postgres server`,
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new DatabaseInUseError(`could not lock the embedded database in ${dataDir}`);
}

/**
 * The pid of another live process that holds the embedded database in `dataDir` (a running `aula serve`),
 * or null when nobody does. The CLI then sends its commands to that process (src/cli/control.ts).
 */
export function embeddedDatabaseOwner(dataDir: string): number | null {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'pgdata.lock'), 'utf8').trim());
  } catch {
    return null;
  }
  return pid && pid !== process.pid && isAlive(pid) ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
