import { z } from 'zod';
import { at } from '../meeting/meeting.schemas.ts';

export const maintenanceInput = z.object({ name: z.string().min(1) });

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), at, ...shape });

/** Sent once to a fresh actor: it arms its first run. */
export const initEvent = ev('INIT', {});
/** Sent by every node at start: makes sure the actor exists (and so its timer is armed). */
export const ensureEvent = ev('ENSURE', {});
export const timerEvent = ev('TIMER', { name: z.string().min(1).max(300) });

export const maintenanceEvent = z.discriminatedUnion('type', [initEvent, ensureEvent, timerEvent]);
