import { USER_ROLES } from '../../../src/core/domain.ts';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, ConfirmButton, Filters, FilterSelect, PageHead, useFlash } from '../ui/common.tsx';
import { activeCount, DataTable, listQuery, PagedList, SearchFilter, useList, type Column } from '../ui/list.tsx';

interface User {
  id: string;
  externalId: string;
  fullName: string;
  email: string | null;
  role: string;
  status: 'ACTIVE' | 'DEACTIVATED';
  createdAt: string;
  deactivatedAt: string | null;
}

/**
 * The organization's users (provisioned by its backend), newest first: by status and role, or found by
 * name, email or the backend's own id. Deactivating one is the spec's action: their links and sessions stop at once.
 */
export function Users({ query }: { query: URLSearchParams }) {
  const f = listQuery(query, ['status', 'role', 'q', 'externalId']);
  const [load, reload, set] = useList<User>('/public/users', f, 25);
  const [flash, say] = useFlash();
  const active = activeCount([f.status, f.role, f.q, f.externalId]);
  const columns = (page: api.Page<User>): Column<User>[] => [
    {
      head: 'Name',
      class: 'wrap',
      cell: (u) => (
        <>
          <span class="strong">{u.fullName}</span>
          <div class="muted small">
            {u.externalId}
            {u.email && ` · ${u.email}`}
          </div>
        </>
      ),
    },
    { head: 'Role', cell: (u) => u.role.toLowerCase() },
    {
      head: 'Status',
      cell: (u) => (
        <>
          <Badge value={u.status} />
          {u.deactivatedAt && <div class="muted small">{when(u.deactivatedAt)}</div>}
        </>
      ),
    },
    { head: 'Added', class: 'nowrap', cell: (u) => when(u.createdAt) },
    {
      head: 'Actions',
      hidden: true,
      class: 'actions-cell',
      cell: (u) => (
        <>
          <a class="btn small" href={href(`/meetings?userId=${encodeURIComponent(u.id)}&who=${encodeURIComponent(u.fullName)}`)} aria-label={`Meetings of ${u.fullName}`}>
            Meetings
          </a>
          {u.status === 'ACTIVE' && (
            <ConfirmButton
              small
              danger
              label="Deactivate"
              ariaLabel={`Deactivate ${u.fullName}`}
              title={`Deactivate ${u.fullName}?`}
              body={
                <>
                  <p>Their join links stop working, their meeting sessions are revoked, they leave any room and waiting room they are in, and user.deactivated is sent.</p>
                  <p class="muted">Your backend's upserts do not reactivate a deactivated user.</p>
                </>
              }
              confirmLabel="Deactivate user"
              onConfirm={async () => {
                const changed = await api.post<User>(`/public/users/${api.enc(u.id)}/deactivate`);
                set({ ...page, data: page.data.map((x) => (x.id === u.id ? { ...x, ...changed } : x)) });
                say(`${u.fullName} is deactivated.`);
              }}
            />
          )}
        </>
      ),
    },
  ];
  return (
    <>
      <PageHead title="Users" sub="Teachers and students your backend has provisioned, newest first." />
      <Filters active={active} clear={href('/users')}>
        <SearchFilter id="u-ext" name="q" type="search" label="Find by name, email or external id" value={f.q || f.externalId} onFind={(v) => setQuery({ q: v, externalId: null })} />
        <FilterSelect name="status" label="Status" options={['ACTIVE', 'DEACTIVATED']} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <FilterSelect name="role" label="Role" options={USER_ROLES} value={f.role} onChange={(v) => setQuery({ role: v })} />
      </Filters>
      {flash}
      <PagedList load={load} what="users" retry={reload} empty={active ? { title: 'No user matches.', body: 'The external id is matched exactly. Clear a filter to see more.' } : { title: 'No users yet.', body: 'Users appear once your backend provisions them (POST /public/users).' }}>
        {(page) => <DataTable label="Users" columns={columns(page)} rows={page.data} rowKey={(u) => u.id} />}
      </PagedList>
    </>
  );
}
