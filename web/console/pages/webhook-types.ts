/**
 * The webhook records as the admin API answers them (http/schemas/webhooks.ts). The enums live in the
 * services, which the browser may not import, so their values are repeated here; the API refuses
 * anything else with its own message.
 */
export const DELIVERY_STATUSES = ['SUCCEEDED', 'FAILED', 'SKIPPED'] as const;
export const WILDCARD = '*';

export interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  status: 'ACTIVE' | 'DISABLED';
  disabledReason: 'MANUAL' | 'FAILING' | 'GONE' | null;
  disabledAt: string | null;
  failingSince: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface EndpointWithSecret extends Endpoint {
  secret: string;
}

export interface Delivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  trigger: 'EVENT' | 'TEST' | 'REDELIVERY';
  status: (typeof DELIVERY_STATUSES)[number];
  statusCode: number | null;
  durationMs: number | null;
  responseBody: string | null;
  error: { kind: string; message: string } | null;
  nextAttemptAt: string | null;
  createdAt: string;
}

export interface DeliveryDetail extends Delivery {
  payload: { id: string; type: string; createdAt: string; organizationId: string; data: Record<string, unknown> } | null;
}

export interface Catalog {
  wildcard: string;
  types: string[];
}

export const eventsLabel = (events: string[]): string => (events.includes(WILDCARD) ? 'Every event' : events.length === 1 ? events[0]! : `${events.length} event types`);
