import { z } from 'zod';
import { AppError, type ErrorCode } from '../../src/core/errors.ts';
import { planHas, type PlanName } from '../../src/core/plans.ts';
import { externalId } from '../schemas/common.ts';
import { EVENT_TYPES } from '../../src/platform/outbox.ts';
import type { ApiPrincipal } from '../../src/services/api-keys.ts';
import type { App } from '../../src/services/app.ts';
import { toDeliveryRecord, toWebhookRecord, WILDCARD, type CommitStep } from '../../src/services/webhook-endpoints.ts';
import type { AttemptRow } from '../../src/services/webhooks/envelope.ts';
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
import { route, type Ctx, type Reply, type Route, type RouteSpec } from '../route.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { inTx } from '../../src/platform/db/tx.ts';
import { recordAudit, type AuditAction } from '../../src/services/audit-log.ts';
import { auditActorOf } from './audit-log.ts';

/**
 * Spec rule 3: without the plan's `webhooks` feature the admin surface answers 402 on every operation,
 * the API-key surface only on create, update, rotate-secret, test and redeliver, so an organization that
 * lost the feature can still read its endpoints and their logs, and delete them.
 */
function requireWebhooks(plan: PlanName): void {
  if (!planHas(plan, 'webhooks')) {
    throw new AppError('plan_feature_unavailable', {
      message: 'Webhooks are not in this organization\'s plan (they come with pro and enterprise).',
      details: { feature: 'webhooks', plan },
    });
  }
}

/** The caller as the public API sees it on either surface: the API key, or the signed-in admin (whose `:orgId` the pipeline has checked). */
const callerOf = (ctx: { apiKey: ApiPrincipal | null; admin: { api: ApiPrincipal } | null }): ApiPrincipal => ctx.apiKey ?? ctx.admin!.api;

const KEY_PREFIX = '/public/webhooks';
const orgParam = { orgId: z.string().min(1).max(64) };

/**
 * One webhook operation on both of the spec's surfaces, from one route definition: the API-key route as
 * defined (`/public/webhooks...`, with its scope), and its twin for signed-in owners and admins
 * (`/orgs/:orgId/webhooks...`), which runs the same handler with the same idempotency. The key route
 * answers 402 exactly when its definition lists `plan_feature_unavailable`, so the OpenAPI document says
 * of each route what it enforces; the twin always does (rule 3).
 */
function onBothSurfaces<const S extends RouteSpec & { auth: 'apiKey'; path: `${typeof KEY_PREFIX}${string}` }>(
  spec: S,
  handler: Route<S>['handler'],
): { key: Route; admin: Route } {
  const keyGated = spec.errors?.includes('plan_feature_unavailable') ?? false;
  const key = route(spec, (ctx) => {
    if (keyGated) requireWebhooks(ctx.apiKey!.plan);
    return handler(ctx);
  });
  // The twin's params add :orgId to the definition's; the handler reads only the definition's.
  const run = handler as unknown as (ctx: Ctx<unknown, unknown, unknown>) => Promise<Reply> | Reply;
  const { scope: _keysOnly, ...shared } = spec;
  const admin = route(
    {
      ...shared,
      path: `/orgs/:orgId/webhooks${spec.path.slice(KEY_PREFIX.length)}`,
      tag: 'Webhooks (admin)',
      auth: 'admin',
      params: (spec.params ?? z.object({})).extend(orgParam),
      errors: [...new Set<ErrorCode>([...(spec.errors ?? []), 'plan_feature_unavailable'])],
    } as RouteSpec,
    (ctx: Ctx<unknown, unknown, unknown>) => {
      requireWebhooks(ctx.admin!.plan);
      return run(ctx);
    },
  );
  return { key, admin };
}

/**
 * An audit entry for a change to endpoint `id`, by whoever made it (an admin on either surface, or the
 * API key). `db`: the change's transaction; the pool after a change the endpoint's actor committed.
 * Details never hold the secret or the URL's path and query (they may carry a token): its host only.
 */
const audited = (ctx: Ctx<unknown, unknown, unknown>, db: Db, action: AuditAction, id: string, details: Record<string, string | string[] | null> = {}) =>
  recordAudit(db, ctx.app.clock.now(), { orgId: callerOf(ctx).orgId, actor: auditActorOf(ctx), action, target: { type: 'webhook_endpoint', id }, details, requestId: ctx.req.requestId });
const hostOf = (url: string): string => new URL(url).host;

/** The answer of a test or a redelivery: its delivery record as the log has it. */
const deliveryAnswer = (attempt: AttemptRow): Reply => ({ status: 201, data: toDeliveryRecord(attempt) });

/**
 * A test's or a redelivery's steps (claim, then outcome), each committed with the answer it leaves:
 * a retry after a crash gets the answer of the last one, and the event is never sent twice.
 */
const answeredSteps =
  (app: App): CommitStep =>
  (work) =>
    app.services.idempotency.step(work, deliveryAnswer);

