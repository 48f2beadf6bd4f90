import { WAITING_STATUSES } from '../../src/core/room.ts';
import { z } from 'zod';
import { externalId, idParam } from '../schemas/common.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { route } from '../route.ts';
import type { MeetingRoute } from '../../src/services/sessions.ts';
import { waitingEntryAnswer } from '../../src/services/live/command-answers.ts';
import { PROBE_KINDS } from '../../src/services/live/network-check.ts';

const tag = 'Waiting room';
const slugParams = z.object({ slug: z.string().max(64) });
const mediasoupObject = z.record(z.string(), z.unknown());
const probe = z.object({
  kind: z.enum(PROBE_KINDS).describe('udp: UDP to the media server; tcp: ICE/TCP to it; relay: through the TURN relays.'),
  transportId: z.string(),
  iceParameters: mediasoupObject,
  iceCandidates: z.array(mediasoupObject),
  dtlsParameters: mediasoupObject,
  sctpParameters: mediasoupObject.nullable(),
});
const iceServer = z.object({ urls: z.array(z.string()), username: z.string(), credential: z.string() });
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
    route(
      {
        method: 'post',
        path: `${prefix}/network-check`,
        tag: 'Network check',
        auth: 'session',
        ipLimit: { name: 'network-check', perMinute: 30 },
        summary: 'Before joining: throwaway transports to try each path to the media server (UDP, TCP, relay).',
        description:
          'The page connects one probe per path (mediasoup-client, a data channel; the relay probe with `iceTransportPolicy: "relay"` and the `iceServers` given) and sends its DTLS parameters to `/network-check/:transportId/connect`; a probe whose connection reaches `connected` is a path that works. Probes close after 20 seconds; a new check closes the session\'s last one. See docs/networks.md.',
        params,
        response: z.object({ routerRtpCapabilities: mediasoupObject, probes: z.array(probe), iceServers: z.array(iceServer), iceServersExpireAt: z.string().nullable() }),
        errors: ['session_wrong_meeting', 'access_token_expired', 'session_revoked', 'user_deactivated', 'media_unavailable', 'room_busy', 'rate_limited'],
      },
      async ({ app, db, session, params }) => {
        await app.services.sessions.assertActive(db, session!, of(params));
        return { data: await app.services.networkCheck.start(session!.sessionId) };
      },
    ),
    route(
      {
        method: 'post',
        path: `${prefix}/network-check/:transportId/connect`,
        tag: 'Network check',
        auth: 'session',
        ipLimit: { name: 'network-check', perMinute: 30 },
        summary: 'The page\'s DTLS parameters for one of its probes.',
        params: params.extend({ transportId: z.string().max(64) }),
        body: z.strictObject({ dtlsParameters: mediasoupObject }),
        response: z.object({}),
        errors: ['session_wrong_meeting', 'access_token_expired', 'session_revoked', 'user_deactivated', 'not_found', 'validation_failed', 'rate_limited'],
      },
      async ({ app, db, session, params, body }) => {
        await app.services.sessions.assertActive(db, session!, of(params));
        await app.services.networkCheck.connect(session!.sessionId, params.transportId, body.dtlsParameters as never);
        return { data: {} };
      },
    ),
  ]),
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/waiting-room',
      tag,
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: 'Who waits in the meeting\'s waiting room now, oldest first.',
      description: 'So a backend can admit or deny (`POST .../waiting-room/:queueId/admit`) without listening to `participant.waiting`. Empty when nobody waits, the meeting has no waiting room, or it ended.',
      params: idParam,
      response: z.object({
        entries: z.array(z.object({ queueId: z.string(), userId: z.string(), name: z.string(), role: z.string(), requestedAt: z.string().describe('When they started waiting.') })),
      }),
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params }) => {
      const m = await app.services.meetings.get(db, apiKey!.orgId, params.id);
      const { entries } = await app.rooms.waitingRoom.list(m.id, {});
      return { data: { entries } };
    },
  ),
  ...(['admit', 'deny'] as const).map((action) =>
    route(
      {
        method: 'post',
        path: `/public/meetings/:id/waiting-room/:queueId/${action}`,
        tag,
        auth: 'apiKey',
        scope: 'meetings:write',
        idempotency: 'actor',
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
        return waitingEntryAnswer(reply);
      },
    ),
  ),
];
