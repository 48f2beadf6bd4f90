import { iso } from '../clock.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { PLANS, type PlanName } from '../plans.ts';

/**
 * Usage per UTC day, from what the live rooms recorded: meetings started, participant minutes (every
 * stay in a room, the attendance intervals, cut at midnight; a stay still open counts up to now), and
 * the most people in the organization's rooms at once. The plan's limits stand beside them.
 */

export interface UsageQuery {
  /** First day, `YYYY-MM-DD` (UTC); default: 30 days before `to`. */
  from?: string | undefined;
  /** Day after the last, `YYYY-MM-DD` (UTC); default: tomorrow. */
  to?: string | undefined;
}

export interface UsageDay {
  date: string;
  meetings: number;
  participantMinutes: number;
  peakConcurrentParticipants: number;
}

export interface UsageReport {
  from: string;
  to: string;
  plan: PlanName;
  limits: { maxLiveMeetings: number; maxParticipants: number; maxMeetingMinutes: number };
  days: UsageDay[];
  /** Sums over the days (peak: the highest of them). */
  totals: Omit<UsageDay, 'date'>;
}

export const MAX_USAGE_DAYS = 366;
const DAY_MS = 86_400_000;

const dayOf = (ms: number): string => iso(ms).slice(0, 10);

export class Usage {
  async report(db: Db, orgId: string, q: UsageQuery, now: number): Promise<UsageReport> {
    const to = q.to ? Date.parse(`${q.to}T00:00:00Z`) : Date.parse(`${dayOf(now)}T00:00:00Z`) + DAY_MS;
    const from = q.from ? Date.parse(`${q.from}T00:00:00Z`) : to - 30 * DAY_MS;
    if (!(from < to)) throw rangeError('to', 'to must be after from');
    if ((to - from) / DAY_MS > MAX_USAGE_DAYS) throw rangeError('from', `at most ${MAX_USAGE_DAYS} days at a time`);

    const [org] = await db<{ plan: PlanName }[]>`select plan from organizations where id = ${orgId}`;
    const plan = org!.plan;
    const rows = await db<{ day: Date; meetings: number; seconds: number; peak: number }[]>`
      with days as (
        select generate_series(${iso(from)}::timestamptz, ${iso(to - DAY_MS)}::timestamptz, interval '1 day') as day
      ), iv as (
        select i.joined_at, coalesce(i.left_at, ${iso(now)}::timestamptz) as left_at
        from attendance_intervals i join meetings m on m.id = i.meeting_id
        where m.org_id = ${orgId} and i.joined_at < ${iso(to)} and coalesce(i.left_at, ${iso(now)}::timestamptz) > ${iso(from)}
      ), ev as (
        select joined_at as t, 1 as delta from iv
        union all select left_at, -1 from iv
      ), running as (
        -- a leave and a join at the same instant: the leave first, so one person is never counted twice
        select t, sum(delta) over (order by t, delta rows unbounded preceding) as level from ev
      )
      select d.day,
        (select count(*)::int from meetings m where m.org_id = ${orgId} and m.started_at >= d.day and m.started_at < d.day + interval '1 day') as meetings,
        coalesce((select sum(extract(epoch from least(iv.left_at, d.day + interval '1 day') - greatest(iv.joined_at, d.day)))
          from iv where iv.joined_at < d.day + interval '1 day' and iv.left_at > d.day), 0)::float8 as seconds,
        greatest(
          coalesce((select max(r.level) from running r where r.t >= d.day and r.t < d.day + interval '1 day'), 0),
          (select count(*) from iv where iv.joined_at <= d.day and iv.left_at > d.day)
        )::int as peak
      from days d order by d.day`;
    const days = rows.map((r) => ({
      date: dayOf(r.day.getTime()),
      meetings: r.meetings,
      participantMinutes: Math.round(r.seconds / 60),
      peakConcurrentParticipants: r.peak,
    }));
    const limits = { maxLiveMeetings: PLANS[plan].maxLiveMeetings, maxParticipants: PLANS[plan].maxParticipants, maxMeetingMinutes: PLANS[plan].maxMeetingMinutes };
    return {
      from: dayOf(from),
      to: dayOf(to),
      plan,
      limits,
      days,
      totals: {
        meetings: days.reduce((s, d) => s + d.meetings, 0),
        participantMinutes: Math.round(rows.reduce((s, r) => s + r.seconds, 0) / 60),
        peakConcurrentParticipants: days.reduce((m, d) => Math.max(m, d.peakConcurrentParticipants), 0),
      },
    };
  }
}

function rangeError(field: 'from' | 'to', message: string): AppError {
  return new AppError('validation_failed', { details: { fields: [{ field, in: 'query', code: 'custom', message }] } });
}
