import type { Bus } from '../cluster/bus.ts';
import { loadConfig } from '../config.ts';
import { openDatabase } from '../db/index.ts';
import { migrate } from '../db/migrate.ts';
import { createCliLogger } from '../logger.ts';
import { cliBus } from './bus.ts';

/**
 * What a one-shot command works with: the configured database, its schema brought up to date, and
 * `bus()`, the members' bus (connected on first use; see cli/bus.ts). All closed when `fn` is done.
 */
export async function withDb<T>(fn: (sql: Awaited<ReturnType<typeof openDatabase>>['sql'], applied: number[], bus: () => Bus) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const log = createCliLogger(config);
  const db = await openDatabase(config, log);
  const bus = cliBus(config, log);
  try {
    const applied = await migrate(db.sql, log);
    return await fn(db.sql, applied, bus.get);
  } finally {
    await bus.close();
    await db.close();
  }
}
