import { z } from 'zod';
import type { App } from '../../src/services/app.ts';
import { buildOpenApi } from '../openapi.ts';
import { route, type Route } from '../route.ts';
import { adminRoutes } from './admins.ts';
import { apiKeyRoutes } from './api-keys.ts';
import { attendanceRoutes } from './attendance.ts';
import { auditLogRoutes } from './audit-log.ts';
import { classroomRoutes } from './classroom.ts';
import { authRoutes } from './auth.ts';
import { classRoutes } from './classes.ts';
import { enrollmentRoutes } from './enrollments.ts';
import { healthRoutes } from './health.ts';
import { joinRoutes } from './join.ts';
import { liveRoutes } from './live.ts';
import { meetingRoutes } from './meetings.ts';
import { notificationRoutes } from './notifications.ts';
import { orgRoutes } from './orgs.ts';
import { usageRoutes } from './usage.ts';
import { userRoutes } from './users.ts';
import { pageRoutes } from '../pages/join.ts';
import { consoleRoutes } from '../pages/console.ts';
import { roomRoutes } from './rooms.ts';
import { recordingRoutes } from './recordings.ts';
import { webhookRoutes } from './webhooks.ts';
import { wellKnownRoutes } from './well-known.ts';

const apiRoutes: Route[] = [...healthRoutes, ...userRoutes, ...meetingRoutes, ...classRoutes, ...enrollmentRoutes, ...attendanceRoutes, ...classroomRoutes, ...recordingRoutes, ...usageRoutes, ...joinRoutes, ...roomRoutes, ...authRoutes, ...orgRoutes, ...apiKeyRoutes, ...adminRoutes, ...liveRoutes, ...auditLogRoutes, ...notificationRoutes, ...webhookRoutes, ...pageRoutes, ...consoleRoutes, ...wellKnownRoutes];

/** The document of each server (its own base URL in `servers`), made on first request. */
const docs = new WeakMap<App, string>();
const openApiRoute = route(
  { method: 'get', path: '/openapi.json', tag: 'Operations', auth: 'none', summary: 'This OpenAPI 3.1 document.', raw: ['application/json'], response: z.object({}).loose() },
  ({ app }) => {
    let doc = docs.get(app);
    if (doc === undefined) docs.set(app, (doc = JSON.stringify(buildOpenApi(routes, app.baseUrl))));
    return { data: null, raw: { contentType: 'application/json', body: doc } };
  },
);

/** Every route the HTTP server serves, in one table that also generates the OpenAPI document. */
export const routes: Route[] = [...apiRoutes, openApiRoute];
