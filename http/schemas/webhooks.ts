import { z } from 'zod';
import { EVENT_TYPES } from '../../src/platform/outbox.ts';
import type { PageQuery } from '../../src/services/common.ts';
import { DELIVERY_STATUSES, DELIVERY_TRIGGERS } from '../../src/services/webhooks/envelope.ts';
import {
  DISABLED_REASONS,
  ENDPOINT_STATUSES,
  FEED_EVENT_TYPES,
  WILDCARD,
  type DeliveryListQuery,
  type DeliveryRecord,
  type EventEnvelope,
  type EventFeedQuery,
  type WebhookCreate,
  type WebhookRecord,
  type WebhookUpdate,
} from '../../src/services/webhook-endpoints.ts';
import { pageQuery, schemaOf } from './common.ts';

const eventsField = z
  .array(z.enum([WILDCARD, ...EVENT_TYPES]))
  .min(1)
  .max(EVENT_TYPES.length + 1)
  .superRefine((events, ctx) => {
    if (events.includes(WILDCARD) && events.some((e) => e !== WILDCARD)) {
      ctx.addIssue({ code: 'custom', message: `"${WILDCARD}" means every type: send it alone` });
    }
  })
  .transform((events): string[] => [...new Set(events)])
  .describe(`Event types of the catalog (GET .../webhooks/event-types), or ["${WILDCARD}"] for every current and future type. Duplicates are dropped.`);

const urlField = z.string().min(1).max(2048).describe('A public https:// address; checked (and its name resolved) when saved.');
const descriptionField = z.string().max(500);

export const webhookCreate = schemaOf<WebhookCreate>()(
  z.strictObject({
    url: urlField,
    description: descriptionField.optional(),
    events: eventsField.optional().describe(`Event types, or ["${WILDCARD}"] (the default when omitted) for every current and future type.`),
  }),
);

export const webhookUpdate = schemaOf<WebhookUpdate>()(
  z
    .strictObject({
      url: urlField.optional(),
      description: descriptionField.nullable().optional().describe('null clears it.'),
      events: eventsField.optional(),
      status: z.enum(ENDPOINT_STATUSES).optional().describe('ACTIVE re-enables a disabled endpoint; DISABLED stops deliveries (events are logged as SKIPPED).'),
    })
    .refine((u) => Object.keys(u).length > 0, { message: 'give at least one field to change' }),
);

export const webhookRecord = schemaOf<WebhookRecord>()(
  z.object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(z.string()),
    status: z.enum(ENDPOINT_STATUSES),
    disabledReason: z.enum(DISABLED_REASONS).nullable().describe('MANUAL (an update), FAILING (3 days of failed deliveries) or GONE (the receiver answered 410).'),
    disabledAt: z.string().nullable(),
    failingSince: z.string().nullable().describe('The first failed delivery since the last success; null while deliveries succeed.'),
    previousSecretExpiresAt: z.string().nullable().describe('While a rotation overlap runs: when the previous secret stops signing.'),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const webhookWithSecret = webhookRecord.extend({ secret: z.string().describe('whsec_...: shown only here and on rotate-secret.') });

export const webhookListQuery = schemaOf<PageQuery>()(z.strictObject({ ...pageQuery }));

export const deliveryListQuery = schemaOf<DeliveryListQuery>()(
  z.strictObject({
    ...pageQuery,
    status: z.enum(DELIVERY_STATUSES).optional(),
    eventType: z.enum(EVENT_TYPES).optional(),
  }),
);

export const deliveryRecord = schemaOf<DeliveryRecord>()(
  z.object({
    id: z.string().describe('The deliveryId (whd_...).'),
    endpointId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    attempt: z.number().int().describe('1 to 8 within an event\'s scheduled series (0 on SKIPPED); a test or a redelivery is a series of its own (1).'),
    trigger: z.enum(DELIVERY_TRIGGERS),
    status: z.enum(DELIVERY_STATUSES),
    statusCode: z.number().int().nullable(),
    durationMs: z.number().int().nullable(),
    responseBody: z.string().nullable().describe('The first 1 KB of the receiver\'s response.'),
    error: z.object({ kind: z.string(), message: z.string() }).nullable(),
    nextAttemptAt: z.string().nullable(),
    createdAt: z.string(),
  }),
);

export const eventEnvelope = schemaOf<EventEnvelope>()(
  z.object({
    id: z.string(),
    type: z.string(),
    createdAt: z.string(),
    organizationId: z.string(),
    data: z.record(z.string(), z.unknown()),
  }),
);

export const deliveryDetail = deliveryRecord.extend({
  payload: eventEnvelope.nullable().describe('The event envelope as delivered; null once the event is no longer kept.'),
});

export const eventCatalog = z.object({ wildcard: z.literal(WILDCARD), types: z.array(z.string()) });

export const eventFeedQuery = schemaOf<EventFeedQuery>()(
  z.strictObject({
    after: z
      .string()
      .regex(/^evt_[0-9a-z]{26}$/, 'an event id (evt_...)')
      .optional()
      .describe('An event id: the events after it. The nextCursor of the previous page, or the id of the last event you processed.'),
    type: z.enum(FEED_EVENT_TYPES).optional(),
    limit: pageQuery.limit,
  }),
);