const tag = 'Webhooks';
const endpointParams = z.object({ id: externalId.describe('The endpoint id (whe_...).') });
const deliveryParams = z.object({ deliveryId: externalId.describe('The delivery id (whd_...).') });

const operations = [
  onBothSurfaces(
    { method: 'get', path: '/public/webhooks', tag, auth: 'apiKey', scope: 'webhooks:read', summary: 'List webhook endpoints, newest first.', query: webhookListQuery, response: z.array(webhookRecord), list: true },
    async (ctx) => {
      const page = await ctx.app.services.webhookEndpoints.list(ctx.db, callerOf(ctx).orgId, ctx.query);
      const now = ctx.app.clock.now();
      return { data: page.items.map((e) => toWebhookRecord(e, now)), nextCursor: page.nextCursor };
    },
  ),
  onBothSurfaces(
    {
      method: 'post',
      path: '/public/webhooks',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Create a webhook endpoint.',
      description:
        'The URL must be a public https:// address: it is resolved, and refused (validation_failed on `url`) if any address is private, loopback, link-local, CGNAT or cloud metadata. `events` defaults to ["*"]. The endpoint is ACTIVE; its signing secret is in this response only. At most 20 endpoints per organization, disabled ones included.',
      body: webhookCreate,
      response: webhookWithSecret,
      status: 201,
      errors: ['plan_feature_unavailable', 'limit_reached'],
    },
    async (ctx) => {
      const { endpoint, secret } = await inTx(ctx.db, async (tx) => {
        const made = await ctx.app.services.webhookEndpoints.create(tx, callerOf(ctx).orgId, ctx.body);
        await audited(ctx, tx, 'webhook_endpoint.created', made.endpoint.id, { host: hostOf(made.endpoint.url), events: made.endpoint.events });
        return made;
      });
      return { status: 201, data: { ...toWebhookRecord(endpoint, ctx.app.clock.now()), secret } };
    },
  ),
  onBothSurfaces(
    { method: 'get', path: '/public/webhooks/event-types', tag, auth: 'apiKey', scope: 'webhooks:read', summary: 'The event catalog: every type an endpoint may subscribe to.', response: eventCatalog },
    async () => ({ data: { wildcard: WILDCARD, types: [...EVENT_TYPES] } }),
  ),
  onBothSurfaces(
    {
      method: 'get',
      path: '/public/webhooks/deliveries/:deliveryId',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:read',
      summary: 'One delivery attempt, with the event payload.',
      params: deliveryParams,
      response: deliveryDetail,
      errors: ['delivery_not_found'],
    },
    async (ctx) => {
      const { attempt, payload } = await ctx.app.services.webhookEndpoints.delivery(ctx.db, callerOf(ctx).orgId, ctx.params.deliveryId);
      return { data: { ...toDeliveryRecord(attempt), payload } };
    },
  ),
  onBothSurfaces(
    {
      method: 'post',
      path: '/public/webhooks/deliveries/:deliveryId/redeliver',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Send a delivery\'s event again.',
      description:
        'The same event (same id, same body) is signed with the endpoint\'s current secrets and sent once, now, with no retries, whatever the endpoint\'s status; the answer is the new delivery (trigger REDELIVERY). The endpoint\'s failure state is not affected.',
      params: deliveryParams,
      response: deliveryRecord,
      status: 201,
      idempotency: 'claim',
      errors: ['plan_feature_unavailable', 'delivery_not_found', 'webhook_not_found'],
    },
    async (ctx) => deliveryAnswer(await ctx.app.services.webhookEndpoints.redeliver(ctx.db, callerOf(ctx).orgId, ctx.params.deliveryId, answeredSteps(ctx.app))),
  ),
  onBothSurfaces(
    { method: 'get', path: '/public/webhooks/:id', tag, auth: 'apiKey', scope: 'webhooks:read', summary: 'Read a webhook endpoint.', params: endpointParams, response: webhookRecord, errors: ['webhook_not_found'] },
    async (ctx) => ({ data: toWebhookRecord(await ctx.app.services.webhookEndpoints.get(ctx.db, callerOf(ctx).orgId, ctx.params.id), ctx.app.clock.now()) }),
  ),
  onBothSurfaces(
    {
      method: 'patch',
      path: '/public/webhooks/:id',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Change url, description, events or status.',
      description:
        'A new url is checked as on create. `status: ACTIVE` re-enables a disabled endpoint (missed events can then be redelivered from the delivery log), `DISABLED` stops deliveries; asking for the status it already has changes nothing.',
      params: endpointParams,
      body: webhookUpdate,
      response: webhookRecord,
      errors: ['plan_feature_unavailable', 'webhook_not_found', 'actor_unavailable'],
    },
    async (ctx) => {
      const endpoints = ctx.app.services.webhookEndpoints;
      const orgId = callerOf(ctx).orgId;
      const before = await endpoints.get(ctx.db, orgId, ctx.params.id);
      const changes = (e: typeof before) =>
        (['url', 'description', 'events'] as const).filter((f) => (f === 'events' ? e.events.join('\n') !== before.events.join('\n') : e[f] !== before[f]));
      let after: typeof before;
      if (ctx.body.status === undefined) {
        // rows only: the entry commits with the change
        after = await inTx(ctx.db, async (tx) => {
          const e = await endpoints.update(tx, orgId, ctx.params.id, ctx.body);
          const changed = changes(e);
          if (changed.length) await audited(ctx, tx, 'webhook_endpoint.updated', e.id, { changed, ...(changed.includes('url') ? { host: hostOf(e.url) } : {}) });
          return e;
        });
      } else {
        // the status is the endpoint's actor's, committed by it: the entries follow its acknowledgement
        after = await endpoints.update(ctx.db, orgId, ctx.params.id, ctx.body);
        const changed = changes(after);
        if (changed.length) await audited(ctx, ctx.app.sql, 'webhook_endpoint.updated', after.id, { changed, ...(changed.includes('url') ? { host: hostOf(after.url) } : {}) });
        if (after.status !== before.status) await audited(ctx, ctx.app.sql, after.status === 'ACTIVE' ? 'webhook_endpoint.enabled' : 'webhook_endpoint.disabled', after.id, { previousStatus: before.status });
      }
      return { data: toWebhookRecord(after, ctx.app.clock.now()) };
    },
  ),
  onBothSurfaces(
    {
      method: 'delete',
      path: '/public/webhooks/:id',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Delete a webhook endpoint.',
      description: 'Its pending deliveries and its delivery log go with it.',
      params: endpointParams,
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
      errors: ['webhook_not_found', 'actor_unavailable'],
    },
    async (ctx) => {
      const gone = await ctx.app.services.webhookEndpoints.get(ctx.db, callerOf(ctx).orgId, ctx.params.id);
      await ctx.app.services.webhookEndpoints.remove(ctx.db, callerOf(ctx).orgId, ctx.params.id);
      // deleted by the endpoint's actor: the entry follows its acknowledgement
      await audited(ctx, ctx.app.sql, 'webhook_endpoint.deleted', gone.id, { host: hostOf(gone.url) });
      return { data: { id: ctx.params.id, deleted: true } };
    },
  ),
  onBothSurfaces(
    {
      method: 'post',
      path: '/public/webhooks/:id/rotate-secret',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Replace the signing secret.',
      description:
        'Answers the endpoint with its new secret (shown only here). For 24 hours every delivery carries two signatures, `v1=<new>,v1=<old>`; then only the new one. Rotating again within the 24 hours keeps only the secret just replaced as the old one.',
      params: endpointParams,
      response: webhookWithSecret,
      errors: ['plan_feature_unavailable', 'webhook_not_found'],
    },
    async (ctx) => {
      const { endpoint, secret } = await inTx(ctx.db, async (tx) => {
        const rotated = await ctx.app.services.webhookEndpoints.rotateSecret(tx, callerOf(ctx).orgId, ctx.params.id);
        await audited(ctx, tx, 'webhook_endpoint.secret_rotated', rotated.endpoint.id, { previousSecretExpiresAt: rotated.endpoint.previousSecretExpiresAt?.toISOString() ?? null });
        return rotated;
      });
      return { data: { ...toWebhookRecord(endpoint, ctx.app.clock.now()), secret } };
    },
  ),
  onBothSurfaces(
    {
      method: 'post',
      path: '/public/webhooks/:id/test',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:write',
      summary: 'Send a webhook.test event.',
      description:
        'Sent once, now, with no retries, even to a disabled endpoint; the answer is its delivery record (trigger TEST). Does not affect the endpoint\'s failure state. At most 10 per endpoint per minute.',
      params: endpointParams,
      response: deliveryRecord,
      status: 201,
      idempotency: 'claim',
      errors: ['plan_feature_unavailable', 'webhook_not_found', 'rate_limited'],
    },
    async (ctx) => deliveryAnswer(await ctx.app.services.webhookEndpoints.sendTest(ctx.db, callerOf(ctx).orgId, ctx.params.id, answeredSteps(ctx.app))),
  ),
  onBothSurfaces(
    {
      method: 'get',
      path: '/public/webhooks/:id/deliveries',
      tag,
      auth: 'apiKey',
      scope: 'webhooks:read',
      summary: 'An endpoint\'s delivery log, newest first.',
      description: 'One entry per attempt (and per event that found the endpoint disabled: SKIPPED), kept 30 days.',
      params: endpointParams,
      query: deliveryListQuery,
      response: z.array(deliveryRecord),
      list: true,
      errors: ['webhook_not_found'],
    },
    async (ctx) => {
      const page = await ctx.app.services.webhookEndpoints.deliveries(ctx.db, callerOf(ctx).orgId, ctx.params.id, ctx.query);
      return { data: page.items.map(toDeliveryRecord), nextCursor: page.nextCursor };
    },
  ),
];

const eventsRoute = route(
  {
    method: 'get',
    path: '/public/events',
    tag,
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

export const webhookRoutes: Route[] = [...operations.map((o) => o.key), eventsRoute, ...operations.map((o) => o.admin)];
