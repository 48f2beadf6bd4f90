import { iso, type Clock } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { inTx } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import type { ClassRow, Classes } from './classes.ts';
import { decodeCursor, encodeCursor, ts, type PageQuery } from './common.ts';
import type { Outbox } from '../platform/outbox.ts';
import type { UserRole } from '../core/domain.ts';
import type { UserRow, Users } from './users.ts';

export const ENROLLMENT_STATUSES = ['ACTIVE', 'REMOVED'] as const;
export type EnrollmentStatus = (typeof ENROLLMENT_STATUSES)[number];

/** Enrolls a user given by exactly one of `userId` (service id or externalId) and `externalUserId`. */
export interface EnrollmentCreate {
  userId?: string | undefined;
  externalUserId?: string | undefined;
  batchId?: string | null | undefined;
}

export interface EnrollmentListQuery extends PageQuery {
  status?: EnrollmentStatus | undefined;
}

/** The user as enrollment and invitation records and events show it. */
export interface MemberUser {
  id: string;
  externalId: string;
  name: string;
  role: UserRole;
}

/** An enrollment as the API shows it. */
export interface EnrollmentRecord {
  id: string;
  classId: string;
  externalClassId: string | null;
  user: MemberUser;
  batchId: string | null;
  status: EnrollmentStatus;
  enrolledAt: string;
  removedAt: string | null;
}

interface EnrollmentRow {
  id: string;
  orgId: string;
  classId: string;
  userId: string;
  batchId: string | null;
  status: EnrollmentStatus;
  enrolledAt: Date;
  removedAt: Date | null;
}

/** An enrollment with the user and class fields its record and events carry. */
export interface Enrollment extends EnrollmentRow {
  userExternalId: string;
  userName: string;
  userRole: UserRole;
  externalClassId: string | null;
  courseId: string | null;
}

const withParts = (e: EnrollmentRow, u: Pick<UserRow, 'externalId' | 'fullName' | 'role'>, c: ClassRow): Enrollment => ({
  ...e,
  userExternalId: u.externalId,
  userName: u.fullName,
  userRole: u.role,
  externalClassId: c.externalId,
  courseId: c.courseId,
});

const userOf = (e: Enrollment): MemberUser => ({ id: e.userId, externalId: e.userExternalId, name: e.userName, role: e.userRole });

export const toEnrollmentRecord = (e: Enrollment): EnrollmentRecord => ({
  id: e.id,
  classId: e.classId,
  externalClassId: e.externalClassId,
  user: userOf(e),
  batchId: e.batchId,
  status: e.status,
  enrolledAt: e.enrolledAt.toISOString(),
  removedAt: ts(e.removedAt),
});

/** The data of enrollment.* events. */
export const enrollmentEventData = (e: Enrollment) => ({
  enrollmentId: e.id,
  user: userOf(e),
  classId: e.classId,
  externalClassId: e.externalClassId,
  batchId: e.batchId,
  courseId: e.courseId,
  status: e.status,
  enrolledAt: e.enrolledAt.toISOString(),
  removedAt: ts(e.removedAt),
});

/** Students in classes: what ENROLLED meetings admit. A user has at most one ACTIVE enrollment per class. */
export class Enrollments {
  readonly #clock: Clock;
  readonly #users: Users;
  readonly #classes: Classes;

  readonly #outbox: Outbox;

  constructor(clock: Clock, outbox: Outbox, users: Users, classes: Classes) {
    this.#outbox = outbox;
    this.#clock = clock;
    this.#users = users;
    this.#classes = classes;
  }

