import { z } from 'zod';
import { toClassRecord } from '../../src/services/classes.ts';
import { classInput, classListQuery, classRecord } from '../schemas/classes.ts';
import { idParam } from '../schemas/common.ts';
import { route } from '../route.ts';

const tag = 'Classes';

export const classRoutes = [
  route(
    {
      method: 'post',
      path: '/public/classes',
      tag,
      auth: 'apiKey',
      scope: 'classes:write',
      summary: 'Create or update an academic class by externalId.',
      description: 'Emits class.created (201) or, when something changed, class.updated (200).',
      body: classInput,
      response: classRecord,
      status: 201,
    },
    async ({ app, db, apiKey, body }) => {
      const { cls, created } = await app.services.classes.upsert(db, apiKey!.orgId, body);
      return { status: created ? 201 : 200, data: toClassRecord(cls) };
    },
  ),
  route(
    { method: 'get', path: '/public/classes', tag, auth: 'apiKey', scope: 'classes:read', summary: 'List classes, newest first.', query: classListQuery, response: z.array(classRecord), list: true },
    async ({ app, db, apiKey, query }) => {
      const page = await app.services.classes.list(db, apiKey!.orgId, query);
      return { data: page.items.map(toClassRecord), nextCursor: page.nextCursor };
    },
  ),
  route(
    { method: 'get', path: '/public/classes/:id', tag, auth: 'apiKey', scope: 'classes:read', summary: 'Read a class by service id or externalId.', params: idParam, response: classRecord, errors: ['class_not_found'] },
    async ({ app, db, apiKey, params }) => ({ data: toClassRecord(await app.services.classes.get(db, apiKey!.orgId, params.id)) }),
  ),
];
