import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';

/** The delivery log, delivered messages and the events feed are kept this long (spec: 30 days). */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 60 * 60_000;
/**
 * The audit log is kept this long: a school's yearly review of who changed what (keys, webhooks,
 * settings, admins) finds the whole year, with a month's margin (docs/console-api.md).
 */
export const AUDIT_RETENTION_MS = 400 * 24 * 60 * 60_000;
/** Rows deleted per table per run, so one run never holds its transaction for long. */
const BATCH = 10_000;

export interface PurgeCounts {
  attempts: number;
  messages: number;
  events: number;
  idempotencyKeys: number;
  adminSessions: number;
  emails: number;
  auditEntries: number;
}

/**
 * Deletes what is past its retention at `at`: delivery log rows and finished messages older than 30
 * days, events older than 30 days (dispatched ones only), expired idempotency records and admin
 * sessions, sent or abandoned emails older than 30 days, and audit log entries older than 400 days. Runs in the maintenance actor's
 * transaction (actors/maintenance), once per hour, on whichever node owns it.
 */
export async function purgeExpired(db: Db, at: number): Promise<PurgeCounts> {
  const before = iso(at - WEBHOOK_RETENTION_MS);
  const now = iso(at);
  const count = async (q: PromiseLike<readonly unknown[]>) => (await q).length;
  return {
    attempts: await count(db`delete from webhook_attempts where id in (
      select id from webhook_attempts where created_at < ${before} limit ${BATCH}) returning 1`),
    messages: await count(db`delete from webhook_messages where id in (
      select id from webhook_messages where created_at < ${before} and status <> 'PENDING' limit ${BATCH}) returning 1`),
    events: await count(db`delete from outbox where id in (
      select o.id from outbox o where o.created_at < ${before} and o.dispatched_at is not null
        and not exists (select 1 from webhook_messages m where m.event_id = o.id and m.status = 'PENDING')
      limit ${BATCH}) returning 1`),
    idempotencyKeys: await count(db`delete from idempotency_keys where (scope, key) in (
      select scope, key from idempotency_keys where expires_at <= ${now} limit ${BATCH}) returning 1`),
    adminSessions: await count(db`delete from admin_sessions where id in (
      select id from admin_sessions where expires_at <= ${now} limit ${BATCH}) returning 1`),
    emails: await count(db`delete from email_outbox where id in (
      select id from email_outbox where created_at < ${before} and (sent_at is not null or failed_at is not null) limit ${BATCH}) returning 1`),
    auditEntries: await count(db`delete from audit_log where id in (
      select id from audit_log where at < ${iso(at - AUDIT_RETENTION_MS)} limit ${BATCH}) returning 1`),
  };
}
