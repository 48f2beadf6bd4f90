import { z } from 'zod';
import { buildOpenApi } from '../openapi.ts';
import { route, type Route } from '../route.ts';
import { authRoutes } from './auth.ts';
import { classRoutes } from './classes.ts';
import { enrollmentRoutes } from './enrollments.ts';
import { healthRoutes } from './health.ts';
import { joinRoutes } from './join.ts';
import { meetingRoutes } from './meetings.ts';
import { notificationRoutes } from './notifications.ts';
import { orgRoutes } from './orgs.ts';
import { userRoutes } from './users.ts';
import { pageRoutes } from '../pages/join.ts';
import { roomRoutes } from './rooms.ts';
import { webhookRoutes } from './webhooks.ts';

const apiRoutes: Route[] = [...healthRoutes, ...userRoutes, ...meetingRoutes, ...classRoutes, ...enrollmentRoutes, ...joinRoutes, ...roomRoutes, ...authRoutes, ...orgRoutes, ...notificationRoutes, ...webhookRoutes, ...pageRoutes];

let doc: string | null = null;
const openApiRoute = route(
  { method: 'get', path: '/openapi.json', tag: 'Operations', auth: 'none', summary: 'This OpenAPI 3.1 document.', raw: true, response: z.object({}).loose() },
  ({ app }) => ({ data: null, raw: { contentType: 'application/json', body: (doc ??= JSON.stringify(buildOpenApi(routes, `${app.baseUrl}/api/v1`))) } }),
);

/** Every route the HTTP server serves, in one table that also generates the OpenAPI document. */
export const routes: Route[] = [...apiRoutes, openApiRoute];
