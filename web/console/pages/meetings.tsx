import { MEETING_STATUSES } from '../../../src/core/domain.ts';
import { fromLocalInput, toLocalInput, when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, Filters, FilterSelect, PageHead } from '../ui/common.tsx';
import { activeCount, DataTable, listQuery, NameCell, PagedList, SearchFilter, useList, type Column } from '../ui/list.tsx';

export interface Meeting {
  id: string;
  externalId: string | null;
  slug: string;
  kind: 'MEETING' | 'CLASS';
  title: string;
  status: (typeof MEETING_STATUSES)[number];
  hostUserId: string;
  classId: string | null;
  scheduledStart: string;
  scheduledEnd: string;
  durationMinutes: number;
  settings: { waitingRoom: boolean; muteOnEntry: boolean; recordAutomatically: boolean; lectureMode: boolean; allowStudentScreenShare: boolean; chat: string; maxParticipants: number | null };
  access: { mode: string };
  startedAt: string | null;
  endedAt: string | null;
  durationSeconds: number | null;
  endedReason: string | null;
  cancelledAt: string | null;
  createdAt: string;
}

const FILTERS = ['status', 'from', 'to', 'externalId', 'userId'] as const;

const COLUMNS: Column<Meeting>[] = [
  { head: 'Title', class: 'wrap', cell: (m) => <NameCell to={href(`/meetings/${m.id}`)} name={m.title} sub={m.externalId} /> },
  { head: 'Status', cell: (m) => <Badge value={m.status} /> },
  { head: 'Scheduled', class: 'nowrap', cell: (m) => when(m.scheduledStart) },
  { head: 'Kind', cell: (m) => (m.kind === 'CLASS' ? 'class' : 'meeting') },
];

/** Meetings and classes by scheduled start, filtered by status, dates and external id (all in the URL). */
export function Meetings({ query }: { query: URLSearchParams }) {
  const f = listQuery(query, FILTERS);
  const who = query.get('who');
  const [load, reload] = useList<Meeting>('/public/meetings', f, 25);
  const active = activeCount([f.status, f.from, f.to, f.externalId, f.userId]);
  return (
    <>
      <PageHead title="Meetings" sub={f.userId ? `Meetings ${who ?? 'this user'} hosts or was in, by scheduled start.` : 'Meetings and live classes, by scheduled start.'} />
      <Filters active={active} clear={href('/meetings')}>
        <FilterSelect name="status" label="Status" options={MEETING_STATUSES} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <label class="filter">
          <span>Starting from</span>
          <input type="datetime-local" name="from" value={toLocalInput(f.from || null)} onChange={(e) => setQuery({ from: fromLocalInput((e.target as HTMLInputElement).value) })} />
        </label>
        <label class="filter">
          <span>Starting before</span>
          <input type="datetime-local" name="to" value={toLocalInput(f.to || null)} onChange={(e) => setQuery({ to: fromLocalInput((e.target as HTMLInputElement).value) })} />
        </label>
        <SearchFilter id="m-ext" name="externalId" label="Your external id" value={f.externalId} onFind={(v) => setQuery({ externalId: v })} />
      </Filters>
      <PagedList load={load} what="meetings" retry={reload} empty={active ? { title: 'No meeting matches these filters.', body: 'Clear a filter to see more.' } : { title: 'No meetings yet.', body: 'Meetings appear here once your backend schedules them through the API.' }}>
        {(page) => <DataTable label="Meetings" columns={COLUMNS} rows={page.data} rowKey={(m) => m.id} />}
      </PagedList>
    </>
  );
}
