import { z } from 'zod';
import { ENDED_REASONS, MEETING_STATUSES } from '../../src/core/domain.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS, type JoinLinkInput, type JoinLinkRecord } from '../../src/services/join-links.ts';
import { MEETING_KINDS } from '../../src/core/room.ts';
import { CHAT_MODES } from '../../src/core/chat.ts';
import { ACCESS_MODES, type MeetingCreate, type MeetingListQuery, type MeetingRecord, type MeetingUpdate } from '../../src/services/meetings.ts';
import { externalId, httpsUrl, isoDate, pageQuery, schemaOf } from './common.ts';

const meetingSettings = z.strictObject({
  waitingRoom: z.boolean().optional().describe('People wait until a host admits them. Default false.'),
  muteOnEntry: z.boolean().optional().describe('Default false.'),
  recordAutomatically: z.boolean().optional().describe('Default false.'),
  lectureMode: z.boolean().optional().describe('Only hosts and cohosts send audio until a host gives a student the floor. Default false.'),
  allowStudentScreenShare: z.boolean().optional().describe('Default true for MEETING, false for CLASS.'),
  chat: z.enum(CHAT_MODES).optional().describe('The room\'s chat: everyone writes to the room (default), only hosts and cohosts do (hosts-only), or off. Hosts change it live in the room too.'),
  privateChatToHosts: z.boolean().optional().describe('Students may write privately to the hosts (never to each other). Default true.'),
  maxParticipants: z
    .number()
    .int()
    .min(2)
    .nullable()
    .optional()
    .describe("At most this many people in the room at once (hosts included; hosts and cohosts still get in); at most the plan's cap. null (default): the plan's cap."),
});

const slug = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{1,62}[a-z0-9])$/, 'lowercase letters, digits and inner hyphens, 3 to 64 characters');

export const meetingCreate = schemaOf<MeetingCreate>()(
  z
    .strictObject({
      externalId: externalId.optional().describe('Your own id; the meeting can then be addressed by it.'),
      title: z.string().trim().min(1).max(300),
      type: z.enum(MEETING_KINDS).describe('MEETING, or CLASS for an academic live class (needs classId).'),
      classId: externalId.optional().describe('Class service id or externalId; required for CLASS.'),
      batchId: z.string().max(255).optional(),
      hostUserId: externalId.describe('Service user id or externalId of the host.'),
      scheduledStart: isoDate,
      durationMinutes: z.number().int().min(1).max(1440),
      slug: slug.optional().describe('Room address; generated when absent.'),
      settings: meetingSettings.optional(),
      access: z.strictObject({ mode: z.enum(ACCESS_MODES) }).optional().describe('Default ORG_MEMBERS. ENROLLED is for CLASS meetings.'),
    })
    .superRefine((m, ctx) => {
      if (m.type === 'CLASS' && !m.classId) ctx.addIssue({ code: 'custom', path: ['classId'], message: 'required when type is CLASS' });
      if (m.type === 'MEETING' && m.classId) ctx.addIssue({ code: 'custom', path: ['classId'], message: 'only for type CLASS' });
      if (m.access?.mode === 'ENROLLED' && m.type !== 'CLASS') ctx.addIssue({ code: 'custom', path: ['access', 'mode'], message: 'ENROLLED needs type CLASS' });
    }),
);

export const meetingUpdate = schemaOf<MeetingUpdate>()(
  z
    .strictObject({
      title: z.string().trim().min(1).max(300).optional(),
      hostUserId: externalId.optional(),
      scheduledStart: isoDate.optional(),
      durationMinutes: z.number().int().min(1).max(1440).optional(),
      settings: meetingSettings.optional().describe('Only the settings given change.'),
      access: z.strictObject({ mode: z.enum(ACCESS_MODES) }).optional(),
    })
    .refine((u) => Object.keys(u).length > 0, { message: 'give at least one field to change' }),
);

export const meetingListQuery = schemaOf<MeetingListQuery>()(
  z.strictObject({
    ...pageQuery,
    status: z.enum(MEETING_STATUSES).optional(),
    classId: externalId.optional().describe('Class service id or externalId.'),
    from: isoDate.optional().describe('scheduledStart at or after'),
    to: isoDate.optional().describe('scheduledStart before'),
    externalId: externalId.optional(),
    userId: externalId.optional().describe('Meetings this user hosts or was in (attended): service id or externalId.'),
  }),
);

export const meetingRecord = schemaOf<MeetingRecord>()(
  z.object({
    id: z.string(),
    externalId: z.string().nullable(),
    slug: z.string(),
    kind: z.enum(MEETING_KINDS),
    type: z.enum(MEETING_KINDS).describe('As created: MEETING, or CLASS for a class session (the same as `kind`).'),
    title: z.string(),
    status: z.enum(MEETING_STATUSES),
    hostUserId: z.string(),
    classId: z.string().nullable(),
    externalClassId: z.string().nullable(),
    courseId: z.string().nullable(),
    batchId: z.string().nullable(),
    scheduledStart: z.string(),
    scheduledEnd: z.string(),
    durationMinutes: z.number(),
    settings: z.object({
      waitingRoom: z.boolean(),
      muteOnEntry: z.boolean(),
      recordAutomatically: z.boolean(),
      lectureMode: z.boolean(),
      allowStudentScreenShare: z.boolean(),
      chat: z.enum(CHAT_MODES),
      privateChatToHosts: z.boolean(),
      maxParticipants: z.number().int().nullable(),
    }),
    access: z.object({ mode: z.enum(ACCESS_MODES) }),
    startedAt: z.string().nullable(),
    endedAt: z.string().nullable(),
    durationSeconds: z.number().nullable(),
    endedReason: z.enum(ENDED_REASONS).nullable(),
    cancelledAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

export const joinLinkCreate = schemaOf<JoinLinkInput>()(
  z
    .strictObject({
      userId: externalId.optional().describe('Service user id or externalId.'),
      externalUserId: externalId.optional().describe('Your externalId of the user.'),
      role: z.enum(ROOM_ROLES).optional().describe('Default PARTICIPANT; capped by the user\'s organization role.'),
      displayName: z.string().trim().min(1).max(200).optional().describe('Defaults to the user\'s full name.'),
      expiresInSeconds: z.number().int().min(1).max(MAX_EXPIRY_SECONDS).optional().describe(`Default ${DEFAULT_EXPIRY_SECONDS}, at most ${MAX_EXPIRY_SECONDS}.`),
      singleUse: z.boolean().optional().describe('Default true.'),
      redirectUrl: httpsUrl.optional().describe('https URL the join page sends the user to after they leave or the meeting ends.'),
    })
    .refine((b) => (b.userId === undefined) !== (b.externalUserId === undefined), {
      message: 'give exactly one of userId and externalUserId',
      path: ['userId'],
    }),
);

export const joinLinkRecord = schemaOf<JoinLinkRecord>()(
  z.object({
    url: z.string(),
    embedUrl: z.string(),
    token: z.string(),
    expiresAt: z.string(),
    role: z.enum(ROOM_ROLES),
    singleUse: z.boolean(),
    userId: z.string(),
  }),
);
