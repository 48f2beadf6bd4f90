import type { Db } from '../platform/db/index.ts';
import type { MeetingKind } from '../core/room.ts';
import { PLANS, type PlanName } from '../core/plans.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';

/** A live room as the console's overview shows it. */
export interface LiveRoom {
  meetingId: string;
  externalId: string | null;
  title: string;
  kind: MeetingKind;
  slug: string;
  startedAt: string;
  /** People in the room now (each open stay; someone reconnecting within the grace still counts). */
  people: number;
  /** Of them, hosts and cohosts. */
  hosts: number;
}

export interface LiveNow {
  /** Over every live room of the organization, not only this page. */
  totals: { rooms: number; people: number; hosts: number };
  /** The plan's limit on rooms live at once. */
  maxLiveMeetings: number;
  rooms: LiveRoom[];
}

interface Row {
  plan: PlanName;
  totalRooms: number;
  totalPeople: number;
  totalHosts: number;
  id: string | null;
  externalId: string | null;
  title: string;
  kind: MeetingKind;
  slug: string;
  startedAt: Date;
  people: number;
  hosts: number;
}

/**
 * The organization's live rooms, most recently started first, with who is in them now: one query over
 * what the meeting actors already write in the transactions of joins and leaves (the LIVE status, and
 * each stay as an attendance interval, open while the person is in). A stay's participant is its
 * meeting session (`par_x` is the session `ses_x`), whose room role says who hosts.
 */
export async function liveNow(db: Db, orgId: string, q: PageQuery): Promise<{ live: LiveNow; nextCursor: string | null }> {
  const after = decodeCursor(q.cursor, 'time', 'id');
  const rows = await db<Row[]>`
    with live as (
      select m.id, m.external_id, m.title, m.kind, m.slug, m.started_at,
        count(i.participant_id)::int as people,
        (count(i.participant_id) filter (where s.role in ('HOST', 'COHOST')))::int as hosts
      from meetings m
      left join attendance_intervals i on i.meeting_id = m.id and i.left_at is null
      left join meeting_sessions s on s.id = 'ses_' || substr(i.participant_id, 5)
      where m.org_id = ${orgId} and m.status = 'LIVE'
      group by m.id
    ), totals as (
      select count(*)::int as total_rooms, coalesce(sum(people), 0)::int as total_people, coalesce(sum(hosts), 0)::int as total_hosts from live
    ), page as (
      select * from live
      ${after ? db`where (started_at, id) < (${after[0]!}::timestamptz, ${after[1]!})` : db``}
      order by started_at desc, id desc limit ${q.limit + 1}
    )
    select o.plan, t.*, p.* from organizations o cross join totals t left join page p on true
    where o.id = ${orgId}
    order by p.started_at desc, p.id desc`;
  const first = rows[0]!;
  const rooms = rows
    .filter((r) => r.id !== null)
    .map((r) => ({ meetingId: r.id!, externalId: r.externalId, title: r.title, kind: r.kind, slug: r.slug, startedAt: r.startedAt.toISOString(), people: r.people, hosts: r.hosts }));
  const page = rooms.slice(0, q.limit);
  return {
    live: { totals: { rooms: first.totalRooms, people: first.totalPeople, hosts: first.totalHosts }, maxLiveMeetings: PLANS[first.plan].maxLiveMeetings, rooms: page },
    nextCursor: rooms.length > q.limit ? encodeCursor([page.at(-1)!.startedAt, page.at(-1)!.meetingId]) : null,
  };
}
