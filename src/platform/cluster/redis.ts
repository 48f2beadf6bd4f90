import { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';

/** A Redis connection for routing, counters and caches (never for data that must survive a restart). */
export function connectRedis(url: string, log: Logger, name: string): Redis {
  const redis = new Redis(url, {
    connectionName: name,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 2,
    lazyConnect: false,
  });
  redis.on('error', (err) => log.warn({ err: err.message, name }, 'redis connection error'));
  return redis;
}
