import { iso } from '../../core/clock.ts';
import type { Db } from '../../platform/db/index.ts';
import { AppError } from '../../core/errors.ts';
import { decodeCursor, encodeCursor, type PageQuery } from '../common.ts';

/** A signed-in owner's or admin's own in-app notifications (written by notify.ts). */

/** A notification as the API shows it; `data` depends on `kind`. */
export interface NotificationRecord {
  id: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: string;
  readAt: string | null;
}

export interface NotificationListQuery extends PageQuery {
  /** Only notifications not yet marked read. */
  unread: boolean;
}

interface NotificationRow {
  id: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: Date;
  readAt: Date | null;
}

const toRecord = (r: NotificationRow): NotificationRecord => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  body: r.body,
  data: r.data,
  createdAt: r.createdAt.toISOString(),
  readAt: r.readAt ? r.readAt.toISOString() : null,
});

/** The admin's notifications in the organization, newest first. */
export async function listNotifications(
  db: Db,
  who: { orgId: string; adminId: string },
  q: NotificationListQuery,
): Promise<{ items: NotificationRecord[]; nextCursor: string | null }> {
  const after = decodeCursor(q.cursor, 'id');
  const rows = await db<NotificationRow[]>`select id, kind, title, body, data, created_at, read_at from notifications
    where admin_id = ${who.adminId} and org_id = ${who.orgId}
    ${q.unread ? db`and read_at is null` : db``}
    ${after ? db`and id < ${after[0]!}` : db``}
    order by id desc limit ${q.limit + 1}`;
  const items = rows.slice(0, q.limit);
  return { items: items.map(toRecord), nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
}

/**
 * Marks one of the admin's notifications read (the first time counts: marking again keeps `readAt`).
 * Another admin's notification answers `not_found`, as an unknown id does.
 */
export async function markNotificationRead(db: Db, who: { orgId: string; adminId: string }, id: string, at: number): Promise<NotificationRecord> {
  const [row] = await db<NotificationRow[]>`update notifications set read_at = coalesce(read_at, ${iso(at)})
    where id = ${id} and admin_id = ${who.adminId} and org_id = ${who.orgId}
    returning id, kind, title, body, data, created_at, read_at`;
  if (!row) throw new AppError('not_found', { message: 'No notification with this id for the signed-in admin.', details: { id } });
  return toRecord(row);
}
