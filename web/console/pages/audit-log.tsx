import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Empty, Filters, FilterSelect, PageHead } from '../ui/common.tsx';
import { activeCount, DataTable, listQuery, PagedList, useList, type Column } from '../ui/list.tsx';

interface Entry {
  id: string;
  at: string;
  actor: { type: 'admin' | 'operator' | 'api_key'; id: string | null; email: string | null };
  action: string;
  target: { type: string; id: string | null };
  details: Record<string, unknown>;
  requestId: string | null;
}

/** The families the audit log's `action` filter takes (GET /orgs/:orgId/audit-log). */
const FAMILIES = ['api_key.*', 'webhook_endpoint.*', 'organization.*', 'admin.*', 'meeting.*'];
const FAMILY_LABELS: Record<string, string> = { 'api_key.*': 'API keys', 'webhook_endpoint.*': 'Webhook endpoints', 'organization.*': 'Settings', 'admin.*': 'Admins', 'meeting.*': 'Rooms ended' };

const actorOf = (a: Entry['actor']) => (a.type === 'operator' ? 'the operator (CLI)' : a.type === 'api_key' ? `API key ${a.id}` : (a.email ?? a.id ?? 'an admin'));

function detailText(d: Record<string, unknown>): string {
  return Object.entries(d)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`)
    .join(' · ');
}

const COLUMNS: Column<Entry>[] = [
  { head: 'When', class: 'nowrap', cell: (e) => when(e.at) },
  { head: 'Who', class: 'wrap', cell: (e) => (e.actor.id ? <a href={href('/audit-log', { actor: e.actor.id })}>{actorOf(e.actor)}</a> : actorOf(e.actor)) },
  {
    head: 'What',
    cell: (e) => (
      <>
        <code>{e.action}</code>
        <div class="muted small">
          {e.target.type} {e.target.id}
        </div>
      </>
    ),
  },
  { head: 'Details', class: 'small wrap', cell: (e) => detailText(e.details) },
];

export function AuditLog({ query }: { query: URLSearchParams }) {
  const f = listQuery(query, ['action', 'actor']);
  const [load, reload] = useList<Entry>(api.org('/audit-log'), f, 50);
  if (load.state === 'error' && load.error.code === 'route_not_found') {
    return (
      <>
        <PageHead title="Audit log" />
        <Empty title="This server does not keep an audit log yet." />
      </>
    );
  }
  const active = activeCount([f.action, f.actor]);
  return (
    <>
      <PageHead title="Audit log" sub="Who changed keys, webhooks, settings and admins, and who ended a room: newest first." />
      <Filters active={active} clear={href('/audit-log')}>
        <FilterSelect name="action" label="Action" options={FAMILIES} labels={FAMILY_LABELS} value={f.action} onChange={(v) => setQuery({ action: v })} />
        {f.actor && (
          <p class="filter">
            <span>Actor</span> <code>{f.actor}</code>
          </p>
        )}
      </Filters>
      <PagedList load={load} what="the audit log" retry={reload} empty={{ title: active ? 'Nothing matches these filters.' : 'Nothing recorded yet.' }}>
        {(page) => <DataTable label="Audit log" columns={COLUMNS} rows={page.data} rowKey={(e) => e.id} />}
      </PagedList>
    </>
  );
}
