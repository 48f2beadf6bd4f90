import { WAITING_STATUSES } from '../../src/core/room.ts';
import { z } from 'zod';
import { externalId, idParam } from '../schemas/common.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { route } from '../route.ts';
import type { MeetingRoute } from '../../src/services/sessions.ts';

const tag = 'Waiting room';
const slugParams = z.object({ slug: z.string().max(64) });
const waitingStatus = z.object({ queueId: z.string(), status: z.enum(WAITING_STATUSES), requestedAt: z.string(), admittedAt: z.string().nullable() });

/**
 * The session's meeting, as a client-side route names it: `/meetings/:slug/...`, or for class sessions
 * `/orgs/:orgId/meetings/:id/...` (spec, client-side endpoints). Both answer the same.
 */
const MEETING_ROUTES = [
  { prefix: '/meetings/:slug', params: slugParams, of: (p: Record<string, string>): MeetingRoute => ({ slug: p.slug! }) },
  {
    prefix: '/orgs/:orgId/meetings/:id',
    params: z.object({ orgId: z.string().max(64), id: z.string().max(64) }),
    of: (p: Record<string, string>): MeetingRoute => ({ orgId: p.orgId!, meetingId: p.id! }),
  },
] as const;

export const roomRoutes = [
  ...MEETING_ROUTES.flatMap(({ prefix, params, of }) => [
    route(
      {
        method: 'get',
        path: `${prefix}/waiting-room/status/:queueId`,
        tag,
        auth: 'session',
        summary: 'Status of the caller\'s waiting-room entry (Bearer accessToken); poll until ADMITTED.',
        description: 'The page also hears `{ type: "admitted" }` pushed over the media-gateway connection it opens with its accessToken while waiting.',
        params: params.extend({ queueId: z.string().max(64) }),
        response: waitingStatus,
        errors: ['session_wrong_meeting', 'access_token_expired', 'user_deactivated', 'session_revoked', 'meeting_ended', 'not_found'],
      },
      async ({ app, db, session, params }) => ({ data: await app.services.sessions.waitingStatus(db, session!, of(params), params.queueId) }),
    ),
    route(
      {
        method: 'post',
        path: `${prefix}/token`,
        tag,
        auth: 'session',
        summary: 'The room token (mediaToken) once a host has admitted the caller.',
        params,
        body: z.strictObject({ queueId: z.string().min(1).max(64), deviceId: z.string().min(1).max(200) }),
        response: z.object({ mediaToken: z.string(), mediaUrl: z.string(), expiresAt: z.string(), role: z.enum(ROOM_ROLES), queueId: z.string() }),
        errors: ['session_wrong_meeting', 'access_token_expired', 'waiting_not_admitted', 'waiting_denied', 'waiting_expired', 'user_deactivated', 'session_revoked', 'meeting_ended', 'not_found'],
      },
      async ({ app, db, session, params, body }) => ({ data: await app.services.sessions.roomToken(db, session!, of(params), body.queueId, body.deviceId) }),
    ),
  ]),
  ...(['admit', 'deny'] as const).map((action) =>
    route(
      {
        method: 'post',
        path: `/public/meetings/:id/waiting-room/:queueId/${action}`,
        tag,
        auth: 'apiKey',
        scope: 'meetings:write',
        idempotency: 'after',
        summary: action === 'admit' ? 'Admit a waiting person from your backend.' : 'Turn a waiting person away from your backend.',
        description: `${action === 'admit' ? 'Emits participant.admitted with admittedBy null (no user admitted them: your backend did). ' : ''}Repeating it answers the entry unchanged.`,
        params: idParam.extend({ queueId: externalId }),
        response: waitingStatus,
        errors: ['meeting_not_found', 'not_found', 'invalid_state'],
      },
      async ({ app, db, apiKey, params, log }) => {
        const m = await app.services.meetings.get(db, apiKey!.orgId, params.id);
        log.info({ meetingId: m.id, queueId: params.queueId, by: apiKey!.keyId, via: 'api' }, action === 'admit' ? 'waiting room: admitted' : 'waiting room: denied');
        const reply = await app.rooms.waitingRoom[action](m.id, { queueId: params.queueId, by: null });
        return { data: { queueId: reply.queueId, status: reply.status, requestedAt: reply.requestedAt, admittedAt: reply.admittedAt } };
      },
    ),
  ),
];
