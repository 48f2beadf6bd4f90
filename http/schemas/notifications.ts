import { z } from 'zod';
import type { NotificationListQuery, NotificationRecord } from '../../src/services/notifications/inbox.ts';
import { pageQuery, schemaOf } from './common.ts';

export const notificationRecord = schemaOf<NotificationRecord>()(
  z.object({
    id: z.string(),
    kind: z.string().describe('e.g. webhook.endpoint_disabled'),
    title: z.string(),
    body: z.string(),
    data: z.record(z.string(), z.unknown()).describe('Details by kind; webhook.endpoint_disabled: { endpointId, url, reason: FAILING | GONE, failingSince, disabledAt }.'),
    createdAt: z.string(),
    readAt: z.string().nullable(),
  }),
);

export const notificationListQuery = schemaOf<NotificationListQuery>()(
  z.strictObject({
    ...pageQuery,
    unread: z
      .enum(['true', 'false'])
      .optional()
      .transform((v) => v === 'true')
      .describe('true: only notifications not yet marked read.'),
  }),
);
