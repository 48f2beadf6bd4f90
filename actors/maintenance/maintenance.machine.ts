import { emit, enqueueActions, setup } from 'xstate';
import type { MaintenanceContext, MaintenanceEffect, MaintenanceEvent, MaintenanceInput } from './maintenance.types.ts';

export const MAINTENANCE_MACHINE_VERSION = 1;
/** How often retention runs (delivery log, events, messages, expired idempotency keys and sessions). */
export const PURGE_EVERY_MS = 60 * 60_000;
export const MAINTENANCE_TIMERS = { purge: 'purge' } as const;

/**
 * The cluster's housekeeping, one actor for the whole cluster (`maintenance:retention`): a durable
 * timer that fires every hour on whichever node owns its shard, and a purge that runs in the
 * timer's transaction. Being an actor makes it run once, survive takeovers and follow the clock.
 */
export const maintenanceMachine = setup({
  types: {
    context: {} as MaintenanceContext,
    events: {} as MaintenanceEvent,
    input: {} as MaintenanceInput,
    emitted: {} as MaintenanceEffect,
  },
  actions: {
    arm: emit(({ event }) => ({ type: 'timer.set' as const, name: MAINTENANCE_TIMERS.purge, dueAt: event.at + PURGE_EVERY_MS })),
    reply: emit(({ context }) => ({ type: 'reply' as const, body: { ok: true as const, lastPurgeAt: context.lastPurgeAt } })),
    purge: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'TIMER' || event.name !== MAINTENANCE_TIMERS.purge) return;
      enqueue.emit({ type: 'purge' });
      enqueue.assign({ lastPurgeAt: event.at, purges: context.purges + 1 });
      enqueue.emit({ type: 'timer.set', name: MAINTENANCE_TIMERS.purge, dueAt: event.at + PURGE_EVERY_MS });
    }),
  },
}).createMachine({
  id: 'maintenance',
  context: ({ input }) => ({ name: input.name, lastPurgeAt: null, purges: 0 }),
  on: {
    INIT: { actions: 'arm' },
    ENSURE: { actions: 'reply' },
    TIMER: { actions: 'purge' },
  },
});
