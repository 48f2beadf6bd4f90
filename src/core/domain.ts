/**
 * Meetings' statuses and end reasons, users' roles and the erased name: words every layer speaks (HTTP
 * schemas, services, actors, the room page), each defined here and in no other module, so the layers
 * cannot disagree on a value. The live room's words have modules of their own: room.ts (devices,
 * meeting kinds, waiting statuses), room-access.ts (room roles, media sources), classroom.ts (polls and
 * questions).
 */

export const MEETING_STATUSES = ['SCHEDULED', 'LIVE', 'ENDED', 'CANCELLED'] as const;
export type MeetingStatus = (typeof MEETING_STATUSES)[number];

/** Why a meeting ended (`endedReason`). */
export const ENDED_REASONS = ['HOST_ENDED', 'ROOM_FINISHED', 'PLAN_LIMIT', 'API', 'TIMEOUT'] as const;
export type EndedReason = (typeof ENDED_REASONS)[number];

/** A user's role in the organization (not a room role: see src/core/room-access.ts). */
export const USER_ROLES = ['TEACHER', 'STUDENT', 'ADMIN'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The name of a user who deleted their account (the spec's fixed text), wherever the name was kept. */
export const ERASED_NAME = 'Deleted user';
