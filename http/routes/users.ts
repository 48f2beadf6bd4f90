import { hasScope } from '../../src/core/scopes.ts';
import { z } from 'zod';
import { toJobRecord } from '../../src/services/jobs.ts';
import { AppError } from '../../src/core/errors.ts';
import { ERASED_NAME, toUserRecord } from '../../src/services/users.ts';
import { idParam } from '../schemas/common.ts';
import { bulkUsersBody, jobRecord, userInput, userListQuery, userRecord } from '../schemas/users.ts';
import { route } from '../route.ts';

const tag = 'Users';

const erasedAccount = z.object({
  userId: z.string(),
  externalId: z.string().describe('Kept, so your backend can match the account it had.'),
  status: z.literal('DEACTIVATED'),
  erasedAt: z.string(),
});

export const userRoutes = [
  route(
    {
      method: 'delete',
      path: '/users/me',
      tag,
      auth: 'session',
      // the deletion revoked the session; a repeat must still answer 200, decided on users.erased_at
      erasedAccount: 'answer',
      ipLimit: { name: 'account', perMinute: 30 },
      summary: 'Delete your own account (Bearer accessToken of any of your meeting sessions, unexpired).',
      description: `The account is deactivated (join links and sessions revoked, the room left) and its personal data erased: the name becomes "${ERASED_NAME}", email and avatar are removed. Attendance, polls and Q&A keep their numbers without the name. user.deactivated goes to the organization with that payload when the account was active. The organization's backend cannot write the data back (its upserts leave the account as it is). Deleting again answers the same. A session a host removed, or of a user the organization deactivated, is refused as refresh refuses it (session_revoked, user_deactivated) and erases nothing. An Aula account belongs to one organization; docs/api.md says why no other organization's account is touched.`,
      response: erasedAccount,
      errors: ['auth_missing', 'session_invalid', 'session_expired', 'session_revoked', 'user_deactivated', 'meeting_ended', 'rate_limited'],
    },
    async ({ app, db, session }) => {
      if (session!.expired) throw new AppError('session_expired');
      const u = await app.services.users.erase(db, session!.orgId, session!.userId);
      await app.services.rooms.withdrawWaiting(db, u.id);
      return { data: { userId: u.id, externalId: u.externalId, status: 'DEACTIVATED' as const, erasedAt: u.erasedAt!.toISOString() } };
    },
  ),
  route(
    {
      method: 'post',
      path: '/public/users',
      tag,
      auth: 'apiKey',
      scope: 'users:write',
      summary: 'Create or update a user by externalId.',
      description: 'Upsert: a new externalId creates the user (201, user.created); a known one updates it (200, user.updated when something changed). Omitted optional fields keep their value. Upserting does not reactivate a deactivated user, nor change one who deleted their account (DELETE /users/me): that user is answered as it is.',
      body: userInput,
      response: userRecord,
      status: 201,
      errors: ['validation_failed'],
    },
    async ({ app, db, apiKey, body }) => {
      const { user, created } = await app.services.users.upsert(db, apiKey!.orgId, body);
      return { status: created ? 201 : 200, data: toUserRecord(user) };
    },
  ),
  route(
    {
      method: 'post',
      path: '/public/users/bulk',
      tag,
      auth: 'apiKey',
      scope: 'users:write',
      summary: 'Create or update up to 1,000 users as a background job.',
      description: 'Answers 202 with the job at once; poll GET /public/jobs/:id. Each user is validated and upserted on its own, exactly as POST /public/users; failures are listed per user in the job.',
      body: bulkUsersBody,
      response: jobRecord,
      status: 202,
      maxBodyBytes: 4 * 1024 * 1024,
    },
    async ({ app, db, apiKey, body }) => ({ status: 202, data: toJobRecord(await app.services.jobs.createBulkUsers(db, apiKey!.orgId, body.users)) }),
  ),
  route(
    { method: 'get', path: '/public/users', tag, auth: 'apiKey', scope: 'users:read', summary: 'List users, newest first.', query: userListQuery, response: z.array(userRecord), list: true },
    async ({ app, db, apiKey, query }) => {
      const page = await app.services.users.list(db, apiKey!.orgId, query);
      return { data: page.items.map(toUserRecord), nextCursor: page.nextCursor };
    },
  ),
  route(
    { method: 'get', path: '/public/users/:id', tag, auth: 'apiKey', scope: 'users:read', summary: 'Read a user by service id or externalId.', params: idParam, response: userRecord, errors: ['user_not_found'] },
    async ({ app, db, apiKey, params }) => ({ data: toUserRecord(await app.services.users.get(db, apiKey!.orgId, params.id)) }),
  ),
  route(
    {
      method: 'post',
      path: '/public/users/:id/deactivate',
      tag,
      auth: 'apiKey',
      scope: 'users:write',
      summary: 'Deactivate a user: revokes their join links and meeting sessions, and gives up their places in waiting rooms.',
      description: 'Emits user.deactivated. Links minted before this call answer join_token_revoked; sessions can no longer be refreshed. Deactivating again returns the user unchanged.',
      params: idParam,
      response: userRecord,
      errors: ['user_not_found'],
    },
    async ({ app, db, apiKey, params }) => {
      const user = await app.services.users.deactivate(db, apiKey!.orgId, params.id);
      await app.services.rooms.withdrawWaiting(db, user.id);
      return { data: toUserRecord(user) };
    },
  ),
  route(
    {
      method: 'get',
      path: '/public/jobs/:id',
      tag: 'Jobs',
      auth: 'apiKey',
      scope: ['users:read', 'recordings:read'],
      summary: 'Status, progress and per-item failures of a background job.',
      params: z.object({ id: z.string().max(64) }),
      response: jobRecord,
      errors: ['job_not_found'],
    },
    async ({ app, db, apiKey, params }) => {
      const job = await app.services.jobs.get(db, apiKey!.orgId, params.id);
      // each kind of job is read with the scope of what it works on
      const needed = job.kind === 'users.bulk_upsert' ? 'users:read' : 'recordings:read';
      if (!hasScope(apiKey!.scopes, needed)) throw new AppError('insufficient_scope', { details: { required: needed, granted: [...apiKey!.scopes] } });
      return { data: toJobRecord(job) };
    },
  ),
];
