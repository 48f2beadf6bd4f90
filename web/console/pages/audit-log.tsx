import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Empty, Filters, FilterSelect, Loaded, PageHead, Pager, TableWrap, useLoad } from '../ui/common.tsx';

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

export function AuditLog({ query }: { query: URLSearchParams }) {
  const f = { action: query.get('action') ?? '', actor: query.get('actor') ?? '', cursor: query.get('cursor') };
  const [load, reload] = useLoad(() => api.list<Entry>(api.org('/audit-log'), { ...f, limit: 50 }), JSON.stringify(f));
  if (load.state === 'error' && load.error.code === 'route_not_found') {
    return (
      <>
        <PageHead title="Audit log" />
        <Empty title="This server does not keep an audit log yet." />
      </>
    );
  }
  const filtered = Boolean(f.action || f.actor);
  return (
    <>
      <PageHead title="Audit log" sub="Who changed keys, webhooks, settings and admins, and who ended a room: newest first." />
      <Filters active={[f.action, f.actor].filter(Boolean).length}>
        <FilterSelect name="action" label="Action" options={FAMILIES} labels={FAMILY_LABELS} value={f.action} onChange={(v) => setQuery({ action: v })} />
        {f.actor && (
          <p class="filter">
            <span>Actor</span> <code>{f.actor}</code>
          </p>
        )}
        {filtered && (
          <a class="btn small clear" href={href('/audit-log')}>
            Clear filters
          </a>
        )}
      </Filters>
      <Loaded load={load} what="the audit log" retry={reload}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title={filtered ? 'Nothing matches these filters.' : 'Nothing recorded yet.'} />
          ) : (
            <>
              <TableWrap label="Audit log">
                <table class="table">
                  <caption class="sr-only">Audit log</caption>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Who</th>
                      <th scope="col">What</th>
                      <th scope="col">Details</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.data.map((e) => (
                      <tr key={e.id}>
                        <td class="nowrap">{when(e.at)}</td>
                        <td class="wrap">{e.actor.id ? <a href={href('/audit-log', { actor: e.actor.id })}>{actorOf(e.actor)}</a> : actorOf(e.actor)}</td>
                        <td>
                          <code>{e.action}</code>
                          <div class="muted small">
                            {e.target.type} {e.target.id}
                          </div>
                        </td>
                        <td class="small wrap">{detailText(e.details)}</td>
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
