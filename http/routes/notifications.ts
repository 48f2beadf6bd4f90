import { z } from 'zod';
import { listNotifications, markNotificationRead } from '../../src/services/notifications/inbox.ts';
import { notificationListQuery, notificationRecord } from '../schemas/notifications.ts';
import { route } from '../route.ts';

const tag = 'Notifications (admin)';
const orgParams = z.object({ orgId: z.string().min(1).max(64) });

/** The signed-in owner's or admin's own in-app notifications (e.g. a webhook endpoint was disabled). */
export const notificationRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/notifications',
      tag,
      auth: 'admin',
      summary: 'The signed-in admin\'s notifications, newest first.',
      description: 'Only the caller\'s own notifications. `unread=true` lists those not yet marked read.',
      params: orgParams,
      query: notificationListQuery,
      response: z.array(notificationRecord),
      list: true,
      errors: ['validation_failed'],
    },
    async ({ db, admin, query }) => {
      const page = await listNotifications(db, { orgId: admin!.orgId, adminId: admin!.adminId }, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/notifications/:id/read',
      tag,
      auth: 'admin',
      summary: 'Mark one of the signed-in admin\'s notifications read.',
      description: 'Answers the notification. Marking it again keeps the first `readAt`. Another admin\'s notification answers `not_found`.',
      params: orgParams.extend({ id: z.string().min(1).max(64) }),
      response: notificationRecord,
      errors: ['not_found'],
    },
    async ({ app, db, admin, params }) => ({
      data: await markNotificationRead(db, { orgId: admin!.orgId, adminId: admin!.adminId }, params.id, app.clock.now()),
    }),
  ),
];
