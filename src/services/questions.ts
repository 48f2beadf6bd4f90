import type { Question } from '../../actors/meeting/meeting.types.ts';
import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import type { QuestionStatus } from '../core/classroom.ts';
import type { MemberUser } from './enrollments.ts';
import type { Meetings } from './meetings.ts';

/** A Q&A question as the API shows it: `askedBy` null when anonymous (or asked by a guest). */
export interface QuestionRecord {
  questionId: string;
  meetingId: string;
  text: string;
  anonymous: boolean;
  askedBy: MemberUser | null;
  askedAt: string;
  upvotes: number;
  status: QuestionStatus;
  /** The written answer; null when answered live or not answered. */
  answer: string | null;
  answeredLive: boolean;
  /** User id of the host who answered or dismissed it. */
  answeredBy: string | null;
  answeredAt: string | null;
  dismissedAt: string | null;
}

export interface MeetingQuestions {
  meetingId: string;
  externalMeetingId: string | null;
  questions: QuestionRecord[];
}

interface QuestionRow {
  id: string;
  meetingId: string;
  text: string;
  anonymous: boolean;
  askedBy: string | null;
  askerExternalId: string | null;
  askerName: string | null;
  askerRole: MemberUser['role'] | null;
  askedAt: Date;
  upvotes: number;
  status: QuestionStatus;
  answer: string | null;
  answeredLive: boolean;
  answeredBy: string | null;
  answeredAt: Date | null;
  dismissedAt: Date | null;
}

/** Q&A (docs/polls-and-questions.md): the meeting's actor decides; this writes each change and reads them back. */
export class Questions {
  constructor(private readonly meetings: Meetings) {}

  /** A question was asked, upvoted, answered or dismissed. An anonymous question's asker is never stored. */
  static async record(tx: Db, orgId: string, meetingId: string, q: Question): Promise<void> {
    const ts = (v: number | null) => (v === null ? null : iso(v));
    await tx`insert into questions (id, org_id, meeting_id, text, anonymous, asked_by, asked_at, upvotes, status, answer, answered_live, answered_by, answered_at, dismissed_at)
      values (${q.questionId}, ${orgId}, ${meetingId}, ${q.text}, ${q.anonymous}, ${q.anonymous ? null : (q.askedBy?.user.id ?? null)}, ${iso(q.askedAt)}, ${q.upvotes},
        ${q.status}, ${q.answer}, ${q.answeredLive}, ${q.answeredBy}, ${ts(q.answeredAt)}, ${ts(q.dismissedAt)})
      on conflict (id) do update set upvotes = excluded.upvotes, status = excluded.status, answer = excluded.answer, answered_live = excluded.answered_live,
        answered_by = excluded.answered_by, answered_at = excluded.answered_at, dismissed_at = excluded.dismissed_at`;
  }

  /** A meeting's questions in the order they were asked, dismissed ones included. */
  async ofMeeting(db: Db, orgId: string, idOrExternal: string): Promise<MeetingQuestions> {
    const m = await this.meetings.get(db, orgId, idOrExternal);
    const rows = await db<QuestionRow[]>`select q.id, q.meeting_id, q.text, q.anonymous, q.asked_by, u.external_id as asker_external_id, u.full_name as asker_name,
        u.role as asker_role, q.asked_at, q.upvotes, q.status, q.answer, q.answered_live, q.answered_by, q.answered_at, q.dismissed_at
      from questions q left join users u on u.id = q.asked_by where q.meeting_id = ${m.id} order by q.asked_at, q.id`;
    return {
      meetingId: m.id,
      externalMeetingId: m.externalId,
      questions: rows.map((r) => ({
        questionId: r.id,
        meetingId: r.meetingId,
        text: r.text,
        anonymous: r.anonymous,
        askedBy: r.askedBy && r.askerExternalId !== null && r.askerName !== null && r.askerRole !== null ? { id: r.askedBy, externalId: r.askerExternalId, name: r.askerName, role: r.askerRole } : null,
        askedAt: r.askedAt.toISOString(),
        upvotes: r.upvotes,
        status: r.status,
        answer: r.answer,
        answeredLive: r.answeredLive,
        answeredBy: r.answeredBy,
        answeredAt: r.answeredAt?.toISOString() ?? null,
        dismissedAt: r.dismissedAt?.toISOString() ?? null,
      })),
    };
  }
}
