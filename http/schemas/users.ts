import { z } from 'zod';
import { USER_ROLES } from '../../src/core/domain.ts';
import { validationError } from '../../src/core/errors.ts';
import { BULK_MAX_USERS, JOB_STATUSES, type JobRecord } from '../../src/services/jobs.ts';
import { USER_STATUSES, type UserInput, type UserListQuery, type UserRecord } from '../../src/services/users.ts';
import { externalId, pageQuery, schemaOf } from './common.ts';

export const userInput = schemaOf<UserInput>()(
  z.strictObject({
    externalId: externalId.describe('Your own id for the user; sending it again updates the user.'),
    fullName: z.string().trim().min(1).max(200).describe('Display name default in rooms.'),
    email: z.email().max(320).nullable().optional().describe('Optional; null clears it.'),
    role: z.enum(USER_ROLES).describe('Organization role. TEACHER and ADMIN may hold any room role; STUDENT is capped at PARTICIPANT unless a meetings:write key asks for more.'),
    avatarUrl: z.url({ protocol: /^https?$/ }).max(2048).nullable().optional(),
  }),
);

/** One item of a bulk upsert, checked as POST /public/users checks its body (the job reports a failure per item). */
export function parseUserItem(raw: unknown): UserInput {
  const parsed = userInput.safeParse(raw);
  if (!parsed.success) throw validationError(parsed.error, 'item');
  return parsed.data;
}

export const userRecord = schemaOf<UserRecord>()(
  z.object({
    id: z.string(),
    externalId: z.string(),
    fullName: z.string(),
    email: z.string().nullable(),
    role: z.enum(USER_ROLES),
    avatarUrl: z.string().nullable(),
    status: z.enum(USER_STATUSES),
    createdAt: z.string(),
    updatedAt: z.string(),
    deactivatedAt: z.string().nullable(),
  }),
);

export const userListQuery = schemaOf<UserListQuery>()(
  z.strictObject({
    ...pageQuery,
    status: z.enum(USER_STATUSES).optional(),
    role: z.enum(USER_ROLES).optional(),
    externalId: externalId.optional(),
    q: z.string().trim().min(1).max(100).optional().describe('Users whose name, email or externalId contains this text, ignoring case.'),
  }),
);

export const bulkUsersBody = z.strictObject({
  users: z.array(z.unknown()).min(1).max(BULK_MAX_USERS).describe(`1 to ${BULK_MAX_USERS} users, each as for POST /public/users; each is validated on its own and failures are reported per user.`),
});

const jobFailure = z.object({
  index: z.number().describe('Position in the request\'s users array.'),
  externalId: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
});

export const jobRecord = schemaOf<JobRecord>()(
  z.object({
    id: z.string(),
    kind: z.enum(['users.bulk_upsert', 'recording.compose', 'recording.notes']).describe('A bulk import of users (users:read reads it), a recording\'s composition, or its transcript and notes (recordings:read reads those).'),
    status: z.enum(JOB_STATUSES),
    total: z.number(),
    processed: z.number(),
    succeeded: z.number(),
    failed: z.number(),
    failures: z.array(jobFailure),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    error: z.string().nullable().describe('Why a recording job FAILED, or why its last attempt did while it is tried again; null for bulk imports (their failures are per user).'),
  }),
);
