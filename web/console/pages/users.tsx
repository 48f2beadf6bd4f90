import { useState } from 'preact/hooks';
import { USER_ROLES } from '../../../src/core/domain.ts';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, ConfirmButton, Empty, Filters, FilterSelect, Loaded, PageHead, Pager, TableWrap, useFlash, useLoad } from '../ui/common.tsx';

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
  const f = { status: query.get('status') ?? '', role: query.get('role') ?? '', q: query.get('q') ?? '', externalId: query.get('externalId') ?? '', cursor: query.get('cursor') };
  const [load, reload, set] = useLoad(() => api.list<User>('/public/users', { ...f, limit: 25 }), JSON.stringify(f));
  const [ext, setExt] = useState(f.q || f.externalId);
  const [flash, say] = useFlash();
  const filtered = Boolean(f.status || f.role || f.q || f.externalId);
  return (
    <>
      <PageHead title="Users" sub="Teachers and students your backend has provisioned, newest first." />
      <Filters active={[f.status, f.role, f.q, f.externalId].filter(Boolean).length}>
        <form
          class="filter search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ q: ext.trim() || null, externalId: null });
          }}
        >
          <label for="u-ext">Find by name, email or external id</label>
          <span class="search-row">
            <input id="u-ext" name="q" type="search" value={ext} onInput={(e) => setExt((e.target as HTMLInputElement).value)} spellcheck={false} />
            <button class="btn small" type="submit">
              Find
            </button>
          </span>
        </form>
        <FilterSelect name="status" label="Status" options={['ACTIVE', 'DEACTIVATED']} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <FilterSelect name="role" label="Role" options={USER_ROLES} value={f.role} onChange={(v) => setQuery({ role: v })} />
        {filtered && (
          <a class="btn small clear" href={href('/users')}>
            Clear filters
          </a>
        )}
      </Filters>
      {flash}
      <Loaded load={load} what="users" retry={reload}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title={filtered ? 'No user matches.' : 'No users yet.'}>{filtered ? 'The external id is matched exactly. Clear a filter to see more.' : 'Users appear once your backend provisions them (POST /public/users).'}</Empty>
          ) : (
            <>
              <TableWrap label="Users">
                <table class="table">
                  <caption class="sr-only">Users</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Role</th>
                      <th scope="col">Status</th>
                      <th scope="col">Added</th>
                      <th scope="col">
                        <span class="sr-only">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((u) => (
                      <tr key={u.id}>
                        <td class="wrap">
                          <span class="strong">{u.fullName}</span>
                          <div class="muted small">
                            {u.externalId}
                            {u.email && ` · ${u.email}`}
                          </div>
                        </td>
                        <td>{u.role.toLowerCase()}</td>
                        <td>
                          <Badge value={u.status} />
                          {u.deactivatedAt && <div class="muted small">{when(u.deactivatedAt)}</div>}
                        </td>
                        <td class="nowrap">{when(u.createdAt)}</td>
                        <td class="actions-cell">
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
                        </td>
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
