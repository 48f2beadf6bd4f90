import { useState } from 'preact/hooks';
import { MEETING_STATUSES } from '../../../src/core/domain.ts';
import * as api from '../api.ts';
import { fromLocalInput, toLocalInput, when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, Empty, Filters, FilterSelect, Loaded, PageHead, Pager, TableWrap, useLoad } from '../ui/common.tsx';

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

/** Meetings and classes by scheduled start, filtered by status, dates and external id (all in the URL). */
export function Meetings({ query }: { query: URLSearchParams }) {
  const f = { status: query.get('status') ?? '', from: query.get('from') ?? '', to: query.get('to') ?? '', externalId: query.get('externalId') ?? '', userId: query.get('userId') ?? '', cursor: query.get('cursor') };
  const who = query.get('who');
  const [load, reload] = useLoad(() => api.list<Meeting>('/public/meetings', { ...f, limit: 25 }), JSON.stringify(f));
  const [ext, setExt] = useState(f.externalId);
  const filtered = Boolean(f.status || f.from || f.to || f.externalId || f.userId);
  return (
    <>
      <PageHead title="Meetings" sub={f.userId ? `Meetings ${who ?? 'this user'} hosts or was in, by scheduled start.` : 'Meetings and live classes, by scheduled start.'} />
      <Filters active={[f.status, f.from, f.to, f.externalId, f.userId].filter(Boolean).length}>
        <FilterSelect name="status" label="Status" options={MEETING_STATUSES} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <label class="filter">
          <span>Starting from</span>
          <input type="datetime-local" name="from" value={toLocalInput(f.from || null)} onChange={(e) => setQuery({ from: fromLocalInput((e.target as HTMLInputElement).value) })} />
        </label>
        <label class="filter">
          <span>Starting before</span>
          <input type="datetime-local" name="to" value={toLocalInput(f.to || null)} onChange={(e) => setQuery({ to: fromLocalInput((e.target as HTMLInputElement).value) })} />
        </label>
        <form
          class="filter search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ externalId: ext.trim() || null });
          }}
        >
          <label for="m-ext">Your external id</label>
          <span class="search-row">
            <input id="m-ext" name="externalId" value={ext} onInput={(e) => setExt((e.target as HTMLInputElement).value)} spellcheck={false} />
            <button class="btn small" type="submit">
              Find
            </button>
          </span>
        </form>
        {filtered && (
          <a class="btn small clear" href={href('/meetings')}>
            Clear filters
          </a>
        )}
      </Filters>
      <Loaded load={load} what="meetings" retry={reload}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title={filtered ? 'No meeting matches these filters.' : 'No meetings yet.'}>{filtered ? 'Clear a filter to see more.' : 'Meetings appear here once your backend schedules them through the API.'}</Empty>
          ) : (
            <>
              <TableWrap label="Meetings">
                <table class="table">
                  <caption class="sr-only">Meetings</caption>
                  <thead>
                    <tr>
                      <th scope="col">Title</th>
                      <th scope="col">Status</th>
                      <th scope="col">Scheduled</th>
                      <th scope="col">Kind</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((m) => (
                      <tr key={m.id}>
                        <td class="wrap">
                          <a class="strong" href={href(`/meetings/${m.id}`)}>
                            {m.title}
                          </a>
                          {m.externalId && <div class="muted small">{m.externalId}</div>}
                        </td>
                        <td>
                          <Badge value={m.status} />
                        </td>
                        <td class="nowrap">{when(m.scheduledStart)}</td>
                        <td>{m.kind === 'CLASS' ? 'class' : 'meeting'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
              <Pager nextCursor={page.nextCursor} count={page.data.length} />
            </>
          )
        }
      </Loaded>
    </>
  );
}
