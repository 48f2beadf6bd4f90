import { z } from 'zod';
import { within } from '../../src/platform/cluster/deadline.ts';
import type { App } from '../../src/services/app.ts';
import { safeEqual } from '../../src/platform/crypto.ts';
import { AppError } from '../../src/core/errors.ts';
import { route } from '../route.ts';

/** Each readiness check's time: the whole answer stays under half a second. */
const READY_CHECK_MS = 300;

/** 'ok' when the check succeeds within READY_CHECK_MS, 'down' when it fails or takes longer. */
const answers = (check: Promise<unknown>, what: string): Promise<'ok' | 'down'> =>
  within(check, READY_CHECK_MS, what).then(
    () => 'ok' as const,
    () => 'down' as const,
  );

/** Prometheus's scrape: the node's metrics, behind its token when one is set. */
export async function metricsResponse(app: App, authorization: string | undefined): Promise<{ contentType: string; body: string }> {
  const token = app.config.AULA_METRICS_TOKEN;
  if (token !== undefined && (authorization === undefined || !safeEqual(authorization, `Bearer ${token}`))) throw new AppError('metrics_token_invalid');
  return app.metrics.text();
}

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
  route(
    {
      method: 'get',
      path: '/metrics',
      root: true,
      tag: 'Operations',
      auth: 'none',
      summary: 'Prometheus metrics of the node that answers (docs/metrics.md).',
      description: 'With AULA_METRICS_TOKEN set, only for "Authorization: Bearer <token>". With AULA_METRICS_PORT set, served on that port instead, and route_not_found here.',
      raw: ['text/plain'],
      errors: ['metrics_token_invalid', 'route_not_found'],
    },
    async ({ app, req }) => {
      if (app.config.AULA_METRICS_PORT !== undefined) throw new AppError('route_not_found', { details: { method: req.method, path: req.path } });
      const { contentType, body } = await metricsResponse(app, req.headers.authorization);
      return { data: null, raw: { contentType, body }, headers: { 'Cache-Control': 'no-store' } };
    },
  ),
];
