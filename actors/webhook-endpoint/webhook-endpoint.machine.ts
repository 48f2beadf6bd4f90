import { and, emit, enqueueActions, setup } from 'xstate';
import { refusal } from '../../src/core/actor-effects.ts';
import type {
  EndpointView,
  WebhookEndpointContext,
  WebhookEndpointEffect,
  WebhookEndpointEvent,
  WebhookEndpointInput,
} from './webhook-endpoint.types.ts';

/** Stored beside every persisted snapshot; bump it when a snapshot of the previous version would not restore. */
export const WEBHOOK_ENDPOINT_MACHINE_VERSION = 1;
/** An endpoint whose every delivery failed for this long is disabled (spec: 3 days). */
export const AUTO_DISABLE_AFTER_MS = 3 * 24 * 60 * 60_000;
/** After a rotation the previous secret signs too, for this long (spec: 24 hours). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

export const WEBHOOK_TIMERS = { autoDisable: 'auto-disable', rotation: 'rotation-overlap' } as const;

const view = (c: WebhookEndpointContext): EndpointView => ({
  ok: true,
  endpointId: c.endpointId,
  status: c.status,
  disabledReason: c.disabledReason,
  failingSince: c.failingSince,
});

/**
 * A webhook endpoint's life: ACTIVE (healthy, or failing since its first failed delivery), DISABLED
 * (by an admin, after 3 days of failures, or by a 410 from the receiver), DELETED. It owns the
 * endpoint's status and deadlines; the sending itself is done beside it by the node that owns its
 * shard (src/services/webhooks/delivery.ts), which reports only the results that change the state.
 */
