import { z } from 'zod';
import { at, id } from '../meeting/meeting.schemas.ts';

export const ENDPOINT_STATUSES = ['ACTIVE', 'DISABLED', 'DELETED'] as const;
export const DISABLED_REASONS = ['MANUAL', 'FAILING', 'GONE'] as const;

/** What the host builds from the webhook_endpoints row to create the actor. */
export const webhookEndpointInput = z.object({
  endpointId: id,
  orgId: id,
  url: z.string(),
  status: z.enum(['ACTIVE', 'DISABLED']),
  disabledReason: z.enum(DISABLED_REASONS).nullable(),
  disabledAt: z.number().nullable(),
  failingSince: z.number().nullable(),
  rotationExpiresAt: z.number().nullable(),
});

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), at, ...shape });

/** A scheduled delivery failed (`gone`: the receiver answered 410, which disables the endpoint at once). */
export const deliveryFailedEvent = ev('DELIVERY_FAILED', { gone: z.boolean().default(false) });
/** A scheduled delivery succeeded: the endpoint is healthy again. */
export const deliverySucceededEvent = ev('DELIVERY_SUCCEEDED', {});
/** An admin re-enabled it (`status: ACTIVE`). */
export const enableEvent = ev('ENABLE', {});
/** An admin disabled it (`status: DISABLED`). */
export const disableEvent = ev('DISABLE', {});
export const deleteEvent = ev('DELETE', {});
/** The secret was rotated; the previous one stops signing at `expiresAt`. */
export const rotatedEvent = ev('ROTATED', { expiresAt: z.number().int() });
export const statusEvent = ev('STATUS', {});
/** Sent once to a fresh actor (built from its row): it settles into the row's state and re-arms its timers. */
export const initEvent = ev('INIT', {});
export const timerEvent = ev('TIMER', { name: z.string().min(1).max(300) });

export const webhookEndpointEvent = z.discriminatedUnion('type', [
  deliveryFailedEvent,
  deliverySucceededEvent,
  enableEvent,
  disableEvent,
  deleteEvent,
  rotatedEvent,
  statusEvent,
  timerEvent,
  initEvent,
]);
