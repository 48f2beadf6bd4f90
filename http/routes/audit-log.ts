import { z } from 'zod';
import { AUDIT_ACTIONS, listAudit, type AuditActor, type AuditEntry, type AuditQuery } from '../../src/services/audit-log.ts';
import type { AdminPrincipal } from '../../src/services/admins.ts';
import type { ApiPrincipal } from '../../src/services/api-keys.ts';
import { pageQuery, schemaOf } from '../schemas/common.ts';
import { route } from '../route.ts';

/**
 * Who a request's change is recorded as: the signed-in owner or admin (on either surface), or the API key
 * that made it on the API-key surface.
 */
export const auditActorOf = (ctx: { admin: AdminPrincipal | null; apiKey: ApiPrincipal | null }): AuditActor =>
  ctx.admin ? { type: 'admin', id: ctx.admin.adminId, email: ctx.admin.email } : { type: 'api_key', id: ctx.apiKey!.keyId };

const actionFilter = z
  .string()
  .max(100)
  .refine((v) => (AUDIT_ACTIONS as readonly string[]).includes(v) || AUDIT_ACTIONS.some((a) => v === `${a.slice(0, a.indexOf('.'))}.*`), 'must be an action of the audit log or a family of them (`api_key.*`)')
  .describe(`One action (${AUDIT_ACTIONS.map((a) => `\`${a}\``).join(', ')}) or a family of them: \`api_key.*\`, \`webhook_endpoint.*\`, \`admin.*\`.`);

const auditQuery = schemaOf<AuditQuery & { limit: number }>()(
  z.strictObject({
    ...pageQuery,
    action: actionFilter.optional(),
    actor: z.string().min(1).max(64).optional().describe('An owner\'s or admin\'s id (`adm_…`), an API key\'s id (`key_…`), or `operator` for the CLI.'),
  }),
);

const auditEntry = schemaOf<AuditEntry>()(
  z.object({
    id: z.string(),
    at: z.string(),
    actor: z.object({
      type: z.enum(['admin', 'operator', 'api_key']).describe('An owner or admin, the operator\'s CLI, or an API key (changes on the API-key surface).'),
      id: z.string().nullable().describe('The admin\'s or the key\'s id; null for the operator.'),
      email: z.string().nullable().describe('The admin\'s email when the change was made.'),
    }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string().nullable() }),
    details: z.record(z.string(), z.unknown()).describe('A few facts about the change (names, prefixes, which fields changed); never a key, a secret or a webhook URL\'s path.'),
    requestId: z.string().nullable().describe('The request that made the change (its X-Request-Id), to find it in the logs.'),
  }),
);

export const auditLogRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/audit-log',
      tag: 'Organization (admin)',
      auth: 'admin',
      summary: 'Who created, rolled or revoked a key, changed a webhook endpoint or a setting, added or disabled an admin, ended a room: newest first.',
      description:
        'Filters: `action` (one action, or a family such as `api_key.*`) and `actor` (an admin\'s id, an API key\'s id, or `operator`). Entries are written in the transaction of the change they record, or, for a change an actor commits (ending a room, enabling, disabling or deleting a webhook endpoint), as soon as it acknowledged it (docs/console-api.md).',
      params: z.object({ orgId: z.string().min(1).max(64) }),
      query: auditQuery,
      response: z.array(auditEntry),
      list: true,
    },
    async ({ db, params, query }) => {
      const page = await listAudit(db, params.orgId, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
];
