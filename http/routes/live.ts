import { z } from 'zod';
import { MEETING_KINDS } from '../../src/core/room.ts';
import { recordAudit } from '../../src/services/audit-log.ts';
import { meetingAnswer } from '../../src/services/live/command-answers.ts';
import { liveNow, type LiveNow } from '../../src/services/live-now.ts';
import { externalId, pageQuery, schemaOf } from '../schemas/common.ts';
import { meetingRecord } from '../schemas/meetings.ts';
import { route, type Ctx } from '../route.ts';
import { auditActorOf } from './audit-log.ts';

const tag = 'Live rooms (admin)';
const orgParams = z.object({ orgId: z.string().min(1).max(64) });

const liveRooms = schemaOf<LiveNow>()(
  z.object({
    totals: z.object({ rooms: z.number().int(), people: z.number().int(), hosts: z.number().int() }).describe('Over all the organization\'s live rooms, not only this page.'),
    maxLiveMeetings: z.number().int().describe('The plan\'s limit on rooms live at once.'),
    rooms: z.array(
      z.object({
        meetingId: z.string(),
        externalId: z.string().nullable(),
        title: z.string(),
        kind: z.enum(MEETING_KINDS),
        slug: z.string(),
        startedAt: z.string(),
        people: z.number().int().describe('People in the room now; someone reconnecting within the grace still counts.'),
        hosts: z.number().int().describe('Of them, hosts and cohosts.'),
      }),
    ),
  }),
);

/**
 * Ends a meeting through its actor and, when that ended a live room, records it in the audit log as the
 * act of whoever asked (the actor committed the end; the entry follows its acknowledgement).
 */
export async function endRecorded(ctx: Ctx<unknown, unknown, unknown>, orgId: string, idOrExternal: string) {
  const { app } = ctx;
  const before = await app.services.meetings.get(ctx.db, orgId, idOrExternal);
  const after = await app.services.meetings.end(ctx.db, orgId, before.id);
  if (before.status === 'LIVE' && after.status === 'ENDED') {
    await recordAudit(app.sql, app.clock.now(), {
      orgId,
      actor: auditActorOf(ctx),
      action: 'meeting.ended',
      target: { type: 'meeting', id: after.id },
      details: { title: after.title, kind: after.kind },
      requestId: ctx.req.requestId,
    });
  }
  return after;
}

export const liveRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/live',
      tag,
      auth: 'admin',
      summary: 'The organization\'s live rooms now: title, kind, start, people and hosts in each, and the totals.',
      description:
        'Most recently started first, `limit` rooms a page (`nextCursor` beside `data`); `totals` count every live room. Read in one query from what the rooms record as people join and leave, so a join or leave shows as soon as the room has taken it.',
      params: orgParams,
      query: z.strictObject({ ...pageQuery }),
      response: liveRooms,
      list: true,
    },
    async ({ db, params, query }) => {
      const { live, nextCursor } = await liveNow(db, params.orgId, query);
      return { data: live, nextCursor };
    },
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/meetings/:id/end',
      tag,
      auth: 'admin',
      summary: 'End a live room for everyone, as an owner or admin.',
      idempotency: 'actor',
      description:
        'The same as `POST /public/meetings/:id/end` (LIVE to ENDED with endedReason HOST_ENDED, meeting.ended; ending again answers the meeting unchanged; a SCHEDULED meeting answers invalid_state), for the console, and recorded in the audit log (meeting.ended) when it ended the room.',
      params: orgParams.extend({ id: externalId.describe('The meeting\'s id or externalId.') }),
      response: meetingRecord,
      errors: ['meeting_not_found', 'invalid_state', 'actor_unavailable'],
    },
    async (ctx) => meetingAnswer(await endRecorded(ctx, ctx.params.orgId, ctx.params.id)),
  ),
];
