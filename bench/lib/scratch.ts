import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';

/** Where a bench run's scratch database is made, and the Redis it uses. */
export const PG_ADMIN_URL = process.env.AULA_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.AULA_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A fresh database on the machine's Postgres and a fresh Redis key prefix for one run; `cleanups`
 * gets what drops the database and deletes the prefix's keys.
 */
export async function scratchBackends(cleanups: (() => Promise<void>)[]): Promise<{ dbUrl: URL; redisPrefix: string }> {
  const redisPrefix = `aulabench:${randomBytes(4).toString('hex')}:`;
  const dbName = `aula_bench_${randomBytes(6).toString('hex')}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  cleanups.push(async () => {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  });
  cleanups.push(async () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length) await redis.del(...found);
    } while (cursor !== '0');
    redis.disconnect();
  });
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  return { dbUrl, redisPrefix };
}
