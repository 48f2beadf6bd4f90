import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';
import { PLANS, type PlanName } from '../core/plans.ts';

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
    // Each stay is cut into its days once, and the concurrency is one running sum over every join, leave
    // and midnight, so the work grows with the stays, not with stays times days.
    const F = iso(from);
    const rows = await db<{ day: Date; meetings: number; seconds: number; peak: number }[]>`
      with days as (
        select generate_series(${F}::timestamptz, ${iso(to - DAY_MS)}::timestamptz, interval '1 day') as day
      ), iv as (
        select greatest(i.joined_at, ${F}::timestamptz) as joined_at, least(coalesce(i.left_at, ${iso(now)}::timestamptz), ${iso(to)}::timestamptz) as left_at
        from attendance_intervals i join meetings m on m.id = i.meeting_id
        where m.org_id = ${orgId} and i.joined_at < ${iso(to)} and coalesce(i.left_at, ${iso(now)}::timestamptz) > ${F}
      ), pieces as (
        select g.day, extract(epoch from least(iv.left_at, g.day + interval '1 day') - greatest(iv.joined_at, g.day)) as secs
        from iv cross join lateral generate_series(date_bin('1 day', iv.joined_at, ${F}::timestamptz), iv.left_at, interval '1 day') as g(day)
      ), seconds as (
        select day, sum(secs) as secs from pieces where secs > 0 group by day
      ), ev as (
        select joined_at as t, 1 as delta from iv
        union all select left_at, -1 from iv
        -- each midnight: the level there is who was in the rooms when the day began
        union all select day, 0 from days
      ), running as (
        -- at one instant: leaves, then the midnight, then joins, so no one is counted twice or at a day they left
        select t, sum(delta) over (order by t, delta rows unbounded preceding) as level from ev
      ), peaks as (
        select date_bin('1 day', t, ${F}::timestamptz) as day, max(level) as peak from running where t >= ${F} and t < ${iso(to)} group by 1
      ), started as (
        select date_bin('1 day', started_at, ${F}::timestamptz) as day, count(*) as n from meetings
        where org_id = ${orgId} and started_at >= ${F} and started_at < ${iso(to)} group by 1
      )
      select d.day, coalesce(st.n, 0)::int as meetings, coalesce(se.secs, 0)::float8 as seconds, coalesce(p.peak, 0)::int as peak
      from days d left join started st on st.day = d.day left join seconds se on se.day = d.day left join peaks p on p.day = d.day
      order by d.day`;
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
