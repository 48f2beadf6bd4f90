import { z } from 'zod';
import { AppError, type ErrorCode } from '../../src/core/errors.ts';
import { planHas, type PlanName } from '../../src/core/plans.ts';
import { externalId } from '../schemas/common.ts';
import { EVENT_TYPES } from '../../src/platform/outbox.ts';
import { toDeliveryRecord, toWebhookRecord, WILDCARD } from '../../src/services/webhook-endpoints.ts';
import {
  deliveryDetail,
  deliveryListQuery,
  deliveryRecord,
  eventCatalog,
  eventEnvelope,
  eventFeedQuery,
  webhookCreate,
  webhookListQuery,
  webhookRecord,
  webhookUpdate,
  webhookWithSecret,
} from '../schemas/webhooks.ts';
import type { App } from '../../src/services/app.ts';
import type { Db } from '../../src/platform/db/index.ts';
import type { Logger } from '../../src/platform/logger.ts';
import { route, type Ctx, type Method, type Reply, type Route, type RouteSpec } from '../route.ts';

type Infer<T> = T extends z.ZodType ? z.output<T> : undefined;

/** What an operation's handler gets, whichever surface it was called on. */
interface OpCtx<P, Q, B> {
  app: App;
  db: Db;
  log: Logger;
  /** The caller's organization: the API key's, or the signed-in admin's (already checked against `:orgId`). */
  orgId: string;
  params: P;
  query: Q;
  body: B;
}

/** One webhook management operation, served on both surfaces from this one definition. */
interface OpSpec {
  method: Method;
  /** The path after `.../webhooks`. */
  sub: string;
  /** `webhooks:write` on the API-key surface, else `webhooks:read`. */
  write: boolean;
  /**
   * Spec rule 3: without the plan's `webhooks` feature, the API-key surface answers 402 only on these
   * (create, update, rotate-secret, test, redeliver); the admin surface answers 402 on every operation.
   */
  keyGated: boolean;
  summary: string;
  description?: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  response: z.ZodType;
  status?: number;
  list?: boolean;
  errors?: readonly ErrorCode[];
  idempotency?: RouteSpec['idempotency'];
}

interface Op {
  spec: OpSpec;
  run: (ctx: OpCtx<any, any, any>) => Promise<Reply>;
}

function op<const S extends OpSpec>(spec: S, run: (ctx: OpCtx<Infer<S['params']>, Infer<S['query']>, Infer<S['body']>>) => Promise<Reply>): Op {
  return { spec, run: run as Op['run'] };
}

function requireWebhooks(plan: PlanName): void {
  if (!planHas(plan, 'webhooks')) {
    throw new AppError('plan_feature_unavailable', {
      message: 'Webhooks are not in this organization\'s plan (they come with pro and enterprise).',
      details: { feature: 'webhooks', plan },
    });
  }
}

const endpointParams = z.object({ id: externalId.describe('The endpoint id (whe_...).') });
const deliveryParams = z.object({ deliveryId: externalId.describe('The delivery id (whd_...).') });
const orgParam = { orgId: z.string().min(1).max(64) };

