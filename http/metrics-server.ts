import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from '../src/services/app.ts';
import { AppError } from '../src/core/errors.ts';
import { toAppError } from '../src/platform/to-app-error.ts';
import { metricsResponse } from './routes/health.ts';

/**
 * `AULA_METRICS_PORT`: the Prometheus scrape on a port of its own (so it can stay inside a private
 * network while the API is public). It answers `GET /metrics` alone, behind the token when one is set;
 * anything else is a 404 in the error envelope.
 */
export function startMetricsServer(app: App, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = req.method === 'GET' && path === '/metrics'
      ? metricsResponse(app, req.headers.authorization)
      : Promise.reject(new AppError('route_not_found', { details: { method: req.method, path } }));
    answer.then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
        res.end(body);
      },
      (err) => {
        const e = toAppError(err);
        res.writeHead(e.status, { 'Content-Type': 'application/json', ...e.headers });
        res.end(JSON.stringify(e.toBody('metrics')));
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise((r) => server.close(() => r())),
      });
    });
  });
}
