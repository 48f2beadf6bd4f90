import { createHmac } from 'node:crypto';
import { respondedAt } from '../../actors/meeting/meeting.classroom.ts';
import type { Poll } from '../../actors/meeting/meeting.types.ts';
import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { isCorrect, type PollStatus, type PollType } from '../core/classroom.ts';
import type { MemberUser } from './enrollments.ts';
import type { Meetings } from './meetings.ts';

/** One option of a poll as the API shows it: votes once it closed (null while open), `correct` on quizzes. */
export interface PollOption {
  index: number;
  text: string;
  votes: number | null;
  correct?: boolean;
}

/** One answer: `user` null in an anonymous poll; `correct` on quizzes. */
export interface PollResponse {
  user: MemberUser | null;
  choices: number[];
  text: string | null;
  correct?: boolean;
  respondedAt: string;
}

export interface PollRecord {
  pollId: string;
  meetingId: string;
  question: string;
  type: PollType;
  anonymous: boolean;
  quiz: boolean;
  status: PollStatus;
  shared: boolean;
  options: PollOption[];
  /** How many answered; null while open. */
  answered: number | null;
  /** Empty while open. */
  responses: PollResponse[];
  createdAt: string;
  createdBy: string | null;
  closedAt: string | null;
  closedBy: string | null;
}

/** One student's quizzes in a meeting: the closed, named quizzes, how many they answered and got right. */
export interface QuizScore {
  user: MemberUser;
  quizzes: number;
  answered: number;
  correct: number;
}

export interface MeetingPolls {
  meetingId: string;
  externalMeetingId: string | null;
  polls: PollRecord[];
  quizScores: QuizScore[];
}

interface PollRow {
  id: string;
  meetingId: string;
  question: string;
  type: PollType;
  anonymous: boolean;
  options: string[];
  correct: number[];
  status: PollStatus;
  shared: boolean;
  votes: number[];
  answered: number;
  createdBy: string | null;
  createdAt: Date;
  closedBy: string | null;
  closedAt: Date | null;
}

interface ResponseRow {
  pollId: string;
  userId: string | null;
  externalId: string | null;
  name: string | null;
  role: MemberUser['role'] | null;
  choices: number[];
  text: string | null;
  correct: boolean | null;
  respondedAt: Date;
}

/** The purpose of the key `voterHash` takes, derived from the server's secret (src/crypto.ts deriveKey). */
export const VOTER_KEY_PURPOSE = 'classroom-voter';

/**
 * Who a person is in one meeting's polls and Q&A (the meeting actor's `voter`): HMAC-SHA256 of the meeting
 * and the user id, keyed from the server's secret, 128 bits in base64url. It lets the actor refuse a
 * second vote and know an anonymous question's asker, and tells no one else anything: without the key it
 * cannot be computed from a user id, and it differs from one meeting to the next.
 */
export function voterHash(key: Buffer, meetingId: string, userId: string): string {
  return createHmac('sha256', key).update(`${meetingId}\n${userId}`).digest().toString('base64url', 0, 16);
}

/**
 * Polls and quizzes (docs/polls-and-questions.md): the meeting's actor decides, this writes what it
 * decided (in its transition's transaction) and reads it back for the public API.
 */
export class Polls {
  constructor(private readonly meetings: Meetings) {}