/** The operation table: both surfaces are generated from it, so they cannot drift apart. */
const ops: Op[] = [
  op(
    { method: 'get', sub: '', write: false, keyGated: false, summary: 'List webhook endpoints, newest first.', query: webhookListQuery, response: z.array(webhookRecord), list: true },
    async ({ app, db, orgId, query }) => {
      const page = await app.services.webhookEndpoints.list(db, orgId, query);
      const now = app.clock.now();
      return { data: page.items.map((e) => toWebhookRecord(e, now)), nextCursor: page.nextCursor };
    },
  ),
  op(
    {
      method: 'post',
      sub: '',
      write: true,
      keyGated: true,
      summary: 'Create a webhook endpoint.',
      description:
        'The URL must be a public https:// address: it is resolved, and refused (validation_failed on `url`) if any address is private, loopback, link-local, CGNAT or cloud metadata. `events` defaults to ["*"]. The endpoint is ACTIVE; its signing secret is in this response only. At most 20 endpoints per organization, disabled ones included.',
      body: webhookCreate,
      response: webhookWithSecret,
      status: 201,
      errors: ['plan_feature_unavailable', 'limit_reached'],
    },
    async ({ app, db, orgId, body }) => {
      const { endpoint, secret } = await app.services.webhookEndpoints.create(db, orgId, body);
      return { status: 201, data: { ...toWebhookRecord(endpoint, app.clock.now()), secret } };
    },
  ),
  op(
    { method: 'get', sub: '/event-types', write: false, keyGated: false, summary: 'The event catalog: every type an endpoint may subscribe to.', response: eventCatalog },
    async () => ({ data: { wildcard: WILDCARD, types: [...EVENT_TYPES] } }),
  ),
  op(
    {
      method: 'get',
      sub: '/deliveries/:deliveryId',
      write: false,
      keyGated: false,
      summary: 'One delivery attempt, with the event payload.',
      params: deliveryParams,
      response: deliveryDetail,
      errors: ['delivery_not_found'],
    },
    async ({ app, db, orgId, params }) => {
      const { attempt, payload } = await app.services.webhookEndpoints.delivery(db, orgId, params.deliveryId);
      return { data: { ...toDeliveryRecord(attempt), payload } };
    },
  ),
  op(
    {
      method: 'post',
      sub: '/deliveries/:deliveryId/redeliver',
      write: true,
      keyGated: true,
      summary: 'Send a delivery\'s event again.',
      description:
        'The same event (same id, same body) is signed with the endpoint\'s current secrets and sent once, now, with no retries, whatever the endpoint\'s status; the answer is the new delivery (trigger REDELIVERY). The endpoint\'s failure state is not affected.',
      params: deliveryParams,
      response: deliveryRecord,
      status: 201,
      idempotency: 'after',
      errors: ['plan_feature_unavailable', 'delivery_not_found', 'webhook_not_found'],
    },
    async ({ app, db, orgId, params }) => ({ status: 201, data: toDeliveryRecord(await app.services.webhookEndpoints.redeliver(db, orgId, params.deliveryId)) }),
  ),
  op(
    { method: 'get', sub: '/:id', write: false, keyGated: false, summary: 'Read a webhook endpoint.', params: endpointParams, response: webhookRecord, errors: ['webhook_not_found'] },
    async ({ app, db, orgId, params }) => ({ data: toWebhookRecord(await app.services.webhookEndpoints.get(db, orgId, params.id), app.clock.now()) }),
  ),
  op(
    {
      method: 'patch',
      sub: '/:id',
      write: true,
      keyGated: true,
      summary: 'Change url, description, events or status.',
      description:
        'A new url is checked as on create. `status: ACTIVE` re-enables a disabled endpoint (missed events can then be redelivered from the delivery log), `DISABLED` stops deliveries; asking for the status it already has changes nothing.',
      params: endpointParams,
      body: webhookUpdate,
      response: webhookRecord,
      errors: ['plan_feature_unavailable', 'webhook_not_found', 'actor_unavailable'],
    },
    async ({ app, db, orgId, params, body }) => ({ data: toWebhookRecord(await app.services.webhookEndpoints.update(db, orgId, params.id, body), app.clock.now()) }),
  ),
  op(
    {
      method: 'delete',
      sub: '/:id',
      write: true,
      keyGated: false,
      summary: 'Delete a webhook endpoint.',
      description: 'Its pending deliveries and its delivery log go with it.',
      params: endpointParams,
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
      errors: ['webhook_not_found', 'actor_unavailable'],
    },
    async ({ app, db, orgId, params }) => {
      await app.services.webhookEndpoints.remove(db, orgId, params.id);
      return { data: { id: params.id, deleted: true } };
    },
  ),
  op(
    {
      method: 'post',
      sub: '/:id/rotate-secret',
      write: true,
      keyGated: true,
      summary: 'Replace the signing secret.',
      description:
        'Answers the endpoint with its new secret (shown only here). For 24 hours every delivery carries two signatures, `v1=<new>,v1=<old>`; then only the new one. Rotating again within the 24 hours keeps only the secret just replaced as the old one.',
      params: endpointParams,
      response: webhookWithSecret,
      errors: ['plan_feature_unavailable', 'webhook_not_found'],
    },
    async ({ app, db, orgId, params }) => {
      const { endpoint, secret } = await app.services.webhookEndpoints.rotateSecret(db, orgId, params.id);
      return { data: { ...toWebhookRecord(endpoint, app.clock.now()), secret } };
    },
  ),
  op(
    {
      method: 'post',
      sub: '/:id/test',
      write: true,
      keyGated: true,
      summary: 'Send a webhook.test event.',
      description:
        'Sent once, now, with no retries, even to a disabled endpoint; the answer is its delivery record (trigger TEST). Does not affect the endpoint\'s failure state. At most 10 per endpoint per minute.',
      params: endpointParams,
      response: deliveryRecord,
      status: 201,
      idempotency: 'after',
      errors: ['plan_feature_unavailable', 'webhook_not_found', 'rate_limited'],
    },
    async ({ app, db, orgId, params }) => ({ status: 201, data: toDeliveryRecord(await app.services.webhookEndpoints.sendTest(db, orgId, params.id)) }),
  ),
  op(
    {
      method: 'get',
      sub: '/:id/deliveries',
      write: false,
      keyGated: false,
      summary: 'An endpoint\'s delivery log, newest first.',
      description: 'One entry per attempt (and per event that found the endpoint disabled: SKIPPED), kept 30 days.',
      params: endpointParams,
      query: deliveryListQuery,
      response: z.array(deliveryRecord),
      list: true,
      errors: ['webhook_not_found'],
    },
    async ({ app, db, orgId, params, query }) => {
      const page = await app.services.webhookEndpoints.deliveries(db, orgId, params.id, query);
      return { data: page.items.map(toDeliveryRecord), nextCursor: page.nextCursor };
    },
  ),
];

