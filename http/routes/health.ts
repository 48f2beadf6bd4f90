import { z } from 'zod';
import { AppError } from '../../src/errors.ts';
import { route } from '../route.ts';

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
      response: z.object({ status: z.literal('ready'), database: z.literal('ok'), redis: z.enum(['ok', 'not configured']) }),
      errors: ['service_unavailable'],
    },
    async ({ app }) => {
      const checks = await Promise.allSettled([app.sql`select 1`, app.redis ? app.redis.ping() : Promise.resolve('none')]);
      const failed = checks.flatMap((c, i) => (c.status === 'rejected' ? [i === 0 ? 'database' : 'redis'] : []));
      if (failed.length) throw new AppError('service_unavailable', { details: { failing: failed } });
      return { data: { status: 'ready', database: 'ok', redis: app.redis ? 'ok' : 'not configured' } };
    },
  ),
];