  /**
   * Enrolls an active user; emits enrollment.created. An ACTIVE enrollment that already exists is
   * returned unchanged (its batchId included) with `created: false` and no event.
   */
  enroll(pool: Db, orgId: string, classIdOrExternal: string, input: EnrollmentCreate): Promise<{ enrollment: Enrollment; created: boolean }> {
    return inTx(pool, async (db) => {
      const cls = await this.#classes.get(db, orgId, classIdOrExternal);
      const user = input.userId ? await this.#users.get(db, orgId, input.userId) : await this.#users.get(db, orgId, input.externalUserId!, false, 'external');
      if (user.status !== 'ACTIVE') throw new AppError('user_deactivated', { details: { userId: user.id } });
      const at = this.#clock.now();
      // The partial unique index settles concurrent enrollments of the same user: one inserts, the other reads it.
      const [inserted] = await db<EnrollmentRow[]>`insert into enrollments (id, org_id, class_id, user_id, batch_id, status, enrolled_at)
        values (${newId('enr', at)}, ${orgId}, ${cls.id}, ${user.id}, ${input.batchId ?? null}, 'ACTIVE', ${iso(at)})
        on conflict (class_id, user_id) where status = 'ACTIVE' do nothing returning *`;
      if (inserted) {
        const enrollment = withParts(inserted, user, cls);
        await this.#outbox.emit(db, orgId, 'enrollment.created', enrollmentEventData(enrollment), at);
        return { enrollment, created: true };
      }
      const [existing] = await db<EnrollmentRow[]>`select * from enrollments
        where class_id = ${cls.id} and user_id = ${user.id} and status = 'ACTIVE'`;
      if (!existing) throw new Error('active enrollment vanished between insert and read');
      return { enrollment: withParts(existing, user, cls), created: false };
    });
  }

  /** Ends the user's ACTIVE enrollment in the class; emits enrollment.removed. */
  remove(pool: Db, orgId: string, classIdOrExternal: string, userIdOrExternal: string): Promise<Enrollment> {
    return inTx(pool, async (db) => {
      const cls = await this.#classes.get(db, orgId, classIdOrExternal);
      const user = await this.#users.get(db, orgId, userIdOrExternal);
      const at = this.#clock.now();
      const [removed] = await db<EnrollmentRow[]>`update enrollments set status = 'REMOVED', removed_at = ${iso(at)}
        where class_id = ${cls.id} and user_id = ${user.id} and status = 'ACTIVE' returning *`;
      if (!removed) throw new AppError('enrollment_not_found', { details: { classId: cls.id, userId: user.id } });
      const enrollment = withParts(removed, user, cls);
      await this.#outbox.emit(db, orgId, 'enrollment.removed', enrollmentEventData(enrollment), at);
      return enrollment;
    });
  }

  /**
   * Removes the user from a batch: every ACTIVE enrollment of theirs with that batchId ends, in whatever
   * class, each with its enrollment.removed, in one transaction. None: enrollment_not_found.
   */
  removeFromBatch(pool: Db, orgId: string, batchId: string, userIdOrExternal: string): Promise<Enrollment[]> {
    return inTx(pool, async (db) => {
      const user = await this.#users.get(db, orgId, userIdOrExternal);
      const at = this.#clock.now();
      const removed = await db<EnrollmentRow[]>`update enrollments set status = 'REMOVED', removed_at = ${iso(at)}
        where org_id = ${orgId} and batch_id = ${batchId} and user_id = ${user.id} and status = 'ACTIVE' returning *`;
      if (!removed.length) throw new AppError('enrollment_not_found', { message: 'The user has no active enrollment in this batch.', details: { batchId, userId: user.id } });
      const enrollments: Enrollment[] = [];
      for (const row of removed.sort((a, b) => a.id.localeCompare(b.id))) {
        const enrollment = withParts(row, user, await this.#classes.get(db, orgId, row.classId));
        await this.#outbox.emit(db, orgId, 'enrollment.removed', enrollmentEventData(enrollment), at);
        enrollments.push(enrollment);
      }
      return enrollments;
    });
  }

  /** The class's enrollments, newest first; removed ones stay listed unless filtered out. */
  async list(db: Db, orgId: string, classIdOrExternal: string, q: EnrollmentListQuery): Promise<{ items: Enrollment[]; nextCursor: string | null }> {
    const cls = await this.#classes.get(db, orgId, classIdOrExternal);
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<(EnrollmentRow & { userExternalId: string; fullName: string; role: UserRole })[]>`
      select e.*, u.external_id as user_external_id, u.full_name, u.role
      from enrollments e join users u on u.id = e.user_id
      where e.class_id = ${cls.id}
      ${q.status ? db`and e.status = ${q.status}` : db``}
      ${after ? db`and e.id < ${after[0]!}` : db``}
      order by e.id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit).map((r) => {
      const { userExternalId, fullName, role, ...e } = r;
      return withParts(e, { externalId: userExternalId, fullName, role }, cls);
    });
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }
}