/** The API-key surface, `/public/webhooks...`. */
function keyRoute({ spec, run }: Op): Route {
  const errors: ErrorCode[] = [...(spec.errors ?? [])].filter((c) => spec.keyGated || c !== 'plan_feature_unavailable');
  return route(
    {
      method: spec.method,
      path: `/public/webhooks${spec.sub}`,
      tag: 'Webhooks',
      auth: 'apiKey',
      scope: spec.write ? 'webhooks:write' : 'webhooks:read',
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      ...(spec.params ? { params: spec.params } : {}),
      ...(spec.query ? { query: spec.query } : {}),
      ...(spec.body ? { body: spec.body } : {}),
      response: spec.response,
      ...(spec.status ? { status: spec.status } : {}),
      ...(spec.list ? { list: true } : {}),
      ...(spec.idempotency ? { idempotency: spec.idempotency } : {}),
      errors,
    } as RouteSpec,
    (ctx: Ctx<unknown, unknown, unknown>) => {
      if (spec.keyGated) requireWebhooks(ctx.apiKey!.plan);
      return run({ app: ctx.app, db: ctx.db, log: ctx.log, orgId: ctx.apiKey!.orgId, params: ctx.params, query: ctx.query, body: ctx.body });
    },
  );
}

/** The signed-in admin surface, `/orgs/:orgId/webhooks...`: every operation needs the plan feature. */
function adminRoute({ spec, run }: Op): Route {
  const errors: ErrorCode[] = [...new Set<ErrorCode>([...(spec.errors ?? []), 'plan_feature_unavailable'])];
  return route(
    {
      method: spec.method,
      path: `/orgs/:orgId/webhooks${spec.sub}`,
      tag: 'Webhooks (admin)',
      auth: 'admin',
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      params: (spec.params ?? z.object({})).extend(orgParam),
      ...(spec.query ? { query: spec.query } : {}),
      ...(spec.body ? { body: spec.body } : {}),
      response: spec.response,
      ...(spec.status ? { status: spec.status } : {}),
      ...(spec.list ? { list: true } : {}),
      errors,
    } as RouteSpec,
    (ctx: Ctx<unknown, unknown, unknown>) => {
      requireWebhooks(ctx.admin!.plan);
      return run({ app: ctx.app, db: ctx.db, log: ctx.log, orgId: ctx.admin!.orgId, params: ctx.params, query: ctx.query, body: ctx.body });
    },
  );
}

const eventsRoute = route(
  {
    method: 'get',
    path: '/public/events',
    tag: 'Webhooks',
    auth: 'apiKey',
    scope: 'webhooks:read',
    summary: 'The organization\'s events of the last 30 days, oldest first.',
    description:
      'Each item is the event envelope exactly as delivered. `after` takes an event id (the nextCursor, which is the last event\'s id); test events are left out. Needs the plan\'s webhooks feature.',
    query: eventFeedQuery,
    response: z.array(eventEnvelope),
    list: true,
    errors: ['plan_feature_unavailable'],
  },
  async ({ app, db, apiKey, query }) => {
    requireWebhooks(apiKey!.plan);
    const page = await app.services.webhookEndpoints.events(db, apiKey!.orgId, query);
    return { data: page.items, nextCursor: page.nextCursor };
  },
);

export const webhookRoutes: Route[] = [...ops.map(keyRoute), eventsRoute, ...ops.map(adminRoute)];