export const webhookEndpointMachine = setup({
  types: {
    context: {} as WebhookEndpointContext,
    events: {} as WebhookEndpointEvent,
    input: {} as WebhookEndpointInput,
    emitted: {} as WebhookEndpointEffect,
  },
  guards: {
    rowDisabled: ({ context }) => context.status === 'DISABLED',
    rowFailing: ({ context }) => context.failingSince !== null,
    gone: ({ event }) => event.type === 'DELIVERY_FAILED' && event.gone,
    timerIs: ({ event }, params: { name: string }) => event.type === 'TIMER' && event.name === params.name,
    overlapOver: ({ context, event }) => context.rotationExpiresAt !== null && event.at >= context.rotationExpiresAt,
    failedForLong: ({ context, event }) => context.failingSince !== null && event.at >= context.failingSince + AUTO_DISABLE_AFTER_MS,
  },
  actions: {
    reply: emit(({ context }) => ({ type: 'reply' as const, body: view(context) })),
    notFound: emit(() => refusal('not_found', 'No webhook endpoint with this id.')),
    /** Settles a fresh actor into its row's state; timers are re-armed (same name replaces). */
    init: enqueueActions(({ context, enqueue }) => {
      if (context.status === 'ACTIVE' && context.failingSince !== null) {
        enqueue.emit({ type: 'timer.set', name: WEBHOOK_TIMERS.autoDisable, dueAt: context.failingSince + AUTO_DISABLE_AFTER_MS });
      }
      if (context.rotationExpiresAt !== null) enqueue.emit({ type: 'timer.set', name: WEBHOOK_TIMERS.rotation, dueAt: context.rotationExpiresAt });
    }),
    startFailing: enqueueActions(({ event, enqueue }) => {
      enqueue.assign({ failingSince: event.at });
      enqueue.emit({ type: 'timer.set', name: WEBHOOK_TIMERS.autoDisable, dueAt: event.at + AUTO_DISABLE_AFTER_MS });
    }),
    recover: enqueueActions(({ enqueue }) => {
      enqueue.assign({ failingSince: null });
      enqueue.emit({ type: 'timer.cancel', name: WEBHOOK_TIMERS.autoDisable });
    }),
    disable: enqueueActions(({ context, event, enqueue }, params: { reason: 'MANUAL' | 'FAILING' | 'GONE' }) => {
      enqueue.assign({ status: 'DISABLED', disabledReason: params.reason, disabledAt: event.at });
      enqueue.emit({ type: 'timer.cancel', name: WEBHOOK_TIMERS.autoDisable });
      if (params.reason !== 'MANUAL') enqueue.emit({ type: 'notify.disabled', reason: params.reason, failingSince: context.failingSince });
    }),
    enable: enqueueActions(({ enqueue }) => {
      enqueue.assign({ status: 'ACTIVE', disabledReason: null, disabledAt: null, failingSince: null });
    }),
    remove: enqueueActions(({ enqueue }) => {
      enqueue.assign({ status: 'DELETED', failingSince: null, rotationExpiresAt: null });
      enqueue.emit({ type: 'timer.cancel', name: WEBHOOK_TIMERS.autoDisable });
      enqueue.emit({ type: 'timer.cancel', name: WEBHOOK_TIMERS.rotation });
    }),
    rotated: enqueueActions(({ event, enqueue }) => {
      if (event.type !== 'ROTATED') return;
      enqueue.assign({ rotationExpiresAt: event.expiresAt });
      enqueue.emit({ type: 'timer.set', name: WEBHOOK_TIMERS.rotation, dueAt: event.expiresAt });
    }),
    expireSecret: enqueueActions(({ enqueue }) => {
      enqueue.assign({ rotationExpiresAt: null });
      enqueue.emit({ type: 'secret.expired' });
    }),
  },
}).createMachine({
  id: 'webhook-endpoint',
  context: ({ input }) => ({ ...input }),
  initial: 'init',
  // Rotation and status queries work in every state but DELETED.
  on: {
    ROTATED: { actions: ['rotated', 'reply'] },
    STATUS: { actions: 'reply' },
    TIMER: { guard: and([{ type: 'timerIs', params: { name: WEBHOOK_TIMERS.rotation } }, 'overlapOver']), actions: 'expireSecret' },
    DELETE: { target: '.deleted', actions: ['remove', 'reply'] },
  },
  states: {
    init: {
      on: {
        INIT: [
          { guard: 'rowDisabled', target: 'disabled', actions: 'init' },
          { guard: 'rowFailing', target: 'active.failing', actions: 'init' },
          { target: 'active.healthy', actions: 'init' },
        ],
      },
    },
    active: {
      on: {
        ENABLE: { actions: 'reply' },
        DISABLE: { target: 'disabled', actions: [{ type: 'disable', params: { reason: 'MANUAL' } }, 'reply'] },
      },
      initial: 'healthy',
      states: {
        healthy: {
          on: {
            DELIVERY_FAILED: [{ guard: 'gone', target: '#webhook-endpoint.disabled', actions: [{ type: 'disable', params: { reason: 'GONE' } }, 'reply'] }, { target: 'failing', actions: ['startFailing', 'reply'] }],
            DELIVERY_SUCCEEDED: { actions: 'reply' },
          },
        },
        failing: {
          on: {
            DELIVERY_FAILED: [{ guard: 'gone', target: '#webhook-endpoint.disabled', actions: [{ type: 'disable', params: { reason: 'GONE' } }, 'reply'] }, { actions: 'reply' }],
            DELIVERY_SUCCEEDED: { target: 'healthy', actions: ['recover', 'reply'] },
            TIMER: [
              {
                guard: and([{ type: 'timerIs', params: { name: WEBHOOK_TIMERS.autoDisable } }, 'failedForLong']),
                target: '#webhook-endpoint.disabled',
                actions: { type: 'disable', params: { reason: 'FAILING' } },
              },
              { guard: and([{ type: 'timerIs', params: { name: WEBHOOK_TIMERS.rotation } }, 'overlapOver']), actions: 'expireSecret' },
            ],
          },
        },
      },
    },
    disabled: {
      on: {
        ENABLE: { target: 'active.healthy', actions: ['enable', 'reply'] },
        DISABLE: { actions: 'reply' },
        // late results of sends that were in flight when it was disabled change nothing
        DELIVERY_FAILED: { actions: 'reply' },
        DELIVERY_SUCCEEDED: { actions: 'reply' },
      },
    },
    // Not XState `final`: it keeps answering not_found.
    deleted: {
      on: {
        '*': { actions: 'notFound' },
      },
    },
  },
});

export type WebhookEndpointMachine = typeof webhookEndpointMachine;
