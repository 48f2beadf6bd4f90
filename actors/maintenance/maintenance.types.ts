import type { z } from 'zod';
import type { ReplyEffect, TimerSetEffect } from '../../src/core/actor-effects.ts';
import type { maintenanceEvent, maintenanceInput } from './maintenance.schemas.ts';

export type MaintenanceInput = z.infer<typeof maintenanceInput>;
export type MaintenanceEvent = z.infer<typeof maintenanceEvent>;

export interface MaintenanceContext {
  name: string;
  /** ms of the last purge, null before the first */
  lastPurgeAt: number | null;
  purges: number;
}

/** Delete what is past its retention at `at` (the host runs it in the transition's transaction). */
export interface PurgeEffect {
  type: 'purge';
}

export type MaintenanceEffect = TimerSetEffect | PurgeEffect | ReplyEffect<{ ok: true; lastPurgeAt: number | null }>;
