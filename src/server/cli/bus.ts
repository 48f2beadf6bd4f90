import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LocalBus, RedisBus, type Bus } from '../../platform/cluster/bus.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { connectRedis } from '../../platform/cluster/redis.ts';

/**
 * The bus a CLI command publishes on: the nodes' Redis bus when there is one, so a change they cache
 * (a revoked API key, a disabled admin's sessions) reaches every running node at once instead of
 * when their caches expire (60 seconds at most); in process otherwise (without Redis there is one
 * node; when it holds the embedded database the command runs inside it, on its own bus: control.ts). Connected on first use.
 *
 * The change is committed before it is published, so a publish that fails does not fail the command:
 * it warns that running nodes will see the change when their caches expire.
 */
export function cliBus(config: Config, log: Logger): { get: () => Bus; close: () => Promise<void> } {
  let redis: Redis | null = null;
  let bus: Bus | null = null;
  return {
    get: () => {
      if (bus) return bus;
      if (!config.AULA_REDIS_URL) return (bus = new LocalBus());
      redis = connectRedis(config.AULA_REDIS_URL, log, 'aula-cli');
      const inner = new RedisBus(redis, config.AULA_REDIS_PREFIX, `cli-${randomBytes(6).toString('hex')}`);
      return (bus = {
        publish: (channel, message) =>
          inner.publish(channel, message).catch((err: Error) => {
            process.stderr.write(`aula: warning: done, but running nodes could not be told (${err.message}); they will see it within 60 seconds\n`);
          }),
        subscribe: (channel, handler) => inner.subscribe(channel, handler),
        close: () => inner.close(),
      });
    },
    close: async () => {
      await bus?.close();
      (redis as Redis | null)?.disconnect();
    },
  };
}
