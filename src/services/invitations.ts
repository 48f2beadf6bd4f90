import { iso, type Clock } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { inTx } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';
import type { MemberUser } from './enrollments.ts';
import type { Meetings } from './meetings.ts';
import type { UserRole } from '../core/domain.ts';
import type { UserRow, Users } from './users.ts';

export const MAX_INVITES_PER_REQUEST = 1000;

/** An invitation as the API shows it. */
export interface InvitationRecord {
  meetingId: string;
  user: MemberUser;
  invitedAt: string;
}

/** An invitation with the user fields its record carries. */
export interface Invitation {
  meetingId: string;
  userId: string;
  userExternalId: string;
  fullName: string;
  role: UserRole;
  createdAt: Date;
}

export const toInvitationRecord = (i: Invitation): InvitationRecord => ({
  meetingId: i.meetingId,
  user: { id: i.userId, externalId: i.userExternalId, name: i.fullName, role: i.role },
  invitedAt: i.createdAt.toISOString(),
});

const FROM = (db: Db) => db`select i.meeting_id, i.user_id, i.created_at, u.external_id as user_external_id, u.full_name, u.role
  from meeting_invitations i join users u on u.id = i.user_id`;

/** Who may enter an INVITED meeting besides its host and host-role links. No webhook event: the catalog has none. */
export class Invitations {
  readonly #clock: Clock;
  readonly #users: Users;
  readonly #meetings: Meetings;

  constructor(clock: Clock, users: Users, meetings: Meetings) {
    this.#clock = clock;
    this.#users = users;
    this.#meetings = meetings;
  }

  /**
   * Invites every given user, or none when any is unknown (user_not_found, details.ids). Inviting again
   * keeps the first invitedAt. Returns the invitations of all given users, in the order given.
   */
  invite(pool: Db, orgId: string, meetingIdOrExternal: string, userIds: readonly string[]): Promise<Invitation[]> {
    return inTx(pool, async (db) => {
      // Locked so a concurrent cancel or end cannot slip between the state check and the insert.
      const meeting = await this.#meetings.get(db, orgId, meetingIdOrExternal, true);
      if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') {
        throw new AppError('invalid_state', { message: `A meeting that is ${meeting.status} cannot take invitations.`, details: { status: meeting.status } });
      }
      const given = [...new Set(userIds)];
      const found = await db<UserRow[]>`select * from users where org_id = ${orgId}
        and (id = any(${db.array(given)}::text[]) or external_id = any(${db.array(given)}::text[]))`;
      // Same precedence as Users.get: a service id wins over another user's equal externalId.
      const byId = new Map(found.map((u) => [u.id, u]));
      const byExternal = new Map(found.map((u) => [u.externalId, u]));
      const resolved = given.map((ref) => byId.get(ref) ?? byExternal.get(ref));
      const unknown = given.filter((_, i) => !resolved[i]);
      if (unknown.length) {
        throw new AppError('user_not_found', {
          message: `${unknown.length} of the given users do not exist in the organization; nobody was invited.`,
          details: { ids: unknown },
        });
      }
      const ids = [...new Set(resolved.map((u) => u!.id))];
      await db`insert into meeting_invitations (meeting_id, user_id, created_at)
        select ${meeting.id}, u, ${iso(this.#clock.now())} from unnest(${db.array(ids)}::text[]) as u
        on conflict (meeting_id, user_id) do nothing`;
      const rows = await db<Invitation[]>`${FROM(db)} where i.meeting_id = ${meeting.id} and i.user_id = any(${db.array(ids)}::text[])`;
      const byUser = new Map(rows.map((r) => [r.userId, r]));
      return ids.map((id) => byUser.get(id)!);
    });
  }

  /** Withdraws the user's invitation; returns it as it was. */
  revoke(pool: Db, orgId: string, meetingIdOrExternal: string, userIdOrExternal: string): Promise<Invitation> {
    return inTx(pool, async (db) => {
      const meeting = await this.#meetings.get(db, orgId, meetingIdOrExternal);
      const user = await this.#users.get(db, orgId, userIdOrExternal);
      const [gone] = await db<{ createdAt: Date }[]>`delete from meeting_invitations
        where meeting_id = ${meeting.id} and user_id = ${user.id} returning created_at`;
      if (!gone) throw new AppError('invitation_not_found', { details: { meetingId: meeting.id, userId: user.id } });
      return { meetingId: meeting.id, userId: user.id, userExternalId: user.externalId, fullName: user.fullName, role: user.role, createdAt: gone.createdAt };
    });
  }

  /** The meeting's invitations by user id (the primary key's order, so paging needs no extra index). */
  async list(db: Db, orgId: string, meetingIdOrExternal: string, q: PageQuery): Promise<{ items: Invitation[]; nextCursor: string | null }> {
    const meeting = await this.#meetings.get(db, orgId, meetingIdOrExternal);
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<Invitation[]>`${FROM(db)} where i.meeting_id = ${meeting.id}
      ${after ? db`and i.user_id > ${after[0]!}` : db``}
      order by i.user_id limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.userId]) : null };
  }
}
