import { z } from 'zod';
import { toEnrollmentRecord } from '../../src/services/enrollments.ts';
import { toInvitationRecord } from '../../src/services/invitations.ts';
import { externalId, idParam } from '../schemas/common.ts';
import { enrollmentCreate, enrollmentListQuery, enrollmentRecord, invitationCreate, invitationListQuery, invitationRecord, memberParams } from '../schemas/enrollments.ts';
import { route } from '../route.ts';

export const enrollmentRoutes = [
  route(
    {
      method: 'post',
      path: '/public/classes/:id/enrollments',
      tag: 'Enrollments',
      auth: 'apiKey',
      scope: 'classes:write',
      summary: 'Enroll a user in a class.',
      description:
        'The user must be active. Creates an ACTIVE enrollment and emits enrollment.created (201); when the user already has an ACTIVE enrollment in the class it is returned unchanged (200, no event). Enrolled students may enter the class\'s ENROLLED meetings.',
      params: idParam,
      body: enrollmentCreate,
      response: enrollmentRecord,
      status: 201,
      errors: ['class_not_found', 'user_not_found', 'user_deactivated'],
    },
    async ({ app, db, apiKey, params, body }) => {
      const { enrollment, created } = await app.services.enrollments.enroll(db, apiKey!.orgId, params.id, body);
      return { status: created ? 201 : 200, data: toEnrollmentRecord(enrollment) };
    },
  ),
  route(
    {
      method: 'get',
      path: '/public/classes/:id/enrollments',
      tag: 'Enrollments',
      auth: 'apiKey',
      scope: 'classes:read',
      summary: 'List a class\'s enrollments, newest first.',
      description: 'Removed enrollments are listed too unless `status` filters them out.',
      params: idParam,
      query: enrollmentListQuery,
      response: z.array(enrollmentRecord),
      list: true,
      errors: ['class_not_found'],
    },
    async ({ app, db, apiKey, params, query }) => {
      const page = await app.services.enrollments.list(db, apiKey!.orgId, params.id, query);
      return { data: page.items.map(toEnrollmentRecord), nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'delete',
      path: '/public/classes/:id/enrollments/:userId',
      tag: 'Enrollments',
      auth: 'apiKey',
      scope: 'classes:write',
      summary: 'Remove a user from a class.',
      description: 'Ends the user\'s ACTIVE enrollment (status REMOVED, removedAt set), emits enrollment.removed and returns it.',
      params: memberParams,
      response: enrollmentRecord,
      errors: ['class_not_found', 'user_not_found', 'enrollment_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({
      data: toEnrollmentRecord(await app.services.enrollments.remove(db, apiKey!.orgId, params.id, params.userId)),
    }),
  ),
  route(
    {
      method: 'delete',
      path: '/public/batches/:batchId/enrollments/:userId',
      tag: 'Enrollments',
      auth: 'apiKey',
      scope: 'classes:write',
      summary: 'Remove a user from a batch: their enrollments with that batchId end in every class.',
      description: 'Each ACTIVE enrollment of the user whose batchId is this one becomes REMOVED and emits enrollment.removed, in one transaction; answers them, oldest first.',
      params: z.object({ batchId: z.string().min(1).max(255).describe('Your batch id, as given when enrolling.'), userId: externalId.describe('Service user id or externalId.') }),
      response: z.array(enrollmentRecord),
      errors: ['user_not_found', 'enrollment_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({
      data: (await app.services.enrollments.removeFromBatch(db, apiKey!.orgId, params.batchId, params.userId)).map(toEnrollmentRecord),
    }),
  ),
  route(
    {
      method: 'post',
      path: '/public/meetings/:id/invitations',
      tag: 'Invitations',
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'Invite users to a meeting.',
      description:
        'Invited users may enter an INVITED meeting (its host always may). All or nothing: when any user is unknown the answer is user_not_found with `details.ids` and nobody is invited. Inviting someone again keeps the first invitation. Returns the invitations of every given user.',
      params: idParam,
      body: invitationCreate,
      response: z.array(invitationRecord),
      errors: ['meeting_not_found', 'user_not_found', 'invalid_state'],
    },
    async ({ app, db, apiKey, params, body }) => ({
      data: (await app.services.invitations.invite(db, apiKey!.orgId, params.id, body.userIds)).map(toInvitationRecord),
    }),
  ),
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/invitations',
      tag: 'Invitations',
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: 'List a meeting\'s invitations.',
      params: idParam,
      query: invitationListQuery,
      response: z.array(invitationRecord),
      list: true,
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params, query }) => {
      const page = await app.services.invitations.list(db, apiKey!.orgId, params.id, query);
      return { data: page.items.map(toInvitationRecord), nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'delete',
      path: '/public/meetings/:id/invitations/:userId',
      tag: 'Invitations',
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'Withdraw a user\'s invitation.',
      description: 'Returns the withdrawn invitation. Sessions the user already holds are not ended.',
      params: memberParams,
      response: invitationRecord,
      errors: ['meeting_not_found', 'user_not_found', 'invitation_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({
      data: toInvitationRecord(await app.services.invitations.revoke(db, apiKey!.orgId, params.id, params.userId)),
    }),
  ),
];