  /**
   * A poll opened, was shared, or closed with its answers: the row follows, and a closing writes the answers
   * once. An anonymous poll's come in the order of their content (meeting.classroom.ts byContent) and are
   * stored with no person and the poll's close as their time.
   */
  static async record(tx: Db, orgId: string, meetingId: string, p: Poll): Promise<void> {
    const ts = (v: number | null) => (v === null ? null : iso(v));
    await tx`insert into polls (id, org_id, meeting_id, question, type, anonymous, options, correct, status, shared, votes, answered, created_by, created_at, closed_by, closed_at)
      values (${p.pollId}, ${orgId}, ${meetingId}, ${p.question}, ${p.type}, ${p.anonymous}, ${tx.json(p.options)}, ${tx.json(p.correct)}, ${p.status}, ${p.shared},
        ${tx.json(p.votes)}, ${p.answered}, ${p.createdBy}, ${iso(p.createdAt)}, ${p.closedBy}, ${ts(p.closedAt)})
      on conflict (id) do update set status = excluded.status, shared = excluded.shared, votes = excluded.votes, answered = excluded.answered,
        closed_by = excluded.closed_by, closed_at = excluded.closed_at`;
    if (p.status !== 'CLOSED' || p.answers.length === 0) return;
    const rows = p.answers.map((a, seq) => ({
      poll_id: p.pollId,
      seq,
      // a guest has no user row; their answer counts without a name
      user_id: a.user?.id ?? null,
      choices: tx.json(a.choices) as unknown as string,
      text: a.text,
      correct: isCorrect(p.correct, a.choices),
      responded_at: iso(respondedAt(p, a)),
    }));
    await tx`insert into poll_responses ${tx(rows)} on conflict (poll_id, seq) do nothing`;
  }

  /** A meeting's polls, oldest first, with each student's quiz score. */
  async ofMeeting(db: Db, orgId: string, idOrExternal: string): Promise<MeetingPolls> {
    const m = await this.meetings.get(db, orgId, idOrExternal);
    const polls = await db<PollRow[]>`select id, meeting_id, question, type, anonymous, options, correct, status, shared, votes, answered, created_by, created_at, closed_by, closed_at
      from polls where meeting_id = ${m.id} order by created_at, id`;
    const responses = polls.length
      ? await db<ResponseRow[]>`select r.poll_id, r.user_id, u.external_id, u.full_name as name, u.role, r.choices, r.text, r.correct, r.responded_at
          from poll_responses r left join users u on u.id = r.user_id where r.poll_id in ${db(polls.map((p) => p.id))} order by r.poll_id, r.seq`
      : [];
    const byPoll = new Map<string, ResponseRow[]>();
    for (const r of responses) {
      const list = byPoll.get(r.pollId);
      if (list) list.push(r);
      else byPoll.set(r.pollId, [r]);
    }
    const records = polls.map((p) => Polls.#record(p, byPoll.get(p.id) ?? []));
    return { meetingId: m.id, externalMeetingId: m.externalId, polls: records, quizScores: Polls.#scores(records) };
  }

  static #record(p: PollRow, responses: ResponseRow[]): PollRecord {
    const quiz = p.correct.length > 0;
    const closed = p.status === 'CLOSED';
    return {
      pollId: p.id,
      meetingId: p.meetingId,
      question: p.question,
      type: p.type,
      anonymous: p.anonymous,
      quiz,
      status: p.status,
      shared: p.shared,
      options: p.options.map((text, index) => ({ index, text, votes: closed ? (p.votes[index] ?? 0) : null, ...(quiz ? { correct: p.correct.includes(index) } : {}) })),
      answered: closed ? p.answered : null,
      responses: responses.map((r) => ({
        user: r.userId && r.externalId !== null && r.name !== null && r.role !== null ? { id: r.userId, externalId: r.externalId, name: r.name, role: r.role } : null,
        choices: r.choices,
        text: r.text,
        ...(quiz ? { correct: r.correct === true } : {}),
        respondedAt: r.respondedAt.toISOString(),
      })),
      createdAt: p.createdAt.toISOString(),
      createdBy: p.createdBy,
      closedAt: p.closedAt?.toISOString() ?? null,
      closedBy: p.closedBy,
    };
  }

  /** Per student over the closed quizzes that name their people; sorted by name. */
  static #scores(polls: PollRecord[]): QuizScore[] {
    const quizzes = polls.filter((p) => p.quiz && p.status === 'CLOSED' && !p.anonymous);
    const scores = new Map<string, QuizScore>();
    for (const q of quizzes) {
      for (const r of q.responses) {
        if (!r.user) continue;
        const s = scores.get(r.user.id) ?? { user: r.user, quizzes: quizzes.length, answered: 0, correct: 0 };
        s.answered++;
        if (r.correct) s.correct++;
        scores.set(r.user.id, s);
      }
    }
    return [...scores.values()].sort((a, b) => a.user.name.localeCompare(b.user.name) || a.user.id.localeCompare(b.user.id));
  }
}
