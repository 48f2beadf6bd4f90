import { z } from 'zod';
import { SCOPES } from '../../src/core/scopes.ts';
import { MAX_ACTIVE_KEYS, MAX_ROLL_OVERLAP_SECONDS, toApiKeyRecord, type ApiKeyRecord } from '../../src/services/api-keys.ts';
import { externalId, pageQuery, schemaOf } from '../schemas/common.ts';
import { route } from '../route.ts';
import { auditActorOf } from './audit-log.ts';

const tag = 'API keys (admin)';
const orgParams = z.object({ orgId: z.string().min(1).max(64) });
const keyParams = orgParams.extend({ id: externalId.describe('The key\'s id (key_...).') });

const keyRecord = schemaOf<ApiKeyRecord>()(
  z.object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('The key\'s first 12 characters (`aula_sk_` and 4 more), to tell keys apart; never the key.'),
    scopes: z.array(z.enum(SCOPES)),
    status: z.enum(['ACTIVE', 'EXPIRING', 'EXPIRED', 'REVOKED']).describe('EXPIRING: rolled, still accepted until expiresAt.'),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable().describe('When the key was last used, to about 10 seconds; each node writes a key\'s last use at most once a minute, so a busy key\'s may be up to a minute behind.'),
    revokedAt: z.string().nullable(),
    expiresAt: z.string().nullable().describe('Set when the key was rolled: the end of its overlap.'),
    rolledFrom: z.string().nullable().describe('The key this one replaced by a roll.'),
    replacedBy: z.string().nullable().describe('The key that replaced this one by a roll.'),
  }),
);
const keyWithSecret = keyRecord.extend({ key: z.string().describe('The key itself, shown only in this answer: store it now.') });

const scopes = z
  .array(z.enum(SCOPES))
  .min(1)
  .max(SCOPES.length)
  .refine((s) => new Set(s).size === s.length, 'must not repeat a scope')
  .describe('What the key may do; a `:write` scope implies its `:read`.');

export const apiKeyRoutes = [
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/api-keys',
      tag,
      auth: 'admin',
      summary: 'Create an API key; the key is in this answer only.',
      description: `Owners and admins. The organization holds at most ${MAX_ACTIVE_KEYS} keys that still work (limit_reached beyond; revoked and expired ones do not count). Recorded in the audit log (api_key.created).`,
      params: orgParams,
      body: z.strictObject({ name: z.string().trim().min(1).max(100), scopes }),
      response: keyWithSecret,
      status: 201,
      errors: ['limit_reached'],
    },
    async ({ app, db, req, admin, apiKey, params, body }) => {
      const k = await app.services.apiKeys.create(db, { orgId: params.orgId, name: body.name, scopes: body.scopes }, { actor: auditActorOf({ admin, apiKey }), maxActive: MAX_ACTIVE_KEYS, requestId: req.requestId });
      return { status: 201, data: { ...k.record, key: k.key } };
    },
  ),
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/api-keys',
      tag,
      auth: 'admin',
      summary: 'The organization\'s API keys, newest first, revoked and expired ones included.',
      params: orgParams,
      query: z.strictObject({ ...pageQuery }),
      response: z.array(keyRecord),
      list: true,
    },
    async ({ app, db, params, query }) => {
      const page = await app.services.apiKeys.list(db, params.orgId, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'delete',
      path: '/orgs/:orgId/api-keys/:id',
      tag,
      auth: 'admin',
      summary: 'Revoke an API key: refused at once on every node.',
      description: 'Answers the key as it now is. Revoking a revoked key answers it unchanged. Recorded in the audit log (api_key.revoked).',
      params: keyParams,
      response: keyRecord,
      errors: ['api_key_not_found'],
    },
    async ({ app, db, req, admin, apiKey, params }) => {
      const keys = app.services.apiKeys;
      await keys.get(db, params.orgId, params.id);
      await keys.revoke(db, params.id, { orgId: params.orgId, actor: auditActorOf({ admin, apiKey }), requestId: req.requestId });
      return { data: toApiKeyRecord(await keys.get(db, params.orgId, params.id), app.clock.now()) };
    },
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/api-keys/:id/roll',
      tag,
      auth: 'admin',
      summary: 'Roll an API key: a new key with the same name and scopes; the old one works until the overlap ends.',
      description: `\`expiresInSeconds\`: how long the old key keeps working, 0 (it stops now) to ${MAX_ROLL_OVERLAP_SECONDS} (7 days), as Stripe's dashboard offers. Every node refuses the old key from then on (api_key_expired). A revoked key, or one already rolled, answers invalid_state. The answer is the new key, with the key itself (shown only here), and \`previous\`, the old one with its expiresAt. Recorded in the audit log (api_key.rolled).`,
      params: keyParams,
      body: z.strictObject({ expiresInSeconds: z.number().int().min(0).max(MAX_ROLL_OVERLAP_SECONDS) }),
      response: keyWithSecret.extend({ previous: keyRecord }),
      status: 201,
      errors: ['api_key_not_found', 'invalid_state'],
    },
    async ({ app, db, req, admin, apiKey, params, body }) => {
      const r = await app.services.apiKeys.roll(db, params.orgId, params.id, body.expiresInSeconds, { actor: auditActorOf({ admin, apiKey }), requestId: req.requestId });
      return { status: 201, data: { ...r.record, key: r.key, previous: r.previous } };
    },
  ),
];
