import { iso, type Clock } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { inTx } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import { decodeCursor, encodeCursor, ts, type PageQuery } from './common.ts';
import type { Outbox } from '../platform/outbox.ts';

/** A class as the API creates or updates it (by externalId). */
export interface ClassInput {
  externalId: string;
  name: string;
  section?: string | null | undefined;
  academicYear?: string | null | undefined;
  description?: string | null | undefined;
  courseId?: string | null | undefined;
}

/** A class as the API shows it. */
export interface ClassRecord {
  id: string;
  externalId: string | null;
  name: string;
  section: string | null;
  academicYear: string | null;
  description: string | null;
  courseId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ClassListQuery extends PageQuery {
  externalId?: string | undefined;
}

export interface ClassRow {
  id: string;
  orgId: string;
  externalId: string | null;
  name: string;
  section: string | null;
  academicYear: string | null;
  description: string | null;
  courseId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const toClassRecord = (c: ClassRow): ClassRecord => ({
  id: c.id,
  externalId: c.externalId,
  name: c.name,
  section: c.section,
  academicYear: c.academicYear,
  description: c.description,
  courseId: c.courseId,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
});

/** The data of class.* events. */
export const classEventData = (c: ClassRow) => ({
  classId: c.id,
  externalClassId: c.externalId,
  name: c.name,
  section: c.section,
  academicYear: c.academicYear,
  description: c.description,
  createdAt: c.createdAt.toISOString(),
  updatedAt: ts(c.updatedAt),
});

const FIELDS = ['name', 'section', 'academicYear', 'description', 'courseId'] as const;

export class Classes {
  readonly #clock: Clock;
  readonly #outbox: Outbox;

  constructor(clock: Clock, outbox: Outbox) {
    this.#outbox = outbox;
    this.#clock = clock;
  }

  /** Creates or updates by externalId; emits class.created or, when something changed, class.updated. */
  upsert(pool: Db, orgId: string, input: ClassInput): Promise<{ cls: ClassRow; created: boolean }> {
    return inTx(pool, async (db) => {
      const now = iso(this.#clock.now());
      const [inserted] = await db<ClassRow[]>`insert into classes (id, org_id, external_id, name, section, academic_year, description, course_id, created_at, updated_at)
        values (${newId('cls')}, ${orgId}, ${input.externalId}, ${input.name}, ${input.section ?? null}, ${input.academicYear ?? null},
          ${input.description ?? null}, ${input.courseId ?? null}, ${now}, ${now})
        on conflict (org_id, external_id) do nothing returning *`;
      if (inserted) {
        await this.#outbox.emit(db, orgId, 'class.created', classEventData(inserted), this.#clock.now());
        return { cls: inserted, created: true };
      }
      const [cur] = await db<ClassRow[]>`select * from classes where org_id = ${orgId} and external_id = ${input.externalId} for update`;
      const next = Object.fromEntries(FIELDS.map((f) => [f, input[f] === undefined ? cur![f] : input[f]])) as Pick<ClassRow, (typeof FIELDS)[number]>;
      if (FIELDS.every((f) => next[f] === cur![f])) return { cls: cur!, created: false };
      const [updated] = await db<ClassRow[]>`update classes set name = ${next.name}, section = ${next.section}, academic_year = ${next.academicYear},
        description = ${next.description}, course_id = ${next.courseId}, updated_at = ${now} where id = ${cur!.id} returning *`;
      await this.#outbox.emit(db, orgId, 'class.updated', classEventData(updated!), this.#clock.now());
      return { cls: updated!, created: false };
    });
  }

  async get(db: Db, orgId: string, idOrExternal: string): Promise<ClassRow> {
    const rows = await db<ClassRow[]>`select * from classes where org_id = ${orgId} and (id = ${idOrExternal} or external_id = ${idOrExternal})
      order by (id = ${idOrExternal}) desc limit 1`;
    if (!rows[0]) throw new AppError('class_not_found', { details: { id: idOrExternal } });
    return rows[0];
  }

  async list(db: Db, orgId: string, q: ClassListQuery): Promise<{ items: ClassRow[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<ClassRow[]>`select * from classes where org_id = ${orgId}
      ${q.externalId ? db`and external_id = ${q.externalId}` : db``}
      ${after ? db`and id < ${after[0]!}` : db``}
      order by id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }
}
