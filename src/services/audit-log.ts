import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { ulid } from '../platform/ids.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';

/**
 * Who changed something: a signed-in owner or admin (their id, and their email as it was then), the
 * operator's CLI, or an API key (changes made on the API-key surface, such as a webhook endpoint).
 */
export type AuditActor = { type: 'admin'; id: string; email: string } | { type: 'operator' } | { type: 'api_key'; id: string };

export const OPERATOR: AuditActor = Object.freeze({ type: 'operator' });

/** Every action the log records (docs/console-api.md). */
export const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.rolled',
  'api_key.revoked',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.disabled',
  'webhook_endpoint.enabled',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'organization.updated',
  'admin.added',
  'admin.invited',
  'admin.invitation_revoked',
  'admin.joined',
  'admin.disabled',
  'admin.enabled',
  'admin.role_changed',
  'meeting.ended',
  'recording_notes.edited',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditTargetType = 'api_key' | 'webhook_endpoint' | 'organization' | 'admin' | 'meeting' | 'recording';

/** A detail value: small, plain, never a secret. */
type Detail = string | number | boolean | null | readonly string[];

export interface AuditEntryInput {
  orgId: string;
  actor: AuditActor;
  action: AuditAction;
  target: { type: AuditTargetType; id: string | null };
  details?: Record<string, Detail>;
  /** The request that made the change, to find its log lines. */
  requestId?: string | null;
}

/** An entry as `GET /orgs/:orgId/audit-log` answers it. */
export interface AuditEntry {
  id: string;
  at: string;
  actor: { type: AuditActor['type']; id: string | null; email: string | null };
  action: string;
  target: { type: string; id: string | null };
  details: Record<string, unknown>;
  requestId: string | null;
}

interface AuditRow {
  id: string;
  at: Date;
  actorType: AuditActor['type'];
  actorId: string | null;
  actorEmail: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  details: Record<string, unknown>;
  requestId: string | null;
}

export interface AuditQuery extends PageQuery {
  /** An action (`api_key.rolled`), or a family of them (`api_key.*`). */
  action?: string | undefined;
  /** An admin's id, an API key's id, or `operator`. */
  actor?: string | undefined;
}

/**
 * Writes one entry with `db`, which should be the transaction of the change it records, so the entry and
 * the change commit together or not at all. Ids are ULIDs of `at`, so the log sorts by time.
 */
export async function recordAudit(db: Db, at: number, e: AuditEntryInput): Promise<void> {
  const actorId = e.actor.type === 'operator' ? null : e.actor.id;
  const email = e.actor.type === 'admin' ? e.actor.email : null;
  await db`insert into audit_log (id, org_id, at, actor_type, actor_id, actor_email, action, target_type, target_id, details, request_id)
    values (${`aud_${ulid(at)}`}, ${e.orgId}, ${iso(at)}, ${e.actor.type}, ${actorId}, ${email}, ${e.action}, ${e.target.type}, ${e.target.id},
      ${db.json((e.details ?? {}) as never)}, ${e.requestId ?? null})`;
}

const toEntry = (r: AuditRow): AuditEntry => ({
  id: r.id,
  at: r.at.toISOString(),
  actor: { type: r.actorType, id: r.actorId, email: r.actorEmail },
  action: r.action,
  target: { type: r.targetType, id: r.targetId },
  details: r.details,
  requestId: r.requestId,
});

/** An organization's audit log, newest first, `limit` at a time, by action (or family) and by actor. */
export async function listAudit(db: Db, orgId: string, q: AuditQuery): Promise<{ items: AuditEntry[]; nextCursor: string | null }> {
  const after = decodeCursor(q.cursor, 'id');
  const family = q.action?.endsWith('.*') ? q.action.slice(0, -1) : null;
  const rows = await db<AuditRow[]>`select id, at, actor_type, actor_id, actor_email, action, target_type, target_id, details, request_id
    from audit_log where org_id = ${orgId}
    ${after ? db`and id < ${after[0]!}` : db``}
    ${q.action === undefined ? db`` : family ? db`and starts_with(action, ${family})` : db`and action = ${q.action}`}
    ${q.actor === undefined ? db`` : q.actor === 'operator' ? db`and actor_type = 'operator'` : db`and actor_id = ${q.actor}`}
    order by id desc limit ${q.limit + 1}`;
  const items = rows.slice(0, q.limit).map(toEntry);
  return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
}

/** For the admins' invitations (the console's settings): an owner invited `admin`, in the invitation's transaction. */
export const auditAdminInvited = (db: Db, at: number, e: { orgId: string; actor: AuditActor; adminId: string | null; email: string; role: string; requestId?: string | null }) =>
  recordAudit(db, at, { orgId: e.orgId, actor: e.actor, action: 'admin.invited', target: { type: 'admin', id: e.adminId }, details: { email: e.email, role: e.role }, requestId: e.requestId ?? null });

/** An owner (or the operator) disabled an owner or admin, in the transaction that disabled them. */
export const auditAdminDisabled = (db: Db, at: number, e: { orgId: string; actor: AuditActor; adminId: string; email: string; requestId?: string | null }) =>
  recordAudit(db, at, { orgId: e.orgId, actor: e.actor, action: 'admin.disabled', target: { type: 'admin', id: e.adminId }, details: { email: e.email }, requestId: e.requestId ?? null });
