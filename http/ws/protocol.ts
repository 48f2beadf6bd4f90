import { z } from 'zod';

/**
 * The media-gateway protocol: JSON text frames. Clients may put an `id` on any command; the answer
 * (`ack`) carries it back. Media forwarding extends this with its own message types.
 */
export const clientMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ping'), id: z.string().max(64).optional() }),
  z.object({ type: z.literal('leave'), id: z.string().max(64).optional() }),
  z.object({ type: z.literal('end'), id: z.string().max(64).optional() }),
  z.object({ type: z.literal('remove'), id: z.string().max(64).optional(), participantId: z.string().max(255) }),
  z.object({ type: z.literal('mute'), id: z.string().max(64).optional(), participantId: z.string().max(255) }),
  z.object({ type: z.literal('admit'), id: z.string().max(64).optional(), queueId: z.string().max(255) }),
  z.object({ type: z.literal('deny'), id: z.string().max(64).optional(), queueId: z.string().max(255) }),
]);
export type ClientMessage = z.infer<typeof clientMessage>;

/** Close codes of the media gateway (4000-4999 are the application's). */
export const CLOSE_CODES = {
  left: 4000,
  removed: 4001,
  meeting_ended: 4002,
  user_deactivated: 4003,
  refused: 4004,
  unauthorized: 4401,
  server_shutdown: 4503,
} as const;
export type CloseReason = keyof typeof CLOSE_CODES;
