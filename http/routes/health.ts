import { z } from 'zod';
import { within } from '../../src/cluster/deadline.ts';
import { AppError } from '../../src/errors.ts';
import { route } from '../route.ts';

/** Each readiness check's time: the whole answer stays under half a second. */
const READY_CHECK_MS = 300;

/** 'ok' when the check succeeds within READY_CHECK_MS, 'down' when it fails or takes longer. */
const answers = (check: Promise<unknown>, what: string): Promise<'ok' | 'down'> =>
  within(check, READY_CHECK_MS, what).then(
    () => 'ok' as const,
    () => 'down' as const,
  );

export const healthRoutes = [
  route(
    { method: 'get', path: '/healthz', root: true, tag: 'Operations', auth: 'none', summary: 'Liveness: the process is serving.', response: z.object({ status: z.literal('ok') }) },
    () => ({ data: { status: 'ok' } }),
  ),
  route(
    {
      method: 'get',
      path: '/readyz',
      root: true,
      tag: 'Operations',
      auth: 'none',
      summary: 'Readiness: the database (and Redis, when configured) answer.',
      description: `Answers within about ${READY_CHECK_MS} ms whatever is down: each check has that long, and a Redis connection known to be down is not asked. A 503 names what is down in details (database and redis: ok, down or not configured).`,
      response: z.object({ status: z.literal('ready'), database: z.literal('ok'), redis: z.enum(['ok', 'not configured']) }),
      errors: ['service_unavailable'],
    },
    async ({ app }) => {
      const [database, redis] = await Promise.all([
        answers(app.sql`select 1`, 'database'),
        app.redis ? (app.redis.status === 'ready' ? answers(app.redis.ping(), 'redis') : Promise.resolve('down' as const)) : Promise.resolve('not configured' as const),
      ]);
      if (database !== 'ok' || redis === 'down') throw new AppError('service_unavailable', { details: { database, redis, failing: [...(database !== 'ok' ? ['database'] : []), ...(redis === 'down' ? ['redis'] : [])] } });
      return { data: { status: 'ready', database, redis } };
    },
  ),
];
