// A Redis server of a test's own (Debian's redis-server on a free port), for tests that stop and start
// it: the machine's shared Redis is never touched.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Test } from 'tap';

/** A port nothing listens on now (taken and released). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Starts redis-server on `port` (no persistence), resolves once it answers PING; killed at teardown. */
export async function startRedisServer(t: Test, port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  for (let i = 0; i < 100; i++) {
    try {
      await client.connect().catch(() => undefined);
      if ((await client.ping()) === 'PONG') break;
    } catch {
      await sleep(50);
    }
  }
  client.disconnect();
  return proc;
}

/** A fresh key prefix on the shared Redis for a test's nodes; its keys are deleted, and `redis` closed, at teardown. */
export function redisPrefixFor(t: Test, redis: Redis): string {
  const prefix = `aulatest:${randomBytes(4).toString('hex')}:`;
  t.teardown(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return prefix;
}
