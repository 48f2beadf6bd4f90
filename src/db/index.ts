import { mkdirSync } from 'node:fs';
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

const pgOptions = {
  transform: postgres.camel,
  onnotice: () => {},
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
    },
  };
}
