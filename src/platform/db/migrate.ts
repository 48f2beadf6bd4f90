import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Sql } from './index.ts';
import type { Logger } from '../logger.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const LOCK_ID = 0x41554c41; // 'AULA'

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(): Migration[] {
  return readdirSync(DIR)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4), sql: readFileSync(DIR + f, 'utf8') }));
}

/**
 * Applies every migration not yet recorded, each in its own transaction, under an advisory lock so
 * several nodes starting at once apply each migration exactly once.
 */
export async function migrate(sql: Sql, log?: Logger): Promise<number[]> {
  const applied: number[] = [];
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
    await tx`create table if not exists schema_migrations (
      version integer primary key, name text not null, applied_at timestamptz not null default now())`;
    const done = new Set((await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    for (const m of listMigrations()) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.version);
      log?.info({ version: m.version, name: m.name }, 'migration applied');
    }
  });
  return applied;
}
