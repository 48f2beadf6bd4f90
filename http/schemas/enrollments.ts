import { z } from 'zod';
import { USER_ROLES } from '../../src/core/domain.ts';
import { ENROLLMENT_STATUSES, type EnrollmentCreate, type EnrollmentListQuery, type EnrollmentRecord, type MemberUser } from '../../src/services/enrollments.ts';
import { MAX_INVITES_PER_REQUEST, type InvitationRecord } from '../../src/services/invitations.ts';
import type { PageQuery } from '../../src/services/common.ts';
import { externalId, pageQuery, schemaOf } from './common.ts';

/** `:id` (the class or meeting) and `:userId`, each a service id or an externalId. */
export const memberParams = z.object({ id: externalId, userId: externalId.describe('Service user id or externalId.') });

export const enrollmentCreate = schemaOf<EnrollmentCreate>()(
  z
    .strictObject({
      userId: externalId.optional().describe('Service user id or externalId.'),
      externalUserId: externalId.optional().describe('Your externalId of the user.'),
      batchId: z.string().max(255).nullable().optional().describe('Your own batch id, echoed in events.'),
    })
    .refine((b) => (b.userId === undefined) !== (b.externalUserId === undefined), {
      message: 'give exactly one of userId and externalUserId',
      path: ['userId'],
    }),
);

export const enrollmentListQuery = schemaOf<EnrollmentListQuery>()(
  z.strictObject({
    ...pageQuery,
    status: z.enum(ENROLLMENT_STATUSES).optional().describe('Only enrollments in this status; all by default.'),
  }),
);

/** The user as enrollment and invitation records show it. */
export const memberUser = schemaOf<MemberUser>()(
  z.object({
    id: z.string(),
    externalId: z.string(),
    name: z.string(),
    role: z.enum(USER_ROLES),
  }),
);

export const enrollmentRecord = schemaOf<EnrollmentRecord>()(
  z.object({
    id: z.string(),
    classId: z.string(),
    externalClassId: z.string().nullable(),
    user: memberUser,
    batchId: z.string().nullable(),
    status: z.enum(ENROLLMENT_STATUSES),
    enrolledAt: z.string(),
    removedAt: z.string().nullable(),
  }),
);

export const invitationCreate = z.strictObject({
  userIds: z
    .array(externalId)
    .min(1)
    .max(MAX_INVITES_PER_REQUEST)
    .describe(`1 to ${MAX_INVITES_PER_REQUEST} service user ids or externalIds.`),
});

export const invitationListQuery = schemaOf<PageQuery>()(z.strictObject({ ...pageQuery }));

export const invitationRecord = schemaOf<InvitationRecord>()(
  z.object({
    meetingId: z.string(),
    user: memberUser,
    invitedAt: z.string(),
  }),
);
