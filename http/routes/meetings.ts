import { z } from 'zod';
import { toMeetingRecord } from '../../src/services/meetings.ts';
import { meetingAnswer } from '../../src/services/live/command-answers.ts';
import { joinLinkJson } from '../join-link-json.ts';
import { idParam } from '../schemas/common.ts';
import { joinLinkCreate, joinLinkRecord, meetingCreate, meetingListQuery, meetingRecord, meetingUpdate } from '../schemas/meetings.ts';
import { route } from '../route.ts';
import { endRecorded } from './live.ts';

const tag = 'Meetings';

export const meetingRoutes = [
  route(
    {
      method: 'post',
      path: '/public/meetings',
      tag,
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'Schedule a meeting or a live class.',
      description: 'Emits meeting.created. A repeated externalId answers 409 meeting_exists; send Idempotency-Key to retry safely.',
      body: meetingCreate,
      response: meetingRecord,
      status: 201,
      errors: ['user_not_found', 'class_not_found', 'meeting_exists', 'slug_taken', 'user_deactivated'],
    },
    async ({ app, db, apiKey, body }) => ({ status: 201, data: toMeetingRecord(await app.services.meetings.create(db, apiKey!.orgId, body)) }),
  ),
  route(
    { method: 'get', path: '/public/meetings', tag, auth: 'apiKey', scope: 'meetings:read', summary: 'List meetings by scheduled start.', query: meetingListQuery, response: z.array(meetingRecord), list: true, errors: ['class_not_found', 'user_not_found'] },
    async ({ app, db, apiKey, query }) => {
      const page = await app.services.meetings.list(db, apiKey!.orgId, query);
      return { data: page.items.map(toMeetingRecord), nextCursor: page.nextCursor };
    },
  ),
  route(
    { method: 'get', path: '/public/meetings/:id', tag, auth: 'apiKey', scope: 'meetings:read', summary: 'Read a meeting by service id or externalId.', params: idParam, response: meetingRecord, errors: ['meeting_not_found'] },
    async ({ app, db, apiKey, params }) => ({ data: toMeetingRecord(await app.services.meetings.get(db, apiKey!.orgId, params.id)) }),
  ),
  route(
    {
      method: 'patch',
      path: '/public/meetings/:id',
      tag,
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'Change title, host, schedule, settings or access mode.',
      description: 'Emits meeting.updated when something changed. ENDED and CANCELLED meetings cannot change; a LIVE one keeps its schedule and access mode.',
      params: idParam,
      body: meetingUpdate,
      response: meetingRecord,
      errors: ['meeting_not_found', 'invalid_state'],
    },
    async ({ app, db, apiKey, params, body }) => ({ data: toMeetingRecord(await app.services.meetings.update(db, apiKey!.orgId, params.id, body)) }),
  ),
  route(
    {
      method: 'post',
      path: '/public/meetings/:id/cancel',
      tag,
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'Cancel a scheduled meeting.',
      idempotency: 'actor',
      description: 'SCHEDULED to CANCELLED, emits meeting.cancelled and revokes its sessions. Cancelling again returns the meeting unchanged; a LIVE meeting answers invalid_state (end it instead).',
      params: idParam,
      response: meetingRecord,
      errors: ['meeting_not_found', 'invalid_state'],
    },
    async ({ app, db, apiKey, params }) => meetingAnswer(await app.services.meetings.cancel(db, apiKey!.orgId, params.id)),
  ),
  route(
    {
      method: 'post',
      path: '/public/meetings/:id/end',
      tag,
      auth: 'apiKey',
      scope: 'meetings:write',
      summary: 'End a live meeting for everyone.',
      idempotency: 'actor',
      description: 'LIVE to ENDED with endedReason HOST_ENDED, emits meeting.ended. Ending again returns the meeting unchanged; a SCHEDULED meeting answers invalid_state (cancel it instead). Ended by a signed-in owner or admin (their bearer session), it is recorded in the audit log.',
      params: idParam,
      response: meetingRecord,
      errors: ['meeting_not_found', 'invalid_state'],
    },
    // a signed-in admin's end (the console's, with its bearer session) goes in the audit log
    async (ctx) => meetingAnswer(ctx.admin ? await endRecorded(ctx, ctx.apiKey!.orgId, ctx.params.id) : await ctx.app.services.meetings.end(ctx.db, ctx.apiKey!.orgId, ctx.params.id)),
  ),
  route(
    {
      method: 'post',
      path: '/public/meetings/:id/join-links',
      tag: 'Join links',
      auth: 'apiKey',
      scope: ['meetings:write', 'join-links:write'],
      summary: 'Mint a join link for one user.',
      description: 'The token is sealed and stored nowhere; it admits one active member of the organization. Role defaults to PARTICIPANT; a STUDENT gets HOST or COHOST only when asked explicitly by a key with meetings:write.',
      params: idParam,
      body: joinLinkCreate,
      response: joinLinkRecord,
      status: 201,
      errors: ['meeting_not_found', 'user_not_found', 'user_deactivated', 'meeting_ended', 'role_not_allowed'],
    },
    async ({ app, db, apiKey, params, body }) => {
      const data = await app.services.joinLinks.mint(db, apiKey!.orgId, apiKey!.scopes, params.id, body, app.baseUrl);
      return { status: 201, data, json: joinLinkJson(data) };
    },
  ),
];
