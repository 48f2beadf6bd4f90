import { when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Filters, PageHead } from '../ui/common.tsx';
import { activeCount, DataTable, listQuery, NameCell, PagedList, SearchFilter, useList, type Column } from '../ui/list.tsx';

/** An academic class as the API shows it (GET /public/classes/:id), what the console reads of it. */
export interface Class {
  id: string;
  externalId: string | null;
  name: string;
  section: string | null;
  academicYear: string | null;
  description: string | null;
  courseId: string | null;
  createdAt: string;
}

const none = () => <span class="muted">—</span>;

const COLUMNS: Column<Class>[] = [
  { head: 'Class', class: 'wrap', cell: (c) => <NameCell to={href(`/classes/${c.id}`)} name={c.name} sub={c.externalId} /> },
  { head: 'Section', cell: (c) => c.section ?? none() },
  { head: 'Academic year', class: 'nowrap', cell: (c) => c.academicYear ?? none() },
  { head: 'Course', cell: (c) => (c.courseId ? <code>{c.courseId}</code> : none()) },
  { head: 'Created', class: 'nowrap', cell: (c) => when(c.createdAt) },
];

/** The organization's classes (GET /public/classes), newest first, found by the backend's own id. */
export function Classes({ query }: { query: URLSearchParams }) {
  const f = listQuery(query, ['externalId']);
  const [load, reload] = useList<Class>('/public/classes', f, 25);
  const active = activeCount([f.externalId]);
  return (
    <>
      <PageHead title="Classes" sub="Academic classes your backend has created, newest first. Open one for its attendance across sessions." />
      <Filters active={active} clear={href('/classes')}>
        <SearchFilter id="c-ext" name="externalId" label="Your external id" value={f.externalId} onFind={(v) => setQuery({ externalId: v })} />
      </Filters>
      <PagedList load={load} what="classes" retry={reload} empty={active ? { title: 'No class has this external id.', body: 'The external id is matched exactly. Clear the filter to see every class.' } : { title: 'No classes yet.', body: 'Classes appear once your backend creates them (POST /public/classes).' }}>
        {(page) => <DataTable label="Classes" columns={COLUMNS} rows={page.data} rowKey={(c) => c.id} />}
      </PagedList>
    </>
  );
}
