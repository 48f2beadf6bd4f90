import type { z } from 'zod';
import type { ReplyEffect, Refusal, TimerCancelEffect, TimerSetEffect } from '../../src/core/actor-effects.ts';
import type { DISABLED_REASONS, ENDPOINT_STATUSES, webhookEndpointEvent, webhookEndpointInput } from './webhook-endpoint.schemas.ts';

export type WebhookEndpointInput = z.infer<typeof webhookEndpointInput>;
export type WebhookEndpointEvent = z.infer<typeof webhookEndpointEvent>;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];
export type DisabledReason = (typeof DISABLED_REASONS)[number];

/** JSON only: this is what `getPersistedSnapshot()` stores. Secrets never live here (they stay sealed in their row). */
export interface WebhookEndpointContext {
  endpointId: string;
  orgId: string;
  url: string;
  status: EndpointStatus;
  disabledReason: DisabledReason | null;
  /** ms */
  disabledAt: number | null;
  /** ms of the first failed delivery since the last success; null while deliveries succeed */
  failingSince: number | null;
  /** ms when the previous secret stops signing, while a rotation overlap runs */
  rotationExpiresAt: number | null;
}

export interface EndpointView {
  ok: true;
  endpointId: string;
  status: EndpointStatus;
  disabledReason: DisabledReason | null;
  failingSince: number | null;
}

/** Owners and admins are told (in-app and by email) that the endpoint was disabled; written in the transition's transaction. */
export interface NotifyDisabledEffect {
  type: 'notify.disabled';
  reason: 'FAILING' | 'GONE';
  failingSince: number | null;
}

/** The previous secret's overlap is over: it is erased from the row. */
export interface SecretExpiredEffect {
  type: 'secret.expired';
}

export type WebhookEndpointEffect =
  | TimerSetEffect
  | TimerCancelEffect
  | NotifyDisabledEffect
  | SecretExpiredEffect
  | ReplyEffect<EndpointView | Refusal>;
