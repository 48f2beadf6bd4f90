import { iso, type Clock } from '../core/clock.ts';
import { CHAT_LIMITS, type ChatMessageView } from '../core/chat.ts';
import type { RoomRole } from '../core/room-access.ts';
import { AppError } from '../core/errors.ts';
import type { UserRole } from '../core/domain.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { newId } from '../platform/ids.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';
import type { Meetings } from './meetings.ts';

/** A room participant's id is its meeting session's (http/ws/gateway.ts participantIdOf): the one maps to the other. */
const sessionOf = (participantId: string) => `ses_${participantId.slice(4)}`;
const participantOf = (sessionId: string) => `par_${sessionId.slice(4)}`;

interface MessageRow {
  id: string;
  sessionId: string;
  roomRole: RoomRole;
  name: string;
  privateWith: string | null;
  privateName: string | null;
  text: string;
  sentAt: Date;
}

const view = (r: MessageRow): ChatMessageView => ({
  messageId: r.id,
  participantId: participantOf(r.sessionId),
  name: r.name,
  roomRole: r.roomRole,
  text: r.text,
  sentAt: r.sentAt.toISOString(),
  privateWith: r.privateWith === null ? null : { participantId: participantOf(r.privateWith), name: r.privateName ?? '' },
});

/** A public message as the API lists it: who wrote it as a user of the organization. */
export interface ChatRecord {
  messageId: string;
  meetingId: string;
  sender: { userId: string; externalId: string; name: string; role: UserRole; roomRole: RoomRole };
  text: string;
  sentAt: string;
}

/**
 * The chat's rows (migration 0018): written when a message is sent, read for a page that joins and for
 * the API. Who may send what is decided before (src/core/chat.ts); the rooms service tells the room.
 */
export class ChatLog {
  readonly #clock: Clock;
  readonly #meetings: Meetings;

  constructor(clock: Clock, meetings: Meetings) {
    this.#clock = clock;
    this.#meetings = meetings;
  }

  /** Stores a message of `participantId` (to the room, or in `privateWith`'s conversation with the hosts). */
  async add(sql: Sql, m: { meetingId: string; participantId: string; roomRole: RoomRole; privateWith: string | null; text: string }): Promise<ChatMessageView> {
    const now = this.#clock.now();
    const [row] = await sql<MessageRow[]>`
      with added as (
        insert into chat_messages (id, org_id, meeting_id, session_id, room_role, private_with, text, sent_at)
        select ${newId('chm', now)}, org_id, id, ${sessionOf(m.participantId)}, ${m.roomRole}, ${m.privateWith === null ? null : sessionOf(m.privateWith)}, ${m.text}, ${iso(now)}
        from meetings where id = ${m.meetingId}
        returning *)
      select a.id, a.session_id, a.room_role, s.display_name as name, a.private_with, p.display_name as private_name, a.text, a.sent_at
      from added a join meeting_sessions s on s.id = a.session_id left join meeting_sessions p on p.id = a.private_with`;
    if (!row) throw new AppError('meeting_not_found');
    return view(row);
  }

  /** Clears a message's text (a host deleted it). Null: no such message in this meeting, or deleted already. */
  async delete(sql: Sql, meetingId: string, messageId: string, by: string): Promise<{ privateWith: string | null } | null> {
    const [row] = await sql<{ privateWith: string | null }[]>`
      update chat_messages set text = null, deleted_at = ${iso(this.#clock.now())}, deleted_by = ${by}
      where id = ${messageId} and meeting_id = ${meetingId} and deleted_at is null returning private_with`;
    return row ? { privateWith: row.privateWith === null ? null : participantOf(row.privateWith) } : null;
  }

  /**
   * The newest messages a person sees (hosts: every conversation; a student: the room's and their own with
   * the hosts, from any of their sessions in this meeting), oldest first: what a joining page is given.
   */
  async history(sql: Sql, meetingId: string, userId: string, host: boolean): Promise<ChatMessageView[]> {
    const rows = await sql<MessageRow[]>`
      select * from (
        select c.id, c.session_id, c.room_role, s.display_name as name, c.private_with, p.display_name as private_name, c.text, c.sent_at
        from chat_messages c join meeting_sessions s on s.id = c.session_id left join meeting_sessions p on p.id = c.private_with
        where c.meeting_id = ${meetingId} and c.deleted_at is null
          ${host ? sql`` : sql`and (c.private_with is null or p.user_id = ${userId})`}
        order by c.sent_at desc, c.id desc limit ${CHAT_LIMITS.history}) newest
      order by sent_at, id`;
    return rows.map(view);
  }

  /** A meeting's public chat for the API, oldest first; deleted messages and private conversations are not in it. */
  async ofMeeting(db: Db, orgId: string, idOrExternal: string, q: PageQuery): Promise<{ items: ChatRecord[]; nextCursor: string | null }> {
    const meeting = await this.#meetings.get(db, orgId, idOrExternal);
    const after = decodeCursor(q.cursor, 'time', 'id');
    const rows = await db<{ id: string; roomRole: RoomRole; name: string; userId: string; externalId: string; role: UserRole; text: string; sentAt: Date }[]>`
      select c.id, c.room_role, s.display_name as name, u.id as user_id, u.external_id, u.role, c.text, c.sent_at
      from chat_messages c join meeting_sessions s on s.id = c.session_id join users u on u.id = s.user_id
      where c.meeting_id = ${meeting.id} and c.private_with is null and c.deleted_at is null
        ${after ? db`and (c.sent_at, c.id) > (${after[0]!}::timestamptz, ${after[1]!})` : db``}
      order by c.sent_at, c.id limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit).map((r) => ({
      messageId: r.id,
      meetingId: meeting.id,
      sender: { userId: r.userId, externalId: r.externalId, name: r.name, role: r.role, roomRole: r.roomRole },
      text: r.text,
      sentAt: r.sentAt.toISOString(),
    }));
    const last = items.at(-1);
    return { items, nextCursor: rows.length > q.limit && last ? encodeCursor([last.sentAt, last.messageId]) : null };
  }
}
