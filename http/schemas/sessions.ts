import { z } from 'zod';
import { CHAT_MODES } from '../../src/core/chat.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { MEETING_KINDS, WAITING_STATUSES, type MeetingSession } from '../../src/core/room.ts';
import { schemaOf } from './common.ts';

export const exchangeBody = z.strictObject({
  token: z.string().min(1).max(4096),
  deviceId: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').describe('Stable per-device (per-tab) string.'),
});

export const meetingSession = schemaOf<MeetingSession>()(
  z.object({
    accessToken: z.string(),
    tokenType: z.literal('Bearer'),
    expiresAt: z.string(),
    mediaToken: z.string().nullable(),
    mediaUrl: z.string(),
    role: z.enum(ROOM_ROLES),
    waitingRoom: z.object({ queueId: z.string(), status: z.enum(WAITING_STATUSES) }).nullable(),
    meeting: z.object({
      id: z.string(),
      kind: z.enum(MEETING_KINDS),
      slug: z.string(),
      title: z.string(),
      status: z.string(),
      orgId: z.string(),
      settings: z.object({
        muteOnEntry: z.boolean(),
        lectureMode: z.boolean(),
        allowStudentScreenShare: z.boolean(),
        recordAutomatically: z.boolean(),
        chat: z.enum(CHAT_MODES),
        privateChatToHosts: z.boolean(),
      }),
    }),
    user: z.object({ id: z.string(), externalId: z.string(), displayName: z.string() }),
    redirectUrl: z.string().nullable(),
  }),
);
